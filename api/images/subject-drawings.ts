// One SVG drawing per subject kind (subject-kinds.ts), in a 1000 x 1000 box, on nothing (transparent). The
// kind fixes the silhouette (a teapot has a spout and a handle, a car wheels, a tree a trunk under its crown);
// the palette and the hash bytes only colour it and vary small details (hair, ears, pattern, glasses), so every
// anchor of a kind reads as that kind.
import type { SubjectKind } from './subject-kinds.js';

export interface Palette {
  main: string;
  mainDark: string;
  second: string;
  accent: string;
  skin: string;
  hair: string;
}

type Drawing = (p: Palette, bytes: Buffer) => string;

/** pattern draws stripes, dots or checks clipped to the shape with the given id. */
function pattern(kind: number, clipId: string, colour: string, x: number, y: number, w: number, h: number): string {
  const marks: string[] = [];
  if (kind % 3 === 0) {
    for (let row = 0; row < 6; row++)
      marks.push(`<rect x="${x}" y="${y + (row * h) / 6}" width="${w}" height="${h / 14}" fill="${colour}"/>`);
  } else if (kind % 3 === 1) {
    for (let row = 0; row < 5; row++) {
      for (let col = 0; col < 5; col++) {
        marks.push(
          `<circle cx="${x + ((col + 0.5 + (row % 2) * 0.5) * w) / 5}" cy="${y + ((row + 0.5) * h) / 5}" r="${w / 28}" fill="${colour}"/>`,
        );
      }
    }
  } else {
    for (let col = 0; col < 8; col++)
      marks.push(
        `<rect x="${x + (col * w) / 8}" y="${y}" width="${w / 16}" height="${h}" fill="${colour}" opacity="0.7"/>`,
      );
  }
  return `<g clip-path="url(#${clipId})">${marks.join('')}</g>`;
}

/** A head and shoulders: a narrow head over wide shoulders. */
const person: Drawing = (p, bytes) => {
  const hairStyle = bytes[9]! % 3;
  const glasses = bytes[10]! % 3 === 0;
  const earrings = bytes[11]! % 4 === 0;
  const hairBack =
    hairStyle === 1 ? `<path d="M330 330 Q320 640 360 700 L640 700 Q680 640 670 330 Z" fill="${p.hair}"/>` : '';
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
};

/** A four-legged animal facing right: a long body on four legs, a head with ears, a tail. */
const animal: Drawing = (p, bytes) => {
  const pointedEars = bytes[9]! % 2 === 0;
  const ears = pointedEars
    ? `<path d="M728 310 L742 200 L800 285 Z" fill="${p.mainDark}"/><path d="M812 288 L862 196 L872 318 Z" fill="${p.mainDark}"/>`
    : `<ellipse cx="735" cy="300" rx="38" ry="55" fill="${p.mainDark}"/><ellipse cx="845" cy="300" rx="38" ry="55" fill="${p.mainDark}"/>`;
  const legs = [300, 390, 590, 680]
    .map(
      (x, index) =>
        `<rect x="${x}" y="600" width="62" height="250" rx="26" fill="${index % 2 === 0 ? p.mainDark : p.main}"/>` +
        `<ellipse cx="${x + 31}" cy="848" rx="40" ry="18" fill="${p.mainDark}"/>`,
    )
    .join('');
  return `
    <defs><clipPath id="coat"><ellipse cx="490" cy="560" rx="270" ry="140"/></clipPath></defs>
    <path d="M250 520 Q120 470 140 330" stroke="${p.mainDark}" stroke-width="44" fill="none" stroke-linecap="round"/>
    ${legs}
    <ellipse cx="490" cy="560" rx="270" ry="140" fill="${p.main}"/>
    ${pattern(bytes[12]!, 'coat', p.second, 220, 420, 540, 280)}
    <path d="M640 520 L720 400 L810 440 L735 610 Z" fill="${p.main}"/>
    ${ears}
    <circle cx="790" cy="385" r="105" fill="${p.main}"/>
    <ellipse cx="880" cy="415" rx="62" ry="46" fill="${p.second}"/>
    <circle cx="928" cy="402" r="15" fill="#1d1d24"/>
    <circle cx="800" cy="360" r="15" fill="#1d1d24"/><circle cx="805" cy="355" r="5" fill="#ffffff"/>`;
};

/** A bird standing, facing right: a round body and head, a beak, a wing, a tail and two thin legs. */
const bird: Drawing = (p, bytes) => `
    <defs><clipPath id="breast"><ellipse cx="540" cy="620" rx="140" ry="110"/></clipPath></defs>
    <path d="M300 540 L110 650 L160 500 Z" fill="${p.mainDark}"/>
    <path d="M440 700 L425 890 M540 700 L555 890" stroke="${p.accent}" stroke-width="18" stroke-linecap="round"/>
    <path d="M380 890 L470 890 M510 890 L600 890" stroke="${p.accent}" stroke-width="14" stroke-linecap="round"/>
    <ellipse cx="470" cy="560" rx="230" ry="170" fill="${p.main}"/>
    <ellipse cx="540" cy="620" rx="140" ry="110" fill="${p.second}"/>
    ${pattern(bytes[12]!, 'breast', p.main, 400, 510, 280, 220)}
    <ellipse cx="420" cy="540" rx="160" ry="85" fill="${p.mainDark}" transform="rotate(-12 420 540)"/>
    <circle cx="660" cy="360" r="115" fill="${p.main}"/>
    <path d="M755 330 L880 372 L755 410 Z" fill="${p.accent}"/>
    <circle cx="690" cy="335" r="17" fill="#1d1d24"/><circle cx="695" cy="330" r="6" fill="#ffffff"/>`;

/** An upright character (robot, monster, mascot): a round head on a round body, with ears or an antenna. */
const creature: Drawing = (p, bytes) => {
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
};

/** A teapot: a wide round body, a lid with a knob, a spout rising to the right and a handle loop on the left. */
const teapot: Drawing = (p, bytes) => `
    <defs><clipPath id="pot"><ellipse cx="500" cy="640" rx="230" ry="190"/></clipPath></defs>
    <path d="M300 530 Q130 520 150 680 Q170 800 320 765" stroke="${p.mainDark}" stroke-width="46" fill="none" stroke-linecap="round"/>
    <path d="M690 640 Q800 620 830 470 L885 448 L872 492 Q850 690 700 735 Z" fill="${p.main}"/>
    <ellipse cx="500" cy="640" rx="230" ry="190" fill="${p.main}"/>
    <rect x="270" y="600" width="460" height="90" fill="${p.second}" clip-path="url(#pot)"/>
    ${pattern(bytes[12]!, 'pot', p.accent, 270, 600, 460, 90)}
    <rect x="370" y="800" width="260" height="52" rx="16" fill="${p.mainDark}"/>
    <path d="M355 475 Q500 360 645 475 Z" fill="${p.mainDark}"/>
    <circle cx="500" cy="388" r="34" fill="${p.accent}"/>
    <path d="M330 600 Q340 720 400 780" stroke="#ffffff55" stroke-width="22" fill="none" stroke-linecap="round"/>`;

/** A mug: a tapered cylinder with a handle loop on the right. */
const cup: Drawing = (p, bytes) => `
    <defs><clipPath id="label"><rect x="280" y="420" width="360" height="230"/></clipPath></defs>
    <path d="M640 400 Q800 400 800 560 Q800 720 640 720" stroke="${p.mainDark}" stroke-width="50" fill="none"/>
    <path d="M260 300 L660 300 L640 880 Q620 920 580 920 L340 920 Q300 920 280 880 Z" fill="${p.main}"/>
    <ellipse cx="460" cy="300" rx="200" ry="40" fill="${p.mainDark}"/>
    <rect x="280" y="420" width="360" height="230" fill="${p.second}"/>
    ${pattern(bytes[12]!, 'label', p.accent, 280, 420, 360, 230)}
    <path d="M300 330 L320 860" stroke="#ffffff55" stroke-width="22" stroke-linecap="round"/>`;

const vaseOutline =
  'M440 150 L560 150 L560 220 Q700 280 690 490 Q680 700 600 880 L600 930 L400 930 L400 880 ' +
  'Q320 700 310 490 Q300 280 440 220 Z';

/** A vase or bottle: tall and narrow, a neck over a round shoulder. */
const vessel: Drawing = (p, bytes) => `
    <defs><clipPath id="band"><rect x="300" y="520" width="400" height="170"/></clipPath>
      <clipPath id="vase"><path d="${vaseOutline}"/></clipPath></defs>
    <path d="${vaseOutline}" fill="${p.main}"/>
    <ellipse cx="500" cy="150" rx="75" ry="22" fill="${p.mainDark}"/>
    <g clip-path="url(#band)"><path d="${vaseOutline}" fill="${p.second}"/></g>
    <g clip-path="url(#band)">${pattern(bytes[12]!, 'vase', p.accent, 300, 520, 400, 170)}</g>
    <path d="M360 360 Q340 560 400 800" stroke="#ffffff55" stroke-width="22" fill="none" stroke-linecap="round"/>`;

/** A tree: a narrow trunk under a wide round crown. */
const tree: Drawing = (p, bytes) => {
  const fruit = bytes[9]! % 2 === 0;
  const crown = [
    [500, 330, 230],
    [340, 430, 150],
    [660, 430, 150],
    [410, 230, 140],
    [590, 230, 140],
    [500, 520, 160],
  ]
    .map(([cx, cy, r]) => `<circle cx="${cx}" cy="${cy}" r="${r}" fill="${p.main}"/>`)
    .join('');
  const dots = fruit
    ? [
        [400, 300],
        [600, 360],
        [480, 460],
        [330, 460],
        [660, 500],
        [540, 200],
      ]
        .map(([cx, cy]) => `<circle cx="${cx}" cy="${cy}" r="22" fill="${p.accent}"/>`)
        .join('')
    : '';
  return `
    <path d="M450 950 L470 600 L530 600 L550 950 Z" fill="#6b4a2b"/>
    <path d="M470 700 L400 620 M530 680 L600 610" stroke="#6b4a2b" stroke-width="24" stroke-linecap="round"/>
    ${crown}
    <circle cx="430" cy="300" r="90" fill="${p.mainDark}" opacity="0.35"/>
    ${dots}`;
};

/** A house: walls under a pitched roof, a chimney, a door and two windows. */
const house: Drawing = (p, bytes) => `
    <defs><clipPath id="walls"><rect x="220" y="470" width="560" height="470"/></clipPath></defs>
    <rect x="640" y="210" width="70" height="200" fill="${p.mainDark}"/>
    <rect x="220" y="470" width="560" height="470" fill="${p.main}"/>
    ${pattern(bytes[12]!, 'walls', p.mainDark, 220, 470, 560, 470)}
    <path d="M150 490 L500 170 L850 490 Z" fill="${p.second}"/>
    <rect x="445" y="700" width="110" height="240" fill="${p.accent}"/>
    <rect x="285" y="570" width="115" height="100" fill="#dfefff" stroke="${p.mainDark}" stroke-width="10"/>
    <rect x="600" y="570" width="115" height="100" fill="#dfefff" stroke="${p.mainDark}" stroke-width="10"/>`;

/** A car facing right: a long low body, a cabin with windows, two wheels. */
const car: Drawing = (p, bytes) => `
    <defs><clipPath id="side"><rect x="90" y="600" width="830" height="60"/></clipPath></defs>
    <path d="M90 730 L90 610 Q100 565 180 555 L300 545 L380 425 Q400 400 440 400 L650 400 Q690 400 720 430 L800 545 L880 560 Q920 570 920 620 L920 730 Z" fill="${p.main}"/>
    ${pattern(bytes[12]!, 'side', p.second, 90, 600, 830, 60)}
    <path d="M405 430 L545 430 L545 532 L330 532 Z" fill="#cfe3f0"/>
    <path d="M565 430 L690 430 Q702 430 712 445 L775 532 L565 532 Z" fill="#cfe3f0"/>
    <rect x="890" y="590" width="30" height="40" fill="${p.accent}"/>
    <circle cx="260" cy="735" r="92" fill="#22222a"/><circle cx="260" cy="735" r="40" fill="#b8bcc4"/>
    <circle cx="740" cy="735" r="92" fill="#22222a"/><circle cx="740" cy="735" r="40" fill="#b8bcc4"/>`;

/** A box with a lid and a ribbon: products without a shape of their own. */
const box: Drawing = (p, bytes) => `
    <defs><clipPath id="label"><rect x="270" y="470" width="460" height="420"/></clipPath></defs>
    <path d="M230 360 L770 360 L740 940 L260 940 Z" fill="${p.main}"/>
    <rect x="270" y="470" width="460" height="420" fill="${p.second}"/>
    ${pattern(bytes[12]!, 'label', p.accent, 270, 470, 460, 420)}
    <rect x="200" y="280" width="600" height="110" rx="18" fill="${p.mainDark}"/>
    <path d="M430 280 Q500 150 570 280" stroke="${p.accent}" stroke-width="26" fill="none"/>`;

/** Anything else: a round object on a stand, so an unknown subject is drawn as a thing, not as a person. */
const object: Drawing = (p, bytes) => `
    <defs><clipPath id="orb"><circle cx="500" cy="430" r="260"/></clipPath></defs>
    <path d="M390 660 L610 660 L650 880 L350 880 Z" fill="${p.mainDark}"/>
    <rect x="290" y="870" width="420" height="60" rx="14" fill="${p.second}"/>
    <circle cx="500" cy="430" r="260" fill="${p.main}"/>
    ${pattern(bytes[12]!, 'orb', p.second, 240, 380, 520, 100)}
    <circle cx="410" cy="340" r="60" fill="#ffffff55"/>`;

export const subjectDrawings: Readonly<Record<SubjectKind, Drawing>> = {
  person,
  animal,
  bird,
  creature,
  teapot,
  cup,
  vessel,
  tree,
  house,
  car,
  box,
  object,
};

/** kindHue is the hue a kind takes when its description names no colour (a green tree), or null for the hash's. */
export function kindHue(kind: SubjectKind): { hue: number; saturation: number; lightness: number } | null {
  return kind === 'tree' ? { hue: 120, saturation: 45, lightness: 38 } : null;
}
