// What the built-in generator understands in a subject description: which kind of thing to draw. Each kind has
// its words; the kind whose word comes first in the description wins ("a teapot shaped like a cat" is a
// teapot, "a cat beside a teapot" a cat), so the head noun of an ordinary English phrase decides. A description
// with none of the words is drawn as a plain object on a stand (`object`), never as a person.

export const subjectKinds = [
  'person',
  'animal',
  'bird',
  'creature',
  'teapot',
  'cup',
  'vessel',
  'tree',
  'house',
  'car',
  'box',
  'object',
] as const;
export type SubjectKind = (typeof subjectKinds)[number];

const kindWords: ReadonlyArray<readonly [SubjectKind, readonly string[]]> = [
  [
    'person',
    [
      'person',
      'man',
      'men',
      'woman',
      'women',
      'boy',
      'girl',
      'child',
      'children',
      'kid',
      'lady',
      'ladies',
      'gentleman',
      'people',
      'chef',
      'doctor',
      'nurse',
      'astronaut',
      'knight',
      'wizard',
      'witch',
      'king',
      'queen',
      'prince',
      'princess',
      'teacher',
      'student',
      'dancer',
      'singer',
      'farmer',
      'pirate',
      'soldier',
      'scientist',
      'artist',
      'musician',
      'athlete',
      'grandmother',
      'grandfather',
      'baby',
      'bride',
      'groom',
      'actor',
      'actress',
    ],
  ],
  [
    'animal',
    [
      'cat',
      'kitten',
      'dog',
      'puppy',
      'fox',
      'wolf',
      'bear',
      'horse',
      'pony',
      'cow',
      'pig',
      'sheep',
      'goat',
      'deer',
      'lion',
      'tiger',
      'rabbit',
      'bunny',
      'mouse',
      'squirrel',
      'elephant',
      'giraffe',
      'zebra',
      'animal',
      'pet',
      'raccoon',
      'panda',
      'lamb',
      'donkey',
      'camel',
      'hedgehog',
      'otter',
      'badger',
    ],
  ],
  [
    'bird',
    [
      'bird',
      'owl',
      'parrot',
      'eagle',
      'duck',
      'chicken',
      'hen',
      'rooster',
      'penguin',
      'crow',
      'sparrow',
      'pigeon',
      'swan',
      'robin',
      'flamingo',
      'hawk',
      'goose',
    ],
  ],
  [
    'creature',
    [
      'robot',
      'creature',
      'monster',
      'dragon',
      'alien',
      'mascot',
      'character',
      'gnome',
      'troll',
      'goblin',
      'ghost',
      'android',
      'cyborg',
    ],
  ],
  ['teapot', ['teapot', 'kettle', 'tea pot']],
  ['cup', ['cup', 'mug', 'teacup', 'tumbler', 'beaker', 'stein']],
  [
    'vessel',
    ['vase', 'bottle', 'jar', 'flask', 'jug', 'pitcher', 'urn', 'perfume', 'decanter', 'carafe', 'amphora', 'pot'],
  ],
  ['tree', ['tree', 'oak', 'pine', 'palm', 'birch', 'maple', 'bonsai', 'willow', 'cherry blossom', 'fir']],
  [
    'house',
    [
      'house',
      'home',
      'cottage',
      'cabin',
      'barn',
      'building',
      'hut',
      'church',
      'chapel',
      'villa',
      'bungalow',
      'farmhouse',
      'shed',
    ],
  ],
  [
    'car',
    [
      'car',
      'truck',
      'van',
      'taxi',
      'jeep',
      'suv',
      'sedan',
      'automobile',
      'vehicle',
      'convertible',
      'coupe',
      'hatchback',
      'pickup',
      'limousine',
    ],
  ],
  [
    'box',
    [
      'box',
      'package',
      'parcel',
      'gift',
      'crate',
      'carton',
      'book',
      'phone',
      'speaker',
      'tin',
      'candle',
      'lamp',
      'bag',
      'shoe',
      'sneaker',
      'product',
      'headphones',
      'camera',
      'toaster',
    ],
  ],
];

/** firstMention is the index of the first whole-word occurrence of word (or its plural) in text, or -1. */
function firstMention(text: string, word: string): number {
  const escaped = word.replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace(/ /g, '\\s+');
  return text.search(new RegExp(`\\b${escaped}(?:s|es)?\\b`));
}

/** subjectKindOf reads a subject description into the kind of thing the built-in generator draws. */
export function subjectKindOf(subject: string): SubjectKind {
  const text = subject.toLowerCase();
  let best: { kind: SubjectKind; at: number } | null = null;
  for (const [kind, words] of kindWords) {
    for (const word of words) {
      const at = firstMention(text, word);
      if (at >= 0 && (best === null || at < best.at)) best = { kind, at };
    }
  }
  return best?.kind ?? 'object';
}

/**
 * closeUpFocus is where a close framing centres on a subject of this kind, as fractions of its bounding box
 * (x from the left, y from the top): the face of a person or an animal, the body of a teapot, the front of a
 * car. null: the framing's own centre (tuned for a standing figure).
 */
export function closeUpFocus(kind: SubjectKind): { x: number; y: number } | null {
  switch (kind) {
    case 'person':
    case 'creature':
      return null;
    case 'animal':
      return { x: 0.82, y: 0.22 };
    case 'bird':
      return { x: 0.62, y: 0.2 };
    case 'teapot':
      return { x: 0.5, y: 0.6 };
    case 'car':
      return { x: 0.78, y: 0.55 };
    case 'tree':
      return { x: 0.5, y: 0.3 };
    case 'house':
      return { x: 0.5, y: 0.68 };
    default:
      return { x: 0.5, y: 0.5 };
  }
}
