// anchorSvg draws a subject from its description as an SVG on a transparent background: a person, a
// creature or a product, its colours from the colour words of the description (else from its hash), its
// details (hair, ears, pattern, accessories) from the hash. Same description and seed, same drawing. The
// transparent background lets each shot put the subject on its own background. No text: font availability
// differs between machines, and the drawing must not.
import { createHash } from 'node:crypto';

type Archetype = 'person' | 'creature' | 'product';

const creatureWords = ['robot', 'cat', 'dog', 'fox', 'owl', 'bear', 'creature', 'monster', 'dragon', 'rabbit',
  'bunny', 'mascot', 'alien', 'bird', 'animal', 'character'];
const productWords = ['mug', 'cup', 'bottle', 'can', 'jar', 'box', 'bag', 'shoe', 'sneaker', 'watch', 'phone', 'lamp',
  'product', 'perfume', 'candle', 'vase', 'speaker', 'headphone', 'package', 'tin', 'flask', 'kettle'];
const colourWords: ReadonlyArray<readonly [string, number, number, number]> = [
  // word, hue, saturation, lightness
  ['teal', 178, 60, 40], ['turquoise', 174, 65, 48], ['navy', 225, 60, 28], ['blue', 215, 70, 50],
  ['green', 130, 50, 40], ['olive', 75, 45, 35], ['yellow', 50, 90, 55], ['gold', 44, 75, 50],
  ['orange', 26, 90, 55], ['red', 2, 75, 48], ['crimson', 348, 75, 42], ['pink', 335, 70, 70],
  ['purple', 275, 50, 45], ['violet', 265, 55, 55], ['brown', 25, 45, 32], ['black', 220, 8, 14],
  ['white', 40, 10, 94], ['silver', 210, 8, 72], ['grey', 210, 6, 55], ['gray', 210, 6, 55],
];

interface Palette {
  main: string;
  mainDark: string;
  second: string;
  accent: string;
  skin: string;
  hair: string;
}

const hsl = (hue: number, saturation: number, lightness: number) =>
  `hsl(${Math.round(((hue % 360) + 360) % 360)},${Math.round(saturation)}%,${Math.round(lightness)}%)`;

function wordIn(text: string, word: string): boolean {
  return new RegExp(`\\b${word}s?\\b`).test(text);
}

function palette(text: string, bytes: Buffer): Palette {
  const named = colourWords.filter(([word]) => wordIn(text, word));
  const [, hue, saturation, lightness] = named[0] ?? ['', bytes[0]! * 360 / 256, 55 + bytes[1]! % 25, 42 + bytes[2]! % 16];
  const secondHue = named[1]?.[1] ?? hue + 150 + bytes[3]! % 60;
  const skins = ['#f1c9a5', '#e0ac85', '#c68a62', '#9c6644', '#6f4630', '#f6dcc4'];
  const hairs = ['#2b1d14', '#4a2f1d', '#8a5a2b', '#d9b26a', '#b5452b', '#1b1b1f', '#9a9aa0'];
  return {
    main: hsl(hue, saturation, lightness), mainDark: hsl(hue, saturation, lightness * 0.62),
    second: hsl(secondHue, 45 + bytes[4]! % 30, 50 + bytes[5]! % 20), accent: hsl(hue + 40 + bytes[6]! % 40, 85, 58),
    skin: skins[bytes[7]! % skins.length]!, hair: hairs[bytes[8]! % hairs.length]!,
  };
}

function archetypeOf(text: string): Archetype {
  if (productWords.some((word) => wordIn(text, word))) return 'product';
  if (creatureWords.some((word) => wordIn(text, word))) return 'creature';
  return 'person';
}

/** pattern draws stripes, dots or checks clipped to the shape with the given id. */
function pattern(kind: number, clipId: string, colour: string, x: number, y: number, w: number, h: number): string {
  const marks: string[] = [];
  if (kind % 3 === 0) {
    for (let row = 0; row < 6; row++) marks.push(`<rect x="${x}" y="${y + row * h / 6}" width="${w}" height="${h / 14}" fill="${colour}"/>`);
  } else if (kind % 3 === 1) {
    for (let row = 0; row < 5; row++) {
      for (let col = 0; col < 5; col++) {
        marks.push(`<circle cx="${x + (col + 0.5 + (row % 2) * 0.5) * w / 5}" cy="${y + (row + 0.5) * h / 5}" r="${w / 28}" fill="${colour}"/>`);
      }
    }
  } else {
    for (let col = 0; col < 8; col++) marks.push(`<rect x="${x + col * w / 8}" y="${y}" width="${w / 16}" height="${h}" fill="${colour}" opacity="0.7"/>`);
  }
  return `<g clip-path="url(#${clipId})">${marks.join('')}</g>`;
}

// The drawings use a 1000 x 1000 box; the SVG's viewBox fits it to the image's aspect ratio.
function person(p: Palette, bytes: Buffer): string {
  const hairStyle = bytes[9]! % 3;
  const glasses = bytes[10]! % 3 === 0;
  const earrings = bytes[11]! % 4 === 0;
  const hairBack = hairStyle === 1
    ? `<path d="M330 330 Q320 640 360 700 L640 700 Q680 640 670 330 Z" fill="${p.hair}"/>` : '';
  const hairTop = [
    `<path d="M345 330 Q350 190 500 185 Q650 190 655 330 Q600 250 500 255 Q400 250 345 330 Z" fill="${p.hair}"/>`,
    `<path d="M335 360 Q330 180 500 175 Q670 180 665 360 Q610 240 500 250 Q390 240 335 360 Z" fill="${p.hair}"/>`,
    `<circle cx="500" cy="170" r="62" fill="${p.hair}"/><path d="M345 320 Q360 200 500 200 Q640 200 655 320 Q600 255 500 258 Q400 255 345 320 Z" fill="${p.hair}"/>`,
  ][hairStyle];
  return `
    <defs><clipPath id="torso"><path d="M230 1000 L250 760 Q270 640 400 615 L600 615 Q730 640 750 760 L770 1000 Z"/></clipPath></defs>
    ${hairBack}
    <path d="M230 1000 L250 760 Q270 640 400 615 L600 615 Q730 640 750 760 L770 1000 Z" fill="${p.main}"/>
    ${pattern(bytes[12]!, 'torso', p.second, 230, 615, 540, 385)}
    <path d="M440 560 L560 560 L565 640 Q500 690 435 640 Z" fill="${p.skin}"/>
    <path d="M400 615 Q500 720 600 615 L580 612 Q500 690 420 612 Z" fill="${p.mainDark}"/>
    <ellipse cx="500" cy="400" rx="150" ry="185" fill="${p.skin}"/>
    <ellipse cx="350" cy="410" rx="22" ry="40" fill="${p.skin}"/><ellipse cx="650" cy="410" rx="22" ry="40" fill="${p.skin}"/>
    ${earrings ? `<circle cx="350" cy="462" r="12" fill="${p.accent}"/><circle cx="650" cy="462" r="12" fill="${p.accent}"/>` : ''}
    ${hairTop}
    <ellipse cx="445" cy="400" rx="20" ry="14" fill="#ffffff"/><ellipse cx="555" cy="400" rx="20" ry="14" fill="#ffffff"/>
    <circle cx="447" cy="401" r="10" fill="#2a2a33"/><circle cx="557" cy="401" r="10" fill="#2a2a33"/>
    <path d="M410 365 Q445 348 478 362" stroke="${p.hair}" stroke-width="9" fill="none" stroke-linecap="round"/>
    <path d="M522 362 Q555 348 590 365" stroke="${p.hair}" stroke-width="9" fill="none" stroke-linecap="round"/>
    <path d="M500 420 Q490 465 505 472" stroke="#00000033" stroke-width="7" fill="none" stroke-linecap="round"/>
    <path d="M455 510 Q500 540 545 510" stroke="#9b3b3b" stroke-width="10" fill="none" stroke-linecap="round"/>
    ${glasses ? `<g stroke="${p.mainDark}" stroke-width="9" fill="none"><circle cx="445" cy="402" r="40"/><circle cx="555" cy="402" r="40"/><path d="M485 400 L515 400"/></g>` : ''}`;
}

function creature(p: Palette, bytes: Buffer): string {
  const earStyle = bytes[9]! % 3;
  const ears = [
    `<path d="M330 330 L360 130 L460 270 Z" fill="${p.main}"/><path d="M670 330 L640 130 L540 270 Z" fill="${p.main}"/>`,
    `<ellipse cx="380" cy="180" rx="45" ry="130" fill="${p.main}"/><ellipse cx="620" cy="180" rx="45" ry="130" fill="${p.main}"/>`,
    `<path d="M500 120 L500 230" stroke="${p.mainDark}" stroke-width="14"/><circle cx="500" cy="110" r="30" fill="${p.accent}"/>`,
  ][earStyle];
  return `
    <defs><clipPath id="belly"><ellipse cx="500" cy="760" rx="150" ry="170"/></clipPath></defs>
    <path d="M690 800 Q880 760 850 560" stroke="${p.mainDark}" stroke-width="46" fill="none" stroke-linecap="round"/>
    ${ears}
    <ellipse cx="500" cy="740" rx="240" ry="250" fill="${p.main}"/>
    <ellipse cx="500" cy="760" rx="150" ry="170" fill="${p.second}"/>
    ${pattern(bytes[12]!, 'belly', p.main, 350, 590, 300, 340)}
    <ellipse cx="380" cy="975" rx="80" ry="30" fill="${p.mainDark}"/><ellipse cx="620" cy="975" rx="80" ry="30" fill="${p.mainDark}"/>
    <circle cx="500" cy="400" r="200" fill="${p.main}"/>
    <circle cx="425" cy="390" r="52" fill="#ffffff"/><circle cx="575" cy="390" r="52" fill="#ffffff"/>
    <circle cx="435" cy="398" r="26" fill="#1d1d24"/><circle cx="565" cy="398" r="26" fill="#1d1d24"/>
    <circle cx="443" cy="388" r="8" fill="#ffffff"/><circle cx="573" cy="388" r="8" fill="#ffffff"/>
    <path d="M480 470 L520 470 L500 495 Z" fill="${p.mainDark}"/>
    <path d="M450 515 Q500 550 550 515" stroke="${p.mainDark}" stroke-width="10" fill="none" stroke-linecap="round"/>
    <ellipse cx="360" cy="470" rx="30" ry="18" fill="${p.accent}" opacity="0.55"/><ellipse cx="640" cy="470" rx="30" ry="18" fill="${p.accent}" opacity="0.55"/>`;
}

function product(p: Palette, bytes: Buffer): string {
  const shape = bytes[9]! % 3;
  if (shape === 0) {
    // A mug.
    return `
      <defs><clipPath id="label"><rect x="280" y="420" width="360" height="230"/></clipPath></defs>
      <path d="M640 400 Q800 400 800 560 Q800 720 640 720" stroke="${p.mainDark}" stroke-width="50" fill="none"/>
      <path d="M260 300 L660 300 L640 880 Q620 920 580 920 L340 920 Q300 920 280 880 Z" fill="${p.main}"/>
      <ellipse cx="460" cy="300" rx="200" ry="40" fill="${p.mainDark}"/>
      <rect x="280" y="420" width="360" height="230" fill="${p.second}"/>
      ${pattern(bytes[12]!, 'label', p.accent, 280, 420, 360, 230)}
      <path d="M300 330 L320 860" stroke="#ffffff55" stroke-width="22" stroke-linecap="round"/>`;
  }
  if (shape === 1) {
    // A bottle.
    return `
      <defs><clipPath id="label"><rect x="330" y="520" width="340" height="260"/></clipPath></defs>
      <rect x="445" y="80" width="110" height="110" rx="14" fill="${p.accent}"/>
      <path d="M460 190 L540 190 L545 290 Q680 340 680 470 L680 900 Q680 950 630 950 L370 950 Q320 950 320 900 L320 470 Q320 340 455 290 Z" fill="${p.main}"/>
      <rect x="330" y="520" width="340" height="260" fill="${p.second}"/>
      ${pattern(bytes[12]!, 'label', p.mainDark, 330, 520, 340, 260)}
      <path d="M355 420 L355 900" stroke="#ffffff55" stroke-width="24" stroke-linecap="round"/>`;
  }
  // A box with a lid.
  return `
    <defs><clipPath id="label"><rect x="270" y="470" width="460" height="420"/></clipPath></defs>
    <path d="M230 360 L770 360 L740 940 L260 940 Z" fill="${p.main}"/>
    <rect x="270" y="470" width="460" height="420" fill="${p.second}"/>
    ${pattern(bytes[12]!, 'label', p.accent, 270, 470, 460, 420)}
    <rect x="200" y="280" width="600" height="110" rx="18" fill="${p.mainDark}"/>
    <path d="M430 280 Q500 150 570 280" stroke="${p.accent}" stroke-width="26" fill="none"/>`;
}

/** anchorSvg returns the SVG document of the anchor for a subject, seed and image size. */
export function anchorSvg(subject: string, seed: number, widthPx: number, heightPx: number): string {
  const text = subject.toLowerCase();
  const bytes = createHash('sha256').update(`${seed}\n${text}`).digest();
  const colours = palette(text, bytes);
  const body = { person, creature, product }[archetypeOf(text)](colours, bytes);
  // Fit the 1000 x 1000 drawing into the image, with a margin, whatever the aspect ratio.
  const side = 1000 / 0.9;
  const viewWidth = Math.max(side, side * widthPx / heightPx);
  const viewHeight = Math.max(side, side * heightPx / widthPx);
  const viewBox = `${(1000 - viewWidth) / 2} ${(1000 - viewHeight) / 2} ${viewWidth} ${viewHeight}`;
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${widthPx}" height="${heightPx}" viewBox="${viewBox}">${body}</svg>`;
}
