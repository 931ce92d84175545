// Measures the built-in generator and a whole album through the API, worker and Redis on this machine.
// Not a test: run `npx tsx test/albums/measure.ts [sidePx]` (default 512) and read the printed figures.
import { ProceduralImageGenerator } from '../../api/images/procedural-generator.js';
import { templates } from '../../api/albums/templates.js';
import { createAlbum, followEvents, startAlbumStack, waitForEvent } from './helpers.js';

const sidePx = Number(process.argv[2] ?? 512);
const generator = new ProceduralImageGenerator();
const directions = templates.PortraitSession.directions;

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const anchorMs: number[] = [];
const shotMs: number[] = [];
const shotBytes: number[] = [];
let anchorPng: Buffer = Buffer.alloc(0);
for (let round = 0; round < 5; round++) {
  let started = performance.now();
  anchorPng = await generator.generateAnchor({
    subject: 'a woman with a red jacket',
    seed: round,
    widthPx: sidePx,
    heightPx: sidePx,
  });
  anchorMs.push(performance.now() - started);
  for (const direction of directions) {
    started = performance.now();
    const png = await generator.generateShot({
      anchorPng,
      subject: 'x',
      direction,
      variation: 0,
      widthPx: sidePx,
      heightPx: sidePx,
    });
    shotMs.push(performance.now() - started);
    shotBytes.push(png.length);
  }
}
console.log(
  `built-in generator, ${sidePx}x${sidePx}: anchor median ${median(anchorMs).toFixed(0)} ms (${anchorPng.length} B); ` +
    `shot median ${median(shotMs).toFixed(0)} ms, max ${Math.max(...shotMs).toFixed(0)} ms; shot PNG median ${median(shotBytes)} B`,
);

const stack = await startAlbumStack({ concurrency: 4 });
const follower = await followEvents(stack.api);
try {
  const wholeMs: number[] = [];
  for (let round = 0; round < 3; round++) {
    const album = await createAlbum(stack.api, {
      subject: `round ${round}: a teal ceramic mug`,
      template: 'PortraitSession',
      width_px: sidePx,
      height_px: sidePx,
    });
    const started = performance.now();
    await stack.api.call('POST', `/albums/${album.id}/anchor`);
    await waitForEvent(follower, album.id, 'anchor.completed', undefined, 120_000);
    await stack.api.call('POST', `/albums/${album.id}/shots`);
    await waitForEvent(follower, album.id, 'album.completed', undefined, 120_000);
    wholeMs.push(performance.now() - started);
  }
  console.log(
    `whole album (anchor + ${directions.length} shots, ${sidePx}px, worker concurrency 4, in-memory store, local Redis): ` +
      `median ${median(wholeMs).toFixed(0)} ms from POST anchor to album.completed`,
  );
} finally {
  follower.close();
  await stack.close();
}
