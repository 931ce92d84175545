// The seams the cluster kill test cannot aim at, hit on purpose (real Redis, the in-memory store): a worker
// that dies after its shot's state write but before the event, and a job BullMQ gives up on. In both the
// album still ends and each end event is on the user's stream exactly once.
import assert from 'node:assert/strict';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import type { JsonObject, WriteOptions } from '../../store/document-store.js';
import { MemoryDocumentStore } from '../../store/memory-store.js';
import type { AlbumRecord } from '../../api/albums/album-records.js';
import { StoreAnchorFetcher, albumJobProcessor } from '../../api/albums/album-jobs-processor.js';
import type { ShotJob } from '../../api/albums/album-jobs.js';
import { albumJobOptions, albumQueueName } from '../../api/albums/album-jobs.js';
import { startAlbumWorker } from '../../api/albums/album-worker.js';
import { StoreAlbumUpdater } from '../../api/albums/album-updater.js';
import { requestAnchor, requestShots, startShot } from '../../api/albums/album-state.js';
import { BlobStore } from '../../api/albums/blob-store.js';
import { RedisUserEventPublisher, userEventKeys } from '../../api/albums/user-events.js';
import type { AlbumEventName, EventData, UserEventPublisher } from '../../api/albums/user-events.js';
import { ProceduralImageGenerator } from '../../api/images/procedural-generator.js';
import { startTestRedis, type TestRedis } from '../api/harness.js';
import { waitFor } from '../node/harness.js';
import { albumFixtureTime, albumFixtureUserId, newAlbumRecord } from '../albums/helpers.js';

/** RefusingStore refuses every write that would make a shot complete: each run fails after its image. */
class RefusingStore extends MemoryDocumentStore {
  override put(key: string, value: JsonObject, options?: WriteOptions): Promise<{ version: number }> {
    const shots = (value as unknown as Partial<AlbumRecord>).shots;
    if (shots?.some((shot) => shot.status === 'complete'))
      return Promise.reject(new Error('the store refused the write'));
    return super.put(key, value, options);
  }
}

const now = albumFixtureTime;
const userId = albumFixtureUserId;

describe('cluster-albums: a worker dying between its write and its event, a job the queue gives up on', function () {
  this.timeout(30_000);
  let redis: TestRedis;
  let connection: Redis;
  const store = new MemoryDocumentStore();
  const updater = new StoreAlbumUpdater(store);
  const blobs = new BlobStore(store);
  let publisher: RedisUserEventPublisher;

  const processorWith = (events: UserEventPublisher) =>
    albumJobProcessor({
      updater,
      blobs,
      generator: new ProceduralImageGenerator(),
      events,
      anchors: new StoreAnchorFetcher(blobs),
    });

  /** streamOf is the user's stream for one album: event names, with the shot index when there is one. */
  async function streamOf(albumId: string): Promise<string[]> {
    const entries = await connection.xrange(userEventKeys.stream(userId), '-', '+');
    return entries
      .map(([, fields]) => ({ event: fields[1]!, data: JSON.parse(fields[3]!) as { albumId: string; index?: number } }))
      .filter((entry) => entry.data.albumId === albumId)
      .map((entry) => (entry.data.index === undefined ? entry.event : `${entry.event}#${entry.data.index}`));
  }

  /** shotJobs makes an album with a ready anchor and its shots requested; it returns their jobs. */
  async function requestedAlbum(id: string, shotCount: number): Promise<ShotJob[]> {
    await updater.create(newAlbumRecord(shotCount, { id, subject: 'a grey owl' }));
    const ref = { userId, albumId: id };
    const anchor = await updater.update(ref, (album) => requestAnchor(album, 0, now));
    assert.deepEqual(await processorWith(publisher)(anchor!.result.job, { number: 1, last: false }), {
      kind: 'completed',
    });
    return (await updater.update(ref, (album) => requestShots(album, now)))!.result.jobs;
  }

  before(async () => {
    redis = await startTestRedis();
    connection = new Redis(redis.url);
    publisher = new RedisUserEventPublisher(connection);
  });
  after(async () => {
    connection?.disconnect();
    await redis?.stop();
  });

  it('a job run again after its worker died past the write announces the end, once', async () => {
    const albumId = 'alb_000000000bbbbbbbbbbbbbbbb';
    const [first, second] = await requestedAlbum(albumId, 2);
    const process = processorWith(publisher);
    assert.deepEqual(await process(first!, { number: 1, last: false }), { kind: 'completed' });

    // The worker "dies" as it goes to publish shot 1's completion: the state write is done, the event is not.
    const dying: UserEventPublisher = {
      keepsOnce: true,
      publish: async (user: string, name: AlbumEventName, data: EventData, onceKey?: string) => {
        if (name === 'shot.completed') throw new Error('killed');
        return publisher.publish(user, name, data, onceKey);
      },
    };
    await assert.rejects(processorWith(dying)(second!, { number: 1, last: false }), /killed/);
    const album = (await updater.read({ userId, albumId }))!;
    assert.deepEqual(
      album.shots.map((shot) => shot.status),
      ['complete', 'complete'],
      'the write was done',
    );
    assert.deepEqual(await streamOf(albumId), [
      'anchor.started',
      'anchor.completed',
      'shot.started#0',
      'shot.completed#0',
      'shot.started#1',
    ]);

    // BullMQ runs the stalled job again: it finds the shot ended and announces it, and the album's end.
    assert.deepEqual(await process(second!, { number: 1, last: false }), { kind: 'finished' });
    const announced = [
      'anchor.started',
      'anchor.completed',
      'shot.started#0',
      'shot.completed#0',
      'shot.started#1',
      'shot.completed#1',
      'album.completed',
    ];
    assert.deepEqual(await streamOf(albumId), announced);
    // Any further run (a duplicate, a late one) adds nothing; nor does the first shot's job run again.
    assert.deepEqual(await process(second!, { number: 2, last: true }), { kind: 'finished' });
    assert.deepEqual(await process(first!, { number: 2, last: true }), { kind: 'finished' });
    assert.deepEqual(await streamOf(albumId), announced);
    assert.deepEqual(
      (await updater.read({ userId, albumId }))!.shots.map((shot) => shot.attempts),
      [1, 1],
      'nothing started again',
    );
  });

  it('a job the queue gave up on ends its shot failed, announced once; an ended shot is left alone', async () => {
    const albumId = 'alb_000000000cccccccccccccccc';
    const [first, second] = await requestedAlbum(albumId, 2);
    const process = processorWith(publisher);
    assert.deepEqual(await process(first!, { number: 1, last: false }), { kind: 'completed' });
    // The second shot started on a worker that then died more often than BullMQ allows: it is `generating`.
    await updater.update({ userId, albumId }, (album) => startShot(album, second!, now));
    const reason = 'JOB_ABANDONED: job stalled more than allowable limit';
    await process.abandon(second!, reason);
    await process.abandon(second!, reason);
    await process.abandon(first!, reason);
    const album = (await updater.read({ userId, albumId }))!;
    assert.deepEqual(
      album.shots.map((shot) => [shot.status, shot.error]),
      [
        ['complete', null],
        ['failed', reason],
      ],
    );
    assert.deepEqual(await streamOf(albumId), [
      'anchor.started',
      'anchor.completed',
      'shot.started#0',
      'shot.completed#0',
      'shot.failed#1',
      'album.completed',
    ]);
  });

  it('the worker: a job whose every run fails outside the image (BullMQ fails it) ends its shot failed', async () => {
    const refusing = new RefusingStore();
    const refusingUpdater = new StoreAlbumUpdater(refusing);
    const albumId = 'alb_000000000dddddddddddddddd';
    await refusingUpdater.create(newAlbumRecord(1, { id: albumId, subject: 'a grey owl' }));
    const ref = { userId, albumId };
    const anchorJob = (await refusingUpdater.update(ref, (album) => requestAnchor(album, 0, now)))!.result.job;
    const refusingBlobs = new BlobStore(refusing);
    await albumJobProcessor({
      updater: refusingUpdater,
      blobs: refusingBlobs,
      generator: new ProceduralImageGenerator(),
      events: publisher,
      anchors: new StoreAnchorFetcher(refusingBlobs),
    })(anchorJob, { number: 1, last: false });
    const [job] = (await refusingUpdater.update(ref, (album) => requestShots(album, now)))!.result.jobs;
    const worker = await startAlbumWorker({
      redisUrl: redis.url,
      store: refusing,
      generator: new ProceduralImageGenerator(),
      backoffMs: 20,
    });
    const queueConnection = new Redis(redis.url, { maxRetriesPerRequest: null });
    const queue = new Queue(albumQueueName, { connection: queueConnection });
    try {
      await queue.add('shot', job!, albumJobOptions(job!));
      await waitFor(
        async () => (await refusingUpdater.read(ref))!.shots[0]!.status === 'failed',
        'the shot to end failed',
        15_000,
      );
      const shot = (await refusingUpdater.read(ref))!.shots[0]!;
      assert.match(shot.error!, /^JOB_ABANDONED: the store refused the write/);
      assert.equal(shot.attempts, 3, 'every attempt ran');
      await waitFor(async () => (await streamOf(albumId)).includes('album.completed'), 'album.completed', 5_000);
      assert.deepEqual((await streamOf(albumId)).slice(2), [
        'shot.started#0',
        'shot.started#0',
        'shot.started#0',
        'shot.failed#0',
        'album.completed',
      ]);
    } finally {
      await worker.close();
      await queue.close();
      queueConnection.disconnect();
    }
  });
});
