// Repeats are harmless: the same request twice queues one job; the same job id added twice runs once; a job
// run again after it finished does nothing; a job of a superseded request does nothing. Plus: events resume
// with Last-Event-ID and reach a client of another API process; albums belong to their user.
import assert from 'node:assert/strict';
import { Queue } from 'bullmq';
import { albumJobId, albumJobOptions, albumQueueName } from '../../api/albums/album-jobs.js';
import type { ShotJob } from '../../api/albums/album-jobs.js';
import { StoreAnchorFetcher, albumJobProcessor } from '../../api/albums/album-jobs-processor.js';
import { StoreAlbumUpdater } from '../../api/albums/album-updater.js';
import { albumKeys } from '../../api/albums/album-records.js';
import type { AlbumRecord } from '../../api/albums/album-records.js';
import { BlobStore } from '../../api/albums/blob-store.js';
import type { AlbumEventName, EventData, UserEventPublisher } from '../../api/albums/user-events.js';
import { startTestApi, waitFor } from '../api/harness.js';
import type { AlbumStack, EventFollower, Json } from './helpers.js';
import { createAlbum, eventsOf, followEvents, startAlbumStack, waitForEvent } from './helpers.js';

describe('albums: idempotent jobs, events on the user channel, ownership', function () {
  this.timeout(120_000);
  let stack: AlbumStack;
  let follower: EventFollower;

  const anchoredAlbum = async (body: Record<string, unknown>): Promise<Json> => {
    const album = await createAlbum(stack.api, body);
    const accepted = await stack.api.call('POST', `/albums/${album.id}/anchor`);
    assert.equal(accepted.status, 202, accepted.text);
    await waitForEvent(follower, album.id, 'anchor.completed');
    return (await stack.api.call('GET', `/albums/${album.id}`)).json;
  };

  before(async () => {
    stack = await startAlbumStack();
    follower = await followEvents(stack.api);
  });
  after(async () => {
    follower?.close();
    await stack?.close();
  });

  it('the same anchor or shots request twice queues one job each, and each image is made once', async () => {
    const { api, generator } = stack;
    const album = await createAlbum(api, { subject: 'a yellow rubber duck product', template: 'ProductShoot' });
    const anchorCallsBefore = generator.anchorCalls;
    const [first, second] = await Promise.all([
      api.call('POST', `/albums/${album.id}/anchor`),
      api.call('POST', `/albums/${album.id}/anchor`),
    ]);
    assert.deepEqual([first.status, second.status], [202, 202]);
    assert.deepEqual([first.json.queued, second.json.queued].sort(), [false, true], 'one of them started it');
    await waitForEvent(follower, album.id, 'anchor.completed');

    const shotCallsBefore = generator.shotCalls;
    const requests = await Promise.all([1, 2, 3].map(() => api.call('POST', `/albums/${album.id}/shots`)));
    assert.ok(requests.every((request) => request.status === 202));
    await waitForEvent(follower, album.id, 'album.completed');
    const events = eventsOf(follower, album.id);
    assert.equal(generator.anchorCalls - anchorCallsBefore, 1);
    assert.equal(generator.shotCalls - shotCallsBefore, 6, 'six shots, each made once');
    for (let index = 0; index < 6; index++) {
      assert.equal(events.filter((event) => event.event === 'shot.completed' && event.data.index === index).length, 1);
    }
    assert.equal(events.filter((event) => event.event === 'album.completed').length, 1);
  });

  it('a job id added twice runs once, and a finished job run again changes nothing', async () => {
    const { api, generator, redis } = stack;
    const album = await anchoredAlbum({ subject: 'a grey cat', directions: [{ name: 'only' }] });
    // The route queues the shot's job; the same job is then added twice more by hand.
    const requested = await api.call('POST', `/albums/${album.id}/shots/0`);
    assert.equal(requested.json.album.shots[0].status, 'pending');
    const record = (await api.store.get<AlbumRecord>(albumKeys.album(api.adminUserId, album.id)))!.value;
    const job: ShotJob = {
      kind: 'shot',
      userId: api.adminUserId,
      albumId: album.id,
      index: 0,
      request: record.shots[0]!.request,
      anchorGeneration: album.anchor.generation,
      anchorUrl: album.anchor.url,
    };
    assert.equal(albumJobId(job), `shot.${album.id}.0.${record.shots[0]!.request}`);
    const queue = new Queue(albumQueueName, { connection: { url: redis.url } });
    try {
      await queue.add('shot', job, albumJobOptions(job));
      await queue.add('shot', job, albumJobOptions(job));
      await waitForEvent(follower, album.id, 'album.completed');
      const calls = generator.shotCalls;
      assert.equal(eventsOf(follower, album.id).filter((event) => event.event === 'shot.started').length, 1);

      // Run the finished job again, directly: nothing is generated, written or published.
      const published: string[] = [];
      const events: UserEventPublisher = {
        publish: async (_user: string, name: AlbumEventName, _data: EventData) => {
          published.push(name);
          return '0-0';
        },
      };
      const blobs = new BlobStore(api.store);
      const process = albumJobProcessor({
        updater: new StoreAlbumUpdater(api.store),
        blobs,
        generator,
        events,
        anchors: new StoreAnchorFetcher(blobs),
      });
      const before = (await api.call('GET', `/albums/${album.id}`)).json;
      assert.deepEqual(await process(job, { number: 1, last: true }), { kind: 'finished' });
      assert.deepEqual(await process({ ...job, request: job.request - 1 }, { number: 1, last: true }), {
        kind: 'superseded',
      });
      assert.deepEqual(await process({ ...job, albumId: 'alb_000000000ffffffffffffffff' }, { number: 1, last: true }), {
        kind: 'album-gone',
      });
      assert.deepEqual(published, []);
      assert.equal(generator.shotCalls, calls);
      assert.deepEqual((await api.call('GET', `/albums/${album.id}`)).json, before);
    } finally {
      await queue.close();
    }
  });

  it('a job whose shot was deleted while it ran records nothing', async () => {
    const { api, generator } = stack;
    const album = await anchoredAlbum({ subject: 'a green bottle', directions: [{ name: 'a' }, { name: 'b' }] });
    let release!: () => void;
    generator.gate = new Promise((resolve) => {
      release = resolve;
    });
    try {
      await api.call('POST', `/albums/${album.id}/shots`);
      await waitFor(
        async () => eventsOf(follower, album.id).filter((event) => event.event === 'shot.started').length,
        (count) => count === 2,
      );
      const deleted = await api.call('DELETE', `/albums/${album.id}/shots`);
      assert.equal(deleted.json.discarded, 2);
    } finally {
      generator.gate = null;
      release();
    }
    // The jobs finish their images, find their request superseded and record nothing.
    const queue = new Queue(albumQueueName, { connection: { url: stack.redis.url } });
    try {
      await waitFor(
        () => queue.getJobCounts('delayed', 'waiting', 'active'),
        (counts) => counts.delayed === 0 && counts.waiting === 0 && counts.active === 0,
      );
    } finally {
      await queue.close();
    }
    const names = eventsOf(follower, album.id).map((event) => event.event);
    assert.deepEqual(
      names.filter((name) => name.startsWith('shot.') || name.startsWith('album.')),
      ['shot.started', 'shot.started'],
    );
    const after = (await api.call('GET', `/albums/${album.id}`)).json;
    assert.ok(
      after.shots.every((shot: Json) => shot.status === 'pending' && shot.image_url === null && shot.attempts === 0),
    );
  });

  it('GET /events resumes after Last-Event-ID and serves a client of another API process', async () => {
    const { api } = stack;
    const other = await startTestApi({ redisUrl: stack.redis.url, store: api.store, config: { sseKeepAliveMs: 200 } });
    const remote = await followEvents(other, { key: api.adminKey });
    try {
      const album = await anchoredAlbum({ subject: 'a silver watch', directions: [{ name: 'x' }, { name: 'y' }] });
      await api.call('POST', `/albums/${album.id}/shots`);
      await waitForEvent(follower, album.id, 'album.completed');
      await waitForEvent(remote, album.id, 'album.completed');
      const here = eventsOf(follower, album.id);
      assert.deepEqual(eventsOf(remote, album.id), here, 'the same events, ids and order on the other process');

      const middle = here[2]!;
      const resumed = await followEvents(api, { lastEventId: middle.id });
      try {
        await waitForEvent(resumed, album.id, 'album.completed');
        assert.deepEqual(eventsOf(resumed, album.id), here.slice(3), 'exactly the events after Last-Event-ID');
      } finally {
        resumed.close();
      }
      const fromStart = await followEvents(api, { lastEventId: '0' });
      try {
        await waitForEvent(fromStart, album.id, 'album.completed');
        assert.deepEqual(eventsOf(fromStart, album.id), here);
      } finally {
        fromStart.close();
      }
      const bad = await api.call('GET', '/events', { headers: { 'last-event-id': 'nonsense' } });
      assert.equal(bad.status, 400);
    } finally {
      remote.close();
      await other.close();
    }
  });

  it("albums and their events belong to the key's user", async () => {
    const { api } = stack;
    const user = await api.call('POST', '/users', { body: { name: 'someone-else' } });
    const key = (
      await api.call('POST', '/keys', { body: { name: 'theirs', role: 'developer', user_id: user.json.id } })
    ).json.key as string;
    const theirs = await followEvents(api, { key });
    try {
      const album = await anchoredAlbum({ subject: 'a private project', directions: [{ name: 'one' }] });
      for (const [method, path] of [
        ['GET', ''],
        ['DELETE', ''],
        ['POST', '/anchor'],
        ['POST', '/shots'],
        ['DELETE', '/shots'],
        ['POST', '/shots/0'],
      ] as const) {
        const answer = await api.call(method, `/albums/${album.id}${path}`, { key });
        assert.equal(answer.status, 404, `${method} ${path} by another user`);
      }
      const image = await fetch(api.baseUrl + album.anchor.url, { headers: { 'x-api-key': key } });
      assert.equal(image.status, 404);
      const listed = await api.call('GET', '/albums', { key });
      assert.deepEqual(listed.json.items, []);
      const mine = await createAlbum(api, { subject: 'their own', directions: [{ name: 'one' }] }, key);
      assert.deepEqual(
        (await api.call('GET', '/albums', { key })).json.items.map((item: Json) => item.id),
        [mine.id],
      );
      assert.ok(!(await api.call('GET', '/albums')).json.items.some((item: Json) => item.id === mine.id));
      const accepted = await api.call('POST', `/albums/${mine.id}/anchor`, { key });
      assert.equal(accepted.status, 202);
      await waitForEvent(theirs, mine.id, 'anchor.completed');
      assert.equal(eventsOf(follower, mine.id).length, 0, "another user's events are not on this channel");
      assert.equal(eventsOf(theirs, album.id).length, 0);
    } finally {
      theirs.close();
    }
  });
});
