// A worker that dies mid-shot (its BullMQ worker closed without finishing, its lock left to expire) loses
// nothing: another worker takes the stalled job, finds the shot `generating` for the same request, makes
// it and records it once. When the dead worker's abandoned run finally ends, it finds the shot finished
// and records nothing. This is the single-process seam of the three-node "kill a node mid-generation" test.
import assert from 'node:assert/strict';
import { startAlbumWorker } from '../../api/albums/album-worker.js';
import type { AlbumWorker } from '../../api/albums/album-worker.js';
import { ProceduralImageGenerator } from '../../api/images/procedural-generator.js';
import { startTestApi, startTestRedis, waitFor } from '../api/harness.js';
import type { TestApi, TestRedis } from '../api/harness.js';
import type { EventFollower } from './helpers.js';
import {
  FailingGenerator,
  createAlbum,
  decodePng,
  eventsOf,
  fetchImage,
  followEvents,
  waitForEvent,
} from './helpers.js';

describe('albums: a worker dies mid-shot', function () {
  this.timeout(60_000);
  let redis: TestRedis;
  let api: TestApi;
  let follower: EventFollower;
  const workers: AlbumWorker[] = [];

  before(async () => {
    redis = await startTestRedis();
    api = await startTestApi({ redisUrl: redis.url, config: { sseKeepAliveMs: 200 } });
    follower = await followEvents(api);
  });
  after(async () => {
    follower?.close();
    for (const worker of workers) await worker.close(true);
    await api?.close();
    await redis?.stop();
  });

  it('another worker finishes the shot, once', async () => {
    const doomed = new FailingGenerator(new ProceduralImageGenerator());
    const lock = { lockDurationMs: 800, stalledIntervalMs: 300 };
    const abandoned: string[] = [];
    const first = await startAlbumWorker({
      redisUrl: redis.url,
      store: api.store,
      generator: doomed,
      ...lock,
      onOutcome: (job, outcome) => {
        if (job.kind === 'shot') abandoned.push(outcome.kind);
      },
    });
    workers.push(first);
    const album = await createAlbum(api, {
      subject: 'a blue sneaker',
      directions: [{ name: 'only', framing: 'full' }],
    });
    await api.call('POST', `/albums/${album.id}/anchor`);
    await waitForEvent(follower, album.id, 'anchor.completed');

    let release!: () => void;
    doomed.gate = new Promise((resolve) => {
      release = resolve;
    });
    await api.call('POST', `/albums/${album.id}/shots`);
    await waitForEvent(follower, album.id, 'shot.started');
    await first.close(true);

    const second = await startAlbumWorker({
      redisUrl: redis.url,
      store: api.store,
      generator: new ProceduralImageGenerator(),
      ...lock,
    });
    workers.push(second);
    await waitForEvent(follower, album.id, 'album.completed', undefined, 20_000);
    const done = (await api.call('GET', `/albums/${album.id}`)).json;
    assert.equal(done.shots[0].status, 'complete');
    assert.equal(done.shots[0].attempts, 2, 'the second worker started it again');
    const png = decodePng(await fetchImage(api, done.shots[0].image_url));
    assert.deepEqual([png.width, png.height], [160, 128]);

    // The abandoned run ends now, and changes nothing.
    release();
    await waitFor(
      async () => abandoned,
      (outcomes) => outcomes.length === 1,
    );
    assert.deepEqual(abandoned, ['finished']);
    assert.deepEqual((await api.call('GET', `/albums/${album.id}`)).json, done);
    const names = eventsOf(follower, album.id).map((event) => event.event);
    assert.deepEqual(names, [
      'anchor.started',
      'anchor.completed',
      'shot.started',
      'shot.started',
      'shot.completed',
      'album.completed',
    ]);
  });
});
