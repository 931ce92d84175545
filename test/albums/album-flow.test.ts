// The album flow end to end: a real API server, real Redis (BullMQ, streams, pub/sub), the album worker
// with the built-in generator, images decoded with pngjs (not the library that made them).
import assert from 'node:assert/strict';
import { blake3 } from '@noble/hashes/blake3.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { templateNames, templates } from '../../api/albums/templates.js';
import type { AlbumStack, EventFollower, Json, SseEvent } from './helpers.js';
import {
  createAlbum,
  decodePng,
  eventsOf,
  fetchImage,
  followEvents,
  startAlbumStack,
  waitForEvent,
} from './helpers.js';

/** streamIdBefore compares Redis stream ids (<ms>-<seq>) numerically. */
const streamIdBefore = (a: string, b: string) => {
  const [aMs, aSeq] = a.split('-').map(BigInt) as [bigint, bigint];
  const [bMs, bSeq] = b.split('-').map(BigInt) as [bigint, bigint];
  return aMs < bMs || (aMs === bMs && aSeq < bSeq);
};

/** checkImage fetches an image, decodes it independently and checks its size and its content address. */
async function checkImage(stack: AlbumStack, url: string, widthPx: number, heightPx: number): Promise<Buffer> {
  const bytes = await fetchImage(stack.api, url);
  const png = decodePng(bytes);
  assert.equal(png.width, widthPx, `${url} width`);
  assert.equal(png.height, heightPx, `${url} height`);
  assert.equal(url.split('/').at(-1), bytesToHex(blake3(bytes)), 'the URL names the BLAKE3 of the bytes');
  return bytes;
}

async function generateAnchor(
  stack: AlbumStack,
  follower: EventFollower,
  albumId: string,
  seed?: number,
): Promise<Json> {
  const accepted = await stack.api.call(
    'POST',
    `/albums/${albumId}/anchor`,
    seed === undefined ? {} : { body: { seed } },
  );
  assert.equal(accepted.status, 202, accepted.text);
  const generation = accepted.json.album.anchor.generation;
  await waitForEvent(follower, albumId, 'anchor.completed', (event) => event.data.generation === generation);
  return (await stack.api.call('GET', `/albums/${albumId}`)).json;
}

async function generateAllShots(stack: AlbumStack, follower: EventFollower, albumId: string): Promise<Json> {
  const before = eventsOf(follower, albumId).filter((event) => event.event === 'album.completed').length;
  const accepted = await stack.api.call('POST', `/albums/${albumId}/shots`);
  assert.equal(accepted.status, 202, accepted.text);
  await waitForEvent(
    follower,
    albumId,
    'album.completed',
    () => eventsOf(follower, albumId).filter((event) => event.event === 'album.completed').length > before,
  );
  return (await stack.api.call('GET', `/albums/${albumId}`)).json;
}

/** checkEventOrder: ids rise; anchor before shots; each shot starts before it ends; album.completed last. */
function checkEventOrder(events: SseEvent[], shotCount: number): void {
  events.forEach((event, index) => {
    if (index > 0) assert.ok(streamIdBefore(events[index - 1]!.id, event.id), 'event ids rise');
  });
  const names = events.map((event) => event.event);
  assert.deepEqual(names.slice(0, 2), ['anchor.started', 'anchor.completed']);
  assert.equal(names.at(-1), 'album.completed');
  assert.equal(names.filter((name) => name === 'album.completed').length, 1);
  for (let index = 0; index < shotCount; index++) {
    const ofShot = events.filter((event) => event.data.index === index).map((event) => event.event);
    assert.deepEqual(ofShot, ['shot.started', 'shot.completed'], `shot ${index}`);
  }
}

describe('albums: generation end to end (real Redis, BullMQ, built-in generator)', function () {
  this.timeout(120_000);
  let stack: AlbumStack;
  let follower: EventFollower;

  before(async () => {
    stack = await startAlbumStack();
    follower = await followEvents(stack.api);
  });
  after(async () => {
    follower?.close();
    await stack?.close();
  });

  for (const template of templateNames) {
    it(`${template}: 422 before the anchor, then the anchor, then every shot complete as a PNG of the album's size`, async () => {
      const { api } = stack;
      const album = await createAlbum(api, { subject: `subject for ${template}: a teal ceramic mug`, template });
      assert.equal(album.anchor.state, 'none');
      assert.equal(album.shots.length, templates[template].directions.length);
      assert.ok(album.shots.every((shot: Json) => shot.status === 'pending' && shot.image_url === null));

      const early = await api.call('POST', `/albums/${album.id}/shots`);
      assert.equal(early.status, 422);
      assert.equal(early.json.code, 'ANCHOR_REQUIRED');
      const earlyOne = await api.call('POST', `/albums/${album.id}/shots/0`);
      assert.equal(earlyOne.status, 422);
      assert.equal(earlyOne.json.code, 'ANCHOR_REQUIRED');

      const anchored = await generateAnchor(stack, follower, album.id);
      assert.equal(anchored.anchor.state, 'ready');
      assert.match(anchored.anchor.url, new RegExp(`^/albums/${album.id}/images/[0-9a-f]{64}$`));
      await checkImage(stack, anchored.anchor.url, 160, 128);

      const done = await generateAllShots(stack, follower, album.id);
      assert.deepEqual(done.shot_counts, { pending: 0, generating: 0, complete: album.shots.length, failed: 0 });
      const hashes = new Set<string>();
      for (const shot of done.shots) {
        assert.equal(shot.status, 'complete');
        assert.equal(shot.error, null);
        await checkImage(stack, shot.image_url, 160, 128);
        hashes.add(shot.image_url);
      }
      assert.equal(hashes.size, done.shots.length, 'every direction gives its own image');

      const events = eventsOf(follower, album.id);
      checkEventOrder(events, album.shots.length);
      assert.deepEqual(events.at(-1)!.data, {
        albumId: album.id,
        complete: album.shots.length,
        failed: 0,
        at: events.at(-1)!.data.at,
      });
      const completed = events.filter((event) => event.event === 'shot.completed');
      for (const event of completed) assert.equal(event.data.imageUrl, done.shots[event.data.index].image_url);
    });
  }

  it('marks one failing shot failed with its reason while the rest complete; a retryable failure is retried', async () => {
    const { api, generator } = stack;
    generator.failShots.set('Broken', { retryable: false, times: 1 });
    generator.failShots.set('Flaky', { retryable: true, times: 1 });
    generator.failShots.set('Hopeless', { retryable: true, times: 3 });
    const album = await createAlbum(api, {
      subject: 'a purple robot fox mascot',
      directions: [
        { name: 'Fine', framing: 'full' },
        { name: 'Broken' },
        { name: 'Flaky', lighting: 'rim' },
        { name: 'Hopeless' },
      ],
    });
    await generateAnchor(stack, follower, album.id);
    const done = await generateAllShots(stack, follower, album.id);
    assert.deepEqual(
      done.shots.map((shot: Json) => shot.status),
      ['complete', 'failed', 'complete', 'failed'],
    );
    assert.equal(done.shots[1].error, 'INJECTED: injected failure for Broken');
    assert.equal(done.shots[1].attempts, 1, 'a failure that is not retryable is not retried');
    assert.equal(done.shots[1].image_url, null);
    assert.equal(done.shots[2].attempts, 2);
    assert.equal(done.shots[2].error, null);
    assert.equal(done.shots[3].attempts, 3, 'retried until the attempts ran out');
    assert.equal(done.shots[3].error, 'INJECTED: injected failure for Hopeless');

    const events = eventsOf(follower, album.id);
    const failed = events.filter((event) => event.event === 'shot.failed').map((event) => event.data.index);
    assert.deepEqual(failed.sort(), [1, 3]);
    assert.equal(events.filter((event) => event.event === 'shot.retrying' && event.data.index === 2).length, 1);
    assert.equal(events.filter((event) => event.event === 'shot.retrying' && event.data.index === 3).length, 2);
    assert.deepEqual(
      events
        .filter((event) => event.event === 'album.completed')
        .map((event) => [event.data.complete, event.data.failed]),
      [[2, 2]],
    );

    // Regenerate the failed shot alone: it completes and the album is complete again.
    const again = await api.call('POST', `/albums/${album.id}/shots/1`);
    assert.equal(again.status, 202, again.text);
    assert.equal(again.json.queued, true);
    assert.equal(again.json.album.shots[1].status, 'pending');
    assert.equal(again.json.album.shots[1].error, null);
    await waitForEvent(follower, album.id, 'album.completed', (event) => event.data.failed === 1);
    const regenerated = (await api.call('GET', `/albums/${album.id}`)).json;
    assert.equal(regenerated.shots[1].status, 'complete');
    await checkImage(stack, regenerated.shots[1].image_url, 160, 128);
    assert.equal(regenerated.shots[0].image_url, done.shots[0].image_url, 'the other shots are untouched');
  });

  it('regenerates one complete shot as another take (variation), and the same variation gives the same bytes', async () => {
    const { api } = stack;
    const album = await createAlbum(api, { subject: 'a red leather bag', template: 'ProductShoot' });
    await generateAnchor(stack, follower, album.id);
    const first = await generateAllShots(stack, follower, album.id);
    const original = first.shots[2].image_url;

    const take = async (variation: number) => {
      const count = eventsOf(follower, album.id).filter(
        (event) => event.event === 'shot.completed' && event.data.index === 2,
      ).length;
      const accepted = await api.call('POST', `/albums/${album.id}/shots/2`, { body: { variation } });
      assert.equal(accepted.status, 202, accepted.text);
      await waitForEvent(
        follower,
        album.id,
        'shot.completed',
        () =>
          eventsOf(follower, album.id).filter((event) => event.event === 'shot.completed' && event.data.index === 2)
            .length > count,
      );
      return (await api.call('GET', `/albums/${album.id}`)).json.shots[2];
    };
    const other = await take(1);
    assert.equal(other.variation, 1);
    assert.notEqual(other.image_url, original, 'another variation is another image');
    const back = await take(0);
    assert.equal(back.image_url, original, 'variation 0 again gives the very same bytes');
  });

  it('a new anchor resets every shot to pending without an image; shots then follow the new anchor', async () => {
    const { api } = stack;
    const album = await createAlbum(api, { subject: 'a woman with a green scarf', template: 'PortraitSession' });
    const anchored = await generateAnchor(stack, follower, album.id);
    const first = await generateAllShots(stack, follower, album.id);

    const reset = await api.call('POST', `/albums/${album.id}/anchor`, { body: { seed: 7 } });
    assert.equal(reset.status, 202);
    assert.equal(reset.json.album.anchor.generation, anchored.anchor.generation + 1);
    assert.equal(reset.json.album.anchor.url, null);
    assert.ok(reset.json.album.shots.every((shot: Json) => shot.status === 'pending' && shot.image_url === null));
    const shotsNow = await api.call('POST', `/albums/${album.id}/shots`);
    assert.equal(shotsNow.status, 422, 'the new anchor is not ready yet');

    await waitForEvent(
      follower,
      album.id,
      'anchor.completed',
      (event) => event.data.generation === reset.json.album.anchor.generation,
    );
    const second = await generateAllShots(stack, follower, album.id);
    assert.notEqual(second.anchor.url, anchored.anchor.url, 'another seed, another anchor');
    second.shots.forEach((shot: Json, index: number) => assert.notEqual(shot.image_url, first.shots[index].image_url));
  });

  it('DELETE shots discards every result; DELETE album removes it and its images from view', async () => {
    const { api } = stack;
    const album = await createAlbum(api, {
      subject: 'a small blue owl',
      directions: [{ name: 'one' }, { name: 'two', angle: 'dutch' }],
    });
    await generateAnchor(stack, follower, album.id);
    const done = await generateAllShots(stack, follower, album.id);
    const deleted = await api.call('DELETE', `/albums/${album.id}/shots`);
    assert.equal(deleted.status, 200);
    assert.equal(deleted.json.discarded, 2);
    assert.ok(deleted.json.album.shots.every((shot: Json) => shot.status === 'pending' && shot.image_url === null));
    assert.equal(deleted.json.album.anchor.state, 'ready', 'the anchor stays');
    const gone = await fetch(api.baseUrl + done.shots[0].image_url, { headers: { 'x-api-key': api.adminKey } });
    assert.equal(gone.status, 404, 'an image the album no longer shows is not served');

    assert.equal((await api.call('DELETE', `/albums/${album.id}`)).status, 204);
    assert.equal((await api.call('GET', `/albums/${album.id}`)).status, 404);
    assert.equal((await api.call('DELETE', `/albums/${album.id}`)).status, 404);
    const anchorGone = await fetch(api.baseUrl + done.anchor.url, { headers: { 'x-api-key': api.adminKey } });
    assert.equal(anchorGone.status, 404);
  });
});
