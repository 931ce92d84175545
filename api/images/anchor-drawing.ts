// anchorSvg draws a subject from its description as an SVG on a transparent background: the kind of thing the
// description names (subject-kinds.ts: a person, an animal, a teapot, a tree, a car…; subject-drawings.ts),
// its colours from the colour words of the description (else its kind's or its hash's), its details (hair,
// ears, pattern, accessories) from the hash. Same description and seed, same drawing. The
// transparent background lets each shot put the subject on its own background. No text: font availability
// differs between machines, and the drawing must not.
import { createHash } from 'node:crypto';
import { subjectKindOf } from './subject-kinds.js';
import type { SubjectKind } from './subject-kinds.js';
import type { Palette } from './subject-drawings.js';
import { kindHue, subjectDrawings } from './subject-drawings.js';

const colourWords: ReadonlyArray<readonly [string, number, number, number]> = [
  // word, hue, saturation, lightness
  ['teal', 178, 60, 40],
  ['turquoise', 174, 65, 48],
  ['navy', 225, 60, 28],
  ['blue', 215, 70, 50],
  ['green', 130, 50, 40],
  ['olive', 75, 45, 35],
  ['yellow', 50, 90, 55],
  ['gold', 44, 75, 50],
  ['orange', 26, 90, 55],
  ['red', 2, 75, 48],
  ['crimson', 348, 75, 42],
  ['pink', 335, 70, 70],
  ['purple', 275, 50, 45],
  ['violet', 265, 55, 55],
  ['brown', 25, 45, 32],
  ['black', 220, 8, 14],
  ['white', 40, 10, 94],
  ['silver', 210, 8, 72],
  ['grey', 210, 6, 55],
  ['gray', 210, 6, 55],
];

const hsl = (hue: number, saturation: number, lightness: number) =>
  `hsl(${Math.round(((hue % 360) + 360) % 360)},${Math.round(saturation)}%,${Math.round(lightness)}%)`;

function wordIn(text: string, word: string): boolean {
  return new RegExp(`\\b${word}s?\\b`).test(text);
}

function palette(text: string, bytes: Buffer, kind: SubjectKind): Palette {
  const named = colourWords.filter(([word]) => wordIn(text, word));
  const own = kindHue(kind);
  const [, hue, saturation, lightness] =
    named[0] ??
    (own
      ? ['', own.hue, own.saturation, own.lightness]
      : ['', (bytes[0]! * 360) / 256, 55 + (bytes[1]! % 25), 42 + (bytes[2]! % 16)]);
  const secondHue = named[1]?.[1] ?? hue + 150 + (bytes[3]! % 60);
  const skins = ['#f1c9a5', '#e0ac85', '#c68a62', '#9c6644', '#6f4630', '#f6dcc4'];
  const hairs = ['#2b1d14', '#4a2f1d', '#8a5a2b', '#d9b26a', '#b5452b', '#1b1b1f', '#9a9aa0'];
  return {
    main: hsl(hue, saturation, lightness),
    mainDark: hsl(hue, saturation, lightness * 0.62),
    second: hsl(secondHue, 45 + (bytes[4]! % 30), 50 + (bytes[5]! % 20)),
    accent: hsl(hue + 40 + (bytes[6]! % 40), 85, 58),
    skin: skins[bytes[7]! % skins.length]!,
    hair: hairs[bytes[8]! % hairs.length]!,
  };
}

/** anchorSvg returns the SVG document of the anchor for a subject, seed and image size. */
export function anchorSvg(subject: string, seed: number, widthPx: number, heightPx: number): string {
  const text = subject.toLowerCase();
  const bytes = createHash('sha256').update(`${seed}\n${text}`).digest();
  const kind = subjectKindOf(text);
  const body = subjectDrawings[kind](palette(text, bytes, kind), bytes);
  // Fit the 1000 x 1000 drawing into the image, with a margin, whatever the aspect ratio.
  const side = 1000 / 0.9;
  const viewWidth = Math.max(side, (side * widthPx) / heightPx);
  const viewHeight = Math.max(side, (side * heightPx) / widthPx);
  const viewBox = `${(1000 - viewWidth) / 2} ${(1000 - viewHeight) / 2} ${viewWidth} ${viewHeight}`;
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${widthPx}" height="${heightPx}" viewBox="${viewBox}">${body}</svg>`;
}
