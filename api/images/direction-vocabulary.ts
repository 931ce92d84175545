// What the built-in generator understands in a shot direction. Each field is matched by keyword (the first
// entry whose keyword occurs in the text, case-insensitive, wins); text with no known keyword takes the
// field's default. An HTTP image service reads the same fields as free text instead.
import type { ShotDirection } from '../albums/templates.js';

/** Framing: how much of the subject's bounding box the frame holds, and where its centre sits (fractions). */
export interface Framing {
  /** heightOfSubject is the frame height as a fraction of the subject's height. */
  heightOfSubject: number;
  /** centreFromTop is the frame centre, as a fraction of the subject's height from its top. */
  centreFromTop: number;
}

export interface Angle {
  /** scaleX and scaleY squeeze or stretch the subject (a turned or foreshortened view). */
  scaleX: number;
  scaleY: number;
  /** shearX slants the subject (three-quarter views); rotateDeg tilts the frame (dutch angle). */
  shearX: number;
  rotateDeg: number;
  /** mirror flips left and right; fromBehind also darkens the subject (we see its back). */
  mirror: boolean;
  fromBehind: boolean;
}

export interface Lighting {
  brightness: number;
  contrast: number;
  saturation: number;
  /** tint multiplies red, green and blue. */
  tint: [number, number, number];
  /** keySide is where the key light comes from (-1 left, 1 right, 0 even); keyStrength how much it shades. */
  keySide: number;
  keyStrength: number;
  /** rim draws a bright outline behind the subject (back light). */
  rim: boolean;
}

export type Arrangement = 'single' | 'pair' | 'trio' | 'reflection' | 'tilted' | 'leap';

export interface Background {
  /** top and bottom colours of a vertical gradient (RGB 0-255). */
  top: [number, number, number];
  bottom: [number, number, number];
  /** horizonAt, when set, draws a ground band from that fraction of the height (outdoor scenes). */
  horizonAt: number | null;
  ground: [number, number, number];
}

type Table<T> = ReadonlyArray<readonly [keyword: string, value: T]>;

const framings: Table<Framing> = [
  ['extreme close', { heightOfSubject: 0.3, centreFromTop: 0.2 }],
  ['detail', { heightOfSubject: 0.3, centreFromTop: 0.45 }],
  ['close', { heightOfSubject: 0.5, centreFromTop: 0.27 }],
  ['head', { heightOfSubject: 0.5, centreFromTop: 0.27 }],
  ['medium', { heightOfSubject: 0.75, centreFromTop: 0.38 }],
  ['half', { heightOfSubject: 0.75, centreFromTop: 0.38 }],
  ['full', { heightOfSubject: 1.18, centreFromTop: 0.5 }],
  ['wide', { heightOfSubject: 1.9, centreFromTop: 0.55 }],
  ['establishing', { heightOfSubject: 2.4, centreFromTop: 0.58 }],
];
const framingDefault = framings[4]![1];

const straight: Angle = { scaleX: 1, scaleY: 1, shearX: 0, rotateDeg: 0, mirror: false, fromBehind: false };
const angles: Table<Angle> = [
  ['three-quarter left', { ...straight, scaleX: 0.84, shearX: -0.1 }],
  ['three-quarter right', { ...straight, scaleX: 0.84, shearX: 0.1, mirror: true }],
  ['three-quarter', { ...straight, scaleX: 0.84, shearX: 0.1 }],
  ['profile left', { ...straight, scaleX: 0.6, mirror: true }],
  ['profile right', { ...straight, scaleX: 0.6 }],
  ['profile', { ...straight, scaleX: 0.6 }],
  ['side', { ...straight, scaleX: 0.6 }],
  ['back', { ...straight, mirror: true, fromBehind: true }],
  ['overhead', { ...straight, scaleY: 0.72, scaleX: 1.04 }],
  ['top', { ...straight, scaleY: 0.72, scaleX: 1.04 }],
  ['high', { ...straight, scaleY: 0.88 }],
  ['low', { ...straight, scaleY: 1.12, scaleX: 0.96 }],
  ['dutch', { ...straight, rotateDeg: 12 }],
  ['front', straight],
];

const even: Lighting = {
  brightness: 1,
  contrast: 1,
  saturation: 1,
  tint: [1, 1, 1],
  keySide: 0,
  keyStrength: 0,
  rim: false,
};
const lightings: Table<Lighting> = [
  ['high-key', { ...even, brightness: 1.22, contrast: 0.85, saturation: 0.85 }],
  ['high key', { ...even, brightness: 1.22, contrast: 0.85, saturation: 0.85 }],
  ['low-key', { ...even, brightness: 0.7, contrast: 1.35, keySide: -1, keyStrength: 0.55 }],
  ['low key', { ...even, brightness: 0.7, contrast: 1.35, keySide: -1, keyStrength: 0.55 }],
  ['rembrandt', { ...even, keySide: -1, keyStrength: 0.5, contrast: 1.1 }],
  ['dramatic', { ...even, brightness: 0.85, contrast: 1.4, keySide: 1, keyStrength: 0.45 }],
  ['rim', { ...even, brightness: 0.6, contrast: 1.1, rim: true }],
  ['back', { ...even, brightness: 0.6, contrast: 1.1, rim: true }],
  ['golden', { ...even, tint: [1.12, 0.98, 0.72], brightness: 1.05, keySide: 1, keyStrength: 0.3 }],
  ['warm', { ...even, tint: [1.1, 1, 0.82] }],
  ['cool', { ...even, tint: [0.85, 0.97, 1.15] }],
  ['soft', { ...even, brightness: 1.06, contrast: 0.9, saturation: 0.92 }],
  ['flat', { ...even, contrast: 0.95, saturation: 1.08 }],
  ['studio', even],
];

const arrangements: Table<Arrangement> = [
  ['reflection', 'reflection'],
  ['glossy', 'reflection'],
  ['pair', 'pair'],
  ['two', 'pair'],
  ['trio', 'trio'],
  ['three', 'trio'],
  ['tilt', 'tilted'],
  ['leap', 'leap'],
  ['jump', 'leap'],
  ['dynamic', 'leap'],
];

const gradient = (top: Background['top'], bottom: Background['bottom']): Background => ({
  top,
  bottom,
  horizonAt: null,
  ground: bottom,
});
const backgrounds: Table<Background> = [
  ['outdoor', { top: [120, 178, 235], bottom: [200, 225, 245], horizonAt: 0.68, ground: [104, 150, 84] }],
  ['warm gradient', gradient([250, 214, 165], [196, 110, 74])],
  ['cool gradient', gradient([196, 226, 250], [70, 110, 170])],
  ['dark gradient', gradient([70, 74, 86], [18, 18, 24])],
  ['pastel', gradient([250, 226, 236], [214, 232, 250])],
  ['black', gradient([12, 12, 12], [0, 0, 0])],
  ['dark', gradient([52, 54, 60], [30, 31, 36])],
  ['white', gradient([255, 255, 255], [240, 240, 240])],
  ['grey', gradient([196, 198, 202], [150, 152, 158])],
  ['gray', gradient([196, 198, 202], [150, 152, 158])],
];
const backgroundDefault = backgrounds[8]![1];

function pick<T>(table: Table<T>, text: string, fallback: T): T {
  const lower = text.toLowerCase();
  return table.find(([keyword]) => lower.includes(keyword))?.[1] ?? fallback;
}

export interface ShotRecipe {
  framing: Framing;
  angle: Angle;
  lighting: Lighting;
  arrangement: Arrangement;
  background: Background;
}

/** shotRecipe reads a direction into the built-in generator's parameters. */
export function shotRecipe(direction: ShotDirection): ShotRecipe {
  return {
    framing: pick(framings, direction.framing, framingDefault),
    angle: pick(angles, direction.angle, straight),
    lighting: pick(lightings, direction.lighting, even),
    arrangement: pick(arrangements, direction.pose, 'single'),
    background: pick(backgrounds, direction.background, backgroundDefault),
  };
}
