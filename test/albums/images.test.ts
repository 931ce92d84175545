// The built-in generator: real PNGs (decoded here with pngjs, not sharp) of the asked size, the same bytes
// for the same inputs, shots that keep the anchor's subject, and the gate every generator's output passes.
import assert from 'node:assert/strict';
import { PNG } from 'pngjs';
import { ProceduralImageGenerator } from '../../api/images/procedural-generator.js';
import { checkPng } from '../../api/images/png-check.js';
import { ImageGenerationError } from '../../api/images/image-generator.js';
import { templates } from '../../api/albums/templates.js';
import type { ShotDirection } from '../../api/albums/templates.js';
import { decodePng } from './helpers.js';

const generator = new ProceduralImageGenerator();

/** hueHistogram counts the hues (12 bins of 30°) of the saturated, opaque pixels of a PNG. */
function hueHistogram(png: PNG): number[] {
  const bins = new Array<number>(12).fill(0);
  for (let at = 0; at < png.data.length; at += 4) {
    if (png.data[at + 3]! < 200) continue;
    const [red, green, blue] = [png.data[at]! / 255, png.data[at + 1]! / 255, png.data[at + 2]! / 255];
    const max = Math.max(red, green, blue);
    const min = Math.min(red, green, blue);
    if (max - min < 0.25) continue;
    const hue =
      max === red
        ? ((green - blue) / (max - min) + 6) % 6
        : max === green
          ? (blue - red) / (max - min) + 2
          : (red - green) / (max - min) + 4;
    bins[Math.floor(hue * 2) % 12]!++;
  }
  const total = bins.reduce((sum, count) => sum + count, 0) || 1;
  return bins.map((count) => count / total);
}

/** overlap is the shared mass of two normalised histograms (1: the same colours, 0: none in common). */
const overlap = (a: number[], b: number[]) => a.reduce((sum, value, index) => sum + Math.min(value, b[index]!), 0);

describe('albums: the built-in image generator', function () {
  this.timeout(60_000);

  it('makes an anchor PNG of the asked size, with a transparent background, the same bytes for the same inputs', async () => {
    const request = { subject: 'a teal ceramic mug', seed: 0, widthPx: 200, heightPx: 150 };
    const first = await generator.generateAnchor(request);
    const second = await generator.generateAnchor(request);
    assert.ok(first.equals(second), 'deterministic');
    const png = decodePng(first);
    assert.deepEqual([png.width, png.height], [200, 150]);
    assert.equal(png.data[3], 0, 'the corner is transparent');
    const centre = (75 * 200 + 100) * 4;
    assert.equal(png.data[centre + 3], 255, 'the subject is opaque');
    const other = await generator.generateAnchor({ ...request, seed: 1 });
    assert.ok(!other.equals(first), 'another seed, another anchor');
  });

  it('makes every template shot as an opaque PNG of the asked size, deterministically, keeping the subject', async () => {
    const subjects = ['a teal ceramic mug', 'a red robot', 'a woman with a yellow coat'];
    const anchors = await Promise.all(
      subjects.map((subject) => generator.generateAnchor({ subject, seed: 0, widthPx: 128, heightPx: 160 })),
    );
    const anchorHues = anchors.map((anchor) => hueHistogram(decodePng(anchor)));
    let checked = 0;
    for (const [subjectIndex, subject] of subjects.entries()) {
      for (const direction of templates.ProductShoot.directions.concat(templates.CharacterSheet.directions)) {
        const request = {
          anchorPng: anchors[subjectIndex]!,
          subject,
          direction,
          variation: 0,
          widthPx: 128,
          heightPx: 160,
        };
        const bytes = await generator.generateShot(request);
        if (subjectIndex === 0 && direction.name === 'Packshot')
          assert.ok(bytes.equals(await generator.generateShot(request)), 'deterministic');
        const png = decodePng(bytes);
        assert.deepEqual([png.width, png.height], [128, 160], `${subject} / ${direction.name}`);
        assert.ok(
          png.data.every((value, index) => index % 4 !== 3 || value === 255),
          'opaque',
        );
        // Recognisably the same subject: its colours match its own anchor better than another subject's (on
        // neutral backgrounds under neutral light, where the saturated colours are the subject's).
        const neutral =
          ['white', 'plain grey', 'black'].includes(direction.background) &&
          !direction.framing.includes('close') &&
          ['studio', 'flat', 'soft'].includes(direction.lighting) &&
          direction.angle !== 'back';
        if (neutral) {
          checked++;
          const hues = hueHistogram(png);
          const own = overlap(hues, anchorHues[subjectIndex]!);
          for (const [otherIndex, otherHues] of anchorHues.entries()) {
            if (otherIndex !== subjectIndex)
              assert.ok(own > overlap(hues, otherHues), `${subject} / ${direction.name}: ${own.toFixed(2)}`);
          }
          assert.ok(own > 0.5, `${subject} / ${direction.name} keeps its colours (${own.toFixed(2)})`);
        }
      }
    }
    assert.ok(checked >= 12, `the colour check covered ${checked} shots`);
  });

  it('reads unknown direction words as defaults and refuses an anchor that is not an image', async () => {
    const anchorPng = await generator.generateAnchor({ subject: 'a fox', seed: 0, widthPx: 96, heightPx: 96 });
    const direction = (fields: Partial<ShotDirection>): ShotDirection => ({
      name: 'n',
      framing: 'medium',
      angle: 'front',
      lighting: 'studio',
      pose: 'natural',
      background: 'plain grey',
      ...fields,
    });
    const plain = await generator.generateShot({
      anchorPng,
      subject: 'a fox',
      direction: direction({}),
      variation: 0,
      widthPx: 96,
      heightPx: 96,
    });
    const odd = await generator.generateShot({
      anchorPng,
      subject: 'a fox',
      direction: direction({ framing: 'zzz', angle: '???', lighting: '', background: 'plaid' }),
      variation: 0,
      widthPx: 96,
      heightPx: 96,
    });
    assert.ok(plain.equals(odd));
    await assert.rejects(
      generator.generateShot({
        anchorPng: Buffer.from('not a png'),
        subject: 'x',
        direction: direction({}),
        variation: 0,
        widthPx: 96,
        heightPx: 96,
      }),
      (error: unknown) => error instanceof ImageGenerationError && !error.retryable && error.code === 'BAD_ANCHOR',
    );
  });

  it('checkPng lets through only whole PNGs of the album size within the byte limit', async () => {
    const png = await generator.generateAnchor({ subject: 'a box', seed: 0, widthPx: 64, heightPx: 80 });
    await checkPng(png, 64, 80, png.length);
    const refused = async (bytes: Buffer, code: string, bytesMax = 1 << 20) =>
      assert.rejects(
        checkPng(bytes, 64, 80, bytesMax),
        (error: unknown) => error instanceof ImageGenerationError && error.code === code,
      );
    await refused(png, 'IMAGE_TOO_LARGE', png.length - 1);
    await refused(Buffer.from('GIF89a'), 'BAD_IMAGE');
    await refused(png.subarray(0, png.length - 40), 'BAD_IMAGE');
    await assert.rejects(checkPng(png, 80, 64, 1 << 20), /64x80, not 80x64/);
  });
});
