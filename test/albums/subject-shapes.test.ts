// The built-in generator draws the kind of thing the subject names, and the template's directions change the
// framing and arrangement of the shots. Asserted on silhouettes (alpha masks of anchors; for shots, the pixels
// that differ from the same shot of an empty anchor), not on exact bytes.
import assert from 'node:assert/strict';
import sharp from 'sharp';
import type { PNG } from 'pngjs';
import { ProceduralImageGenerator } from '../../api/images/procedural-generator.js';
import { subjectKindOf } from '../../api/images/subject-kinds.js';
import type { SubjectKind } from '../../api/images/subject-kinds.js';
import { templates } from '../../api/albums/templates.js';
import type { ShotDirection } from '../../api/albums/templates.js';
import { decodePng } from './helpers.js';

const generator = new ProceduralImageGenerator();
const sidePx = 240;

interface Mask {
  width: number;
  height: number;
  on: Uint8Array;
}

function alphaMask(png: PNG): Mask {
  const on = new Uint8Array(png.width * png.height);
  for (let index = 0; index < on.length; index++) on[index] = png.data[index * 4 + 3]! > 128 ? 1 : 0;
  return { width: png.width, height: png.height, on };
}

/** differenceMask marks the pixels of `shot` that differ clearly from `empty` (the same shot of nothing). */
function differenceMask(shot: PNG, empty: PNG): Mask {
  const on = new Uint8Array(shot.width * shot.height);
  for (let index = 0; index < on.length; index++) {
    let difference = 0;
    for (let channel = 0; channel < 3; channel++)
      difference += Math.abs(shot.data[index * 4 + channel]! - empty.data[index * 4 + channel]!);
    on[index] = difference > 40 ? 1 : 0;
  }
  return { width: shot.width, height: shot.height, on };
}

function bounds(mask: Mask): {
  left: number;
  top: number;
  right: number;
  bottom: number;
  width: number;
  height: number;
} {
  let [left, top, right, bottom] = [mask.width, mask.height, -1, -1];
  for (let y = 0; y < mask.height; y++) {
    for (let x = 0; x < mask.width; x++) {
      if (!mask.on[y * mask.width + x]) continue;
      left = Math.min(left, x);
      right = Math.max(right, x);
      top = Math.min(top, y);
      bottom = Math.max(bottom, y);
    }
  }
  assert.ok(right >= 0, 'the mask is not empty');
  return { left, top, right, bottom, width: right - left + 1, height: bottom - top + 1 };
}

/** runs counts the separate stretches of the mask along row y: gaps under gapMinPx join, stretches under minPx do not count. */
function runs(mask: Mask, y: number, minPx = 2, gapMinPx = 3): number {
  const stretches: Array<[number, number]> = [];
  for (let x = 0; x < mask.width; x++) {
    if (!mask.on[y * mask.width + x]) continue;
    const last = stretches[stretches.length - 1];
    if (last && x - last[1] <= gapMinPx) last[1] = x;
    else stretches.push([x, x]);
  }
  return stretches.filter(([from, to]) => to - from + 1 >= minPx).length;
}

function rowWidth(mask: Mask, y: number): number {
  let [left, right] = [-1, -1];
  for (let x = 0; x < mask.width; x++) {
    if (!mask.on[y * mask.width + x]) continue;
    if (left < 0) left = x;
    right = x;
  }
  return left < 0 ? 0 : right - left + 1;
}

/** rowsAt returns the rows from fraction `from` to `to` of the mask's bounding box height. */
function rowsAt(mask: Mask, from: number, to: number): number[] {
  const box = bounds(mask);
  const rows: number[] = [];
  for (let y = Math.round(box.top + from * (box.height - 1)); y <= Math.round(box.top + to * (box.height - 1)); y++)
    rows.push(y);
  return rows;
}

function intersectionOverUnion(a: Mask, b: Mask): number {
  let both = 0;
  let either = 0;
  for (let index = 0; index < a.on.length; index++) {
    both += a.on[index]! & b.on[index]!;
    either += a.on[index]! | b.on[index]!;
  }
  return both / either;
}

const coverage = (mask: Mask) => mask.on.reduce((sum, value) => sum + value, 0) / mask.on.length;

async function anchorMask(subject: string, seed = 0): Promise<Mask> {
  return alphaMask(decodePng(await generator.generateAnchor({ subject, seed, widthPx: sidePx, heightPx: sidePx })));
}

const references: ReadonlyArray<readonly [SubjectKind, string]> = [
  ['person', 'a person'],
  ['animal', 'an animal'],
  ['bird', 'a bird'],
  ['creature', 'a creature'],
  ['teapot', 'a teapot'],
  ['cup', 'a cup'],
  ['vessel', 'a vase'],
  ['tree', 'a tree'],
  ['house', 'a house'],
  ['car', 'a car'],
  ['box', 'a box'],
  ['object', 'a thing'],
];

describe('albums: the built-in generator draws what the subject names', function () {
  this.timeout(120_000);
  const referenceMasks = new Map<SubjectKind, Mask>();
  before(async () => {
    for (const [kind, subject] of references) referenceMasks.set(kind, await anchorMask(subject));
  });

  it('reads the kind from the first thing the description names, and draws an unknown thing as an object, not a person', () => {
    const expectations: Array<[string, SubjectKind]> = [
      ['a woman in a red coat', 'person'],
      ['two children playing', 'person'],
      ['a tabby cat', 'animal'],
      ['a brown horse', 'animal'],
      ['an owl', 'bird'],
      ['a red robot', 'creature'],
      ['a blue teapot with gold flowers', 'teapot'],
      ['a copper kettle', 'teapot'],
      ['a teal ceramic mug', 'cup'],
      ['a glass vase', 'vessel'],
      ['wine bottles', 'vessel'],
      ['an old oak tree', 'tree'],
      ['a thatched cottage', 'house'],
      ['a red sports car', 'car'],
      ['a teapot shaped like a cat', 'teapot'],
      ['a cat beside a teapot', 'animal'],
      ['the concept of time', 'object'],
      ['Ada Lovelace', 'object'],
      ['a cupcake', 'object'],
      ['a catalogue', 'object'],
    ];
    for (const [subject, kind] of expectations) assert.equal(subjectKindOf(subject), kind, subject);
  });

  it('gives each kind its own silhouette: a teapot is not a person', () => {
    assert.ok(
      intersectionOverUnion(referenceMasks.get('teapot')!, referenceMasks.get('person')!) < 0.5,
      'a teapot is not a person',
    );
    const kinds = [...referenceMasks.keys()];
    for (const [index, first] of kinds.entries()) {
      for (const second of kinds.slice(index + 1)) {
        const iou = intersectionOverUnion(referenceMasks.get(first)!, referenceMasks.get(second)!);
        assert.ok(iou < 0.85, `${first} and ${second} overlap too much (IoU ${iou.toFixed(2)})`);
      }
    }
  });

  it('draws a described subject with the silhouette of its kind, whatever its colours, details and seed', async () => {
    const described: Array<[string, SubjectKind]> = [
      ['a woman in a red coat', 'person'],
      ['a tabby cat', 'animal'],
      ['a brown horse', 'animal'],
      ['a green parrot', 'bird'],
      ['a red robot', 'creature'],
      ['a blue teapot with gold flowers', 'teapot'],
      ['a copper kettle', 'teapot'],
      ['a teal ceramic mug', 'cup'],
      ['a glass vase', 'vessel'],
      ['an old oak tree', 'tree'],
      ['a thatched cottage', 'house'],
      ['a red sports car', 'car'],
      ['a gift box', 'box'],
      ['the concept of time', 'object'],
      ['a teapot shaped like a cat', 'teapot'],
    ];
    for (const [subject, kind] of described) {
      const mask = await anchorMask(subject, 3);
      const scores = [...referenceMasks]
        .map(([reference, referenceMask]) => [reference, intersectionOverUnion(mask, referenceMask)] as const)
        .sort((a, b) => b[1] - a[1]);
      assert.equal(
        scores[0]![0],
        kind,
        `${subject}: nearest silhouettes ${scores
          .slice(0, 3)
          .map(([k, v]) => `${k} ${v.toFixed(2)}`)
          .join(', ')}`,
      );
      assert.ok(scores[0]![1] > 0.8, `${subject} matches its kind's silhouette (IoU ${scores[0]![1].toFixed(2)})`);
    }
  });

  it('has the parts each kind is known by', () => {
    const mask = (kind: SubjectKind) => referenceMasks.get(kind)!;
    const most = (kind: SubjectKind, from: number, to: number) =>
      Math.max(...rowsAt(mask(kind), from, to).map((y) => runs(mask(kind), y)));
    const aspect = (kind: SubjectKind) => bounds(mask(kind)).width / bounds(mask(kind)).height;
    const widthAt = (kind: SubjectKind, fraction: number) =>
      rowWidth(mask(kind), rowsAt(mask(kind), fraction, fraction)[0]!);

    // A person: a head narrower than the shoulders under it, nothing beside it.
    assert.ok(widthAt('person', 0.25) < 0.7 * widthAt('person', 0.9), 'a head over wider shoulders');
    assert.equal(most('person', 0, 1), 1, 'one piece on every row');
    // A teapot: wider than tall; at the spout's height, handle, body and spout are three pieces.
    assert.ok(aspect('teapot') > 1.3, `teapot aspect ${aspect('teapot').toFixed(2)}`);
    assert.ok(most('teapot', 0.2, 0.6) >= 3, 'handle, body and spout');
    // A cup: body and handle, two pieces, never three.
    assert.equal(most('cup', 0.3, 0.7), 2, 'body and handle');
    // An animal: longer than tall, standing on legs (at least three pieces near the ground).
    assert.ok(aspect('animal') > 1.1, `animal aspect ${aspect('animal').toFixed(2)}`);
    assert.ok(most('animal', 0.85, 0.95) >= 3, 'legs');
    // A bird: two thin legs.
    assert.equal(most('bird', 0.85, 0.95), 2, 'two legs');
    // A tree: a trunk much narrower than its crown.
    const treeWidest = Math.max(...rowsAt(mask('tree'), 0, 1).map((y) => rowWidth(mask('tree'), y)));
    assert.ok(widthAt('tree', 0.9) < 0.25 * treeWidest, 'a narrow trunk');
    assert.ok(aspect('tree') < 0.85, `tree aspect ${aspect('tree').toFixed(2)}`);
    // A house: a roof that widens from its ridge, over walls of one width.
    assert.ok(widthAt('house', 0.03) < 0.25 * widthAt('house', 0.35), 'a pitched roof');
    const walls = rowsAt(mask('house'), 0.6, 0.98).map((y) => rowWidth(mask('house'), y));
    assert.ok(
      Math.max(...walls) - Math.min(...walls) <= 2,
      `straight walls (${Math.min(...walls)}..${Math.max(...walls)})`,
    );
    // A car: long and low, on two wheels.
    assert.ok(aspect('car') > 1.7, `car aspect ${aspect('car').toFixed(2)}`);
    assert.equal(most('car', 0.9, 0.97), 2, 'two wheels');
    // A vase: tall and narrow.
    assert.ok(aspect('vessel') < 0.6, `vase aspect ${aspect('vessel').toFixed(2)}`);
  });
});

describe('albums: template directions change the framing and arrangement of the built-in shots', function () {
  this.timeout(120_000);
  const [widthPx, heightPx] = [160, 160];

  async function shotMask(anchorPng: Buffer, subject: string, direction: ShotDirection): Promise<Mask> {
    const shot = decodePng(
      await generator.generateShot({ anchorPng, subject, direction, variation: 0, widthPx, heightPx }),
    );
    const emptyAnchor = await sharp({
      create: { width: widthPx, height: heightPx, channels: 4, background: { r: 0, g: 0, b: 0, alpha: 0 } },
    })
      .png()
      .toBuffer();
    const empty = decodePng(
      await generator.generateShot({ anchorPng: emptyAnchor, subject, direction, variation: 0, widthPx, heightPx }),
    );
    return differenceMask(shot, empty);
  }
  const direction = (template: keyof typeof templates, name: string) =>
    templates[template].directions.find((item) => item.name === name)!;

  it('ProductShoot: a whole packshot, a pair side by side, a detail that fills the frame', async () => {
    const subject = 'a glass vase';
    const anchorPng = await generator.generateAnchor({ subject, seed: 0, widthPx, heightPx });
    const packshot = await shotMask(anchorPng, subject, direction('ProductShoot', 'Packshot'));
    const packBox = bounds(packshot);
    assert.ok(packBox.top > 2 && packBox.bottom < heightPx - 3, 'the whole subject is in the frame');
    assert.equal(runs(packshot, Math.round(packBox.top + packBox.height * 0.45)), 1, 'one subject');

    const pair = await shotMask(anchorPng, subject, direction('ProductShoot', 'Pair'));
    const pairBox = bounds(pair);
    assert.equal(runs(pair, Math.round(pairBox.top + pairBox.height * 0.45)), 2, 'two subjects side by side');
    assert.ok(pairBox.height < packBox.height, 'a wide framing shows the subject smaller');

    const detail = await shotMask(anchorPng, subject, direction('ProductShoot', 'Detail'));
    assert.ok(coverage(detail) > 0.85, `a detail fills the frame (${coverage(detail).toFixed(2)})`);
    assert.ok(coverage(packshot) < 0.5, `a packshot does not (${coverage(packshot).toFixed(2)})`);
  });

  it('PortraitSession: a head shot crops to the head, a full shot shows the whole figure', async () => {
    const subject = 'a woman in a red coat';
    const anchorPng = await generator.generateAnchor({ subject, seed: 0, widthPx, heightPx });
    const head = bounds(await shotMask(anchorPng, subject, direction('PortraitSession', 'Head shot')));
    assert.equal(head.bottom, heightPx - 1, 'cut at the bottom of the frame');
    const full = bounds(await shotMask(anchorPng, subject, direction('PortraitSession', 'Bright and airy')));
    assert.ok(full.top > 2 && full.left > 2 && full.right < widthPx - 3, 'the whole figure is in the frame');
    assert.ok(full.width < head.width, 'the full shot shows the figure smaller');
  });

  it('a close-up of an animal is of its head (its eye and nose are in the frame), not of its back', async () => {
    const subject = 'a white cat';
    const anchorPng = await generator.generateAnchor({ subject, seed: 0, widthPx, heightPx });
    const shot = decodePng(
      await generator.generateShot({
        anchorPng,
        subject,
        direction: direction('PortraitSession', 'Head shot'),
        variation: 0,
        widthPx,
        heightPx,
      }),
    );
    let dark = 0;
    for (let at = 0; at < shot.data.length; at += 4)
      if (Math.max(shot.data[at]!, shot.data[at + 1]!, shot.data[at + 2]!) < 60) dark++;
    assert.ok(dark > 20, `the eye and nose are in the frame (${dark} dark pixels)`);
  });
});
