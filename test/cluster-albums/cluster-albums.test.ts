// Albums on a real three-node cluster (child processes, mutual TLS, one shared redis-server), through the SDK.
// Every template: 422 before the anchor, the anchor, every shot complete as a PNG of the album's size (decoded
// with pngjs), events on user:<userId> in order as read over GET /events from a node the album was not
// created on, every image served by every node with the same bytes under its BLAKE3. Then a node is killed
// with SIGKILL while shots are generating, first a follower whose worker holds running jobs, then the leader:
// every job still finishes on the survivors, within the workers' lock + stalled-check bound; each shot ends
// `complete` with one shot.completed; one album.completed; nothing acknowledged before the kill is lost.
//
// Each node's album worker is the child harness's (AlbumWorkerKnobs): the built-in generator held back by
// SHOT_DELAY_MS per shot, one job at a time, so that a kill lands mid-album, and short BullMQ locks.
import assert from 'node:assert/strict';
import type { Album, NewAlbum, SvcClient } from '../../sdk/src/index.js';
import { SvcApiError } from '../../sdk/src/index.js';
import { templateNames, templates } from '../../api/albums/templates.js';
import { waitFor } from '../node/harness.js';
import { ApiCluster, type AlbumWorkerKnobs } from '../cluster-api/api-cluster.js';
import type { AlbumEvent } from './helpers.js';
import { UserEvents, albumJobCounts, checkPng, imageBytes, newUser, readAlbum, streamIdBefore } from './helpers.js';

/** SHOT_DELAY_MS holds back each shot, so that at a kill some shots are complete and some are generating. */
const SHOT_DELAY_MS = 900;
/** LOCK_DURATION_MS and STALLED_INTERVAL_MS are the workers' BullMQ settings here (production: limits.ts). */
const LOCK_DURATION_MS = 2_000;
const STALLED_INTERVAL_MS = 500;
/**
 * RECOVERY_MS_MAX bounds kill → the killed worker's shot complete elsewhere: its lock runs out, a stalled
 * check finds it, a survivor draws it again; with a margin for this loaded machine and the leader's election.
 */
const RECOVERY_MS_MAX = LOCK_DURATION_MS + 2 * STALLED_INTERVAL_MS + SHOT_DELAY_MS + 8_000;
const knobs: AlbumWorkerKnobs = {
  shotDelayMs: SHOT_DELAY_MS,
  concurrency: 1,
  lockDurationMs: LOCK_DURATION_MS,
  stalledIntervalMs: STALLED_INTERVAL_MS,
  backoffMs: 200,
};
/** Small images keep the pixel work (on the nodes' event loops) light; the size is still checked exactly. */
const WIDTH_PX = 96;
const HEIGHT_PX = 80;
const NAMES = ['a', 'b', 'c'];

/** checkEventOrder: ids rise; the anchor first; per shot, starts then one completion; album.completed once, last. */
function checkEventOrder(events: AlbumEvent[], shotCount: number): void {
  events.forEach((event, index) => {
    if (index > 0) assert.ok(streamIdBefore(events[index - 1]!.id, event.id), `event ids rise at ${index}`);
  });
  const names = events.map((event) => event.event);
  assert.deepEqual(names.slice(0, 2), ['anchor.started', 'anchor.completed']);
  assert.equal(names.filter((name) => name === 'album.completed').length, 1, 'one album.completed');
  assert.equal(names.at(-1), 'album.completed', 'album.completed comes last');
  for (let index = 0; index < shotCount; index++) {
    const ofShot = events.filter((event) => event.data.index === index).map((event) => event.event);
    // A shot whose worker died starts again (shot.started per attempt, as designed); it completes once.
    assert.match(ofShot.join(' '), /^(shot\.started )+shot\.completed$/, `shot ${index}: ${ofShot.join(', ')}`);
  }
}

/** anchored creates an album on one node, checks the 422 before the anchor, and waits for the anchor. */
async function anchored(client: SvcClient, events: UserEvents, body: NewAlbum): Promise<Album> {
  const album = await client.createAlbum({ body: { width_px: WIDTH_PX, height_px: HEIGHT_PX, ...body } });
  const refused = await client.generateShots({ path: { id: album.id } }).then(
    () => null,
    (error: unknown) => error,
  );
  assert.ok(
    refused instanceof SvcApiError && refused.status === 422 && refused.code === 'ANCHOR_REQUIRED',
    String(refused),
  );
  const accepted = await client.generateAnchor({ path: { id: album.id }, body: {} });
  assert.equal(accepted.album.anchor.state, 'pending');
  await events.waitFor(album.id, 'anchor.completed');
  return client.getAlbum({ path: { id: album.id } });
}

describe('cluster-albums: albums on a three-node cluster, through the SDK, with nodes killed mid-album', function () {
  this.timeout(240_000);
  const cluster = new ApiCluster();

  before(async () => {
    await cluster.start({ albumWorker: knobs });
  });
  after(async () => {
    await cluster.stop();
  });

  it('every template: 422 before the anchor, then every shot a PNG of its size, events in order on another node, images on every node', async () => {
    const leader = (await cluster.leaderName())!;
    const creator = NAMES.find((name) => name !== leader)!;
    const reader = NAMES.find((name) => name !== creator)!;
    const user = await newUser(cluster, leader, 'templates');
    const events = new UserEvents(cluster.client(reader, user.key));
    try {
      const client = cluster.client(creator, user.key);
      const albums = await Promise.all(
        templateNames.map(async (template) => {
          const album = await anchored(client, events, { subject: `a teal ceramic mug for ${template}`, template });
          assert.equal(album.shots.length, templates[template].directions.length);
          const accepted = await client.generateShots({ path: { id: album.id } });
          assert.deepEqual(
            accepted.queuedShots,
            album.shots.map((shot) => shot.index),
          );
          return album;
        }),
      );
      for (const album of albums) {
        await events.waitFor(album.id, 'album.completed');
        const done = await client.getAlbum({ path: { id: album.id } });
        assert.deepEqual(done.shot_counts, { pending: 0, generating: 0, complete: done.shots.length, failed: 0 });
        checkEventOrder(events.of(album.id), done.shots.length);
        const completedUrls = events
          .of(album.id)
          .filter((event) => event.event === 'shot.completed')
          .sort((x, y) => x.data.index! - y.data.index!)
          .map((event) => event.data.imageUrl);
        assert.deepEqual(
          completedUrls,
          done.shots.map((shot) => shot.image_url),
          'the events name the recorded images',
        );
        for (const url of [done.anchor.url!, ...done.shots.map((shot) => shot.image_url!)]) {
          const fromEach = await Promise.all(
            NAMES.map((name) => imageBytes(cluster.client(name, user.key), album.id, url)),
          );
          checkPng(fromEach[0]!, url, WIDTH_PX, HEIGHT_PX);
          for (const bytes of fromEach.slice(1))
            assert.ok(bytes.equals(fromEach[0]!), `${url}: the same bytes from every node`);
        }
      }
      // Work was spread: every node's worker drew shots.
      const activity = await Promise.all(NAMES.map((name) => cluster.node(name).albumActivity()));
      assert.ok(
        activity.every((one) => one.shotsGenerated > 0),
        JSON.stringify(activity),
      );
    } finally {
      await events.close();
    }
  });

  /**
   * killMidAlbum starts an album's shots, waits until some are complete while `victim()`'s worker is drawing
   * one, kills it with SIGKILL, and checks that the survivors finish every shot, once.
   */
  async function killMidAlbum(label: string, pickVictim: (leader: string) => string): Promise<{ recoveryMs: number }> {
    const leader = (await cluster.leaderName())!;
    const victim = pickVictim(leader);
    const [creator, reader] = NAMES.filter((name) => name !== victim) as [string, string];
    const user = await newUser(cluster, creator, label);
    const events = new UserEvents(cluster.client(reader, user.key));
    try {
      const client = cluster.client(creator, user.key);
      const album = await anchored(client, events, {
        subject: 'a red fox in a green scarf',
        template: 'CharacterSheet',
      });
      const shotCount = album.shots.length;
      await client.generateShots({ path: { id: album.id } });

      // Kill once a shot is complete and the victim's worker is drawing another it began less than a third of
      // SHOT_DELAY_MS ago: mid-album, mid-job, with time left before that shot could finish (a shot polled near
      // its end could finish before the kill lands, and then no shot would be started again).
      let beforeKill: Album | undefined;
      await waitFor(
        async () => {
          const [inFlight, current] = await Promise.all([
            cluster.node(victim).albumActivity(),
            client.getAlbum({ path: { id: album.id } }),
          ]);
          beforeKill = current;
          const young = inFlight.youngestShotAgeMs !== null && inFlight.youngestShotAgeMs < SHOT_DELAY_MS / 3;
          return young && current.shot_counts.complete > 0;
        },
        `a complete shot while ${victim} draws one`,
        30_000,
      );
      await cluster.node(victim).kill9();
      const killedAt = Date.now();
      assert.ok(
        beforeKill!.shot_counts.complete < shotCount,
        `mid-album at the kill: ${JSON.stringify(beforeKill!.shot_counts)}`,
      );
      assert.ok(beforeKill!.shot_counts.generating > 0, 'some shots were generating at the kill');

      await events.waitFor(album.id, 'album.completed');
      const recoveryMs = Date.now() - killedAt;
      const done = await readAlbum(client, album.id);
      assert.deepEqual(done.shot_counts, { pending: 0, generating: 0, complete: shotCount, failed: 0 });
      checkEventOrder(events.of(album.id), shotCount);
      // The victim's shot was started again elsewhere: the kill landed in the middle of a job.
      const restarted = done.shots.filter((shot) => shot.attempts > 1);
      assert.ok(
        restarted.length > 0,
        `a shot started again after the kill: attempts ${done.shots.map((shot) => shot.attempts).join(',')}`,
      );
      assert.ok(recoveryMs < RECOVERY_MS_MAX, `recovered in ${recoveryMs} ms (bound ${RECOVERY_MS_MAX} ms)`);
      // Nothing acknowledged before the kill is lost: shots complete then keep their images.
      for (const shot of beforeKill!.shots.filter((one) => one.status === 'complete')) {
        assert.equal(done.shots[shot.index]!.image_url, shot.image_url, `shot ${shot.index} kept its image`);
      }
      for (const shot of done.shots) {
        const survivors = NAMES.filter((name) => name !== victim);
        const [first, second] = await Promise.all(
          survivors.map((name) => imageBytes(cluster.client(name, user.key), album.id, shot.image_url!)),
        );
        checkPng(first!, shot.image_url!, WIDTH_PX, HEIGHT_PX);
        assert.ok(first!.equals(second!), `${shot.image_url}: the same bytes from both survivors`);
      }
      // Every job finished: none waiting, running, delayed or failed in the shared queue.
      await waitFor(
        async () => {
          const counts = await albumJobCounts(cluster.redis!.url);
          return (
            counts.active === 0 &&
            counts.waiting === 0 &&
            counts.delayed === 0 &&
            counts.prioritized === 0 &&
            counts.failed === 0
          );
        },
        'the album queue to be empty with no failed job',
        15_000,
      );
      return { recoveryMs };
    } finally {
      await events.close();
    }
  }

  it('kill -9 of a follower whose worker is drawing a shot: the survivors finish every shot, each complete once', async () => {
    const victimOf = (leader: string) => NAMES.find((name) => name !== leader)!;
    const { recoveryMs } = await killMidAlbum('follower-kill', victimOf);
    process.stdout.write(`      follower killed → album.completed in ${recoveryMs} ms\n`);
    const victim = NAMES.find((name) => !cluster.node(name).running)!;
    await cluster.restart(victim);
  });

  it('kill -9 of the leader mid-album: a new leader, and the survivors finish every shot, each complete once', async () => {
    assert.equal(cluster.running().length, 3, 'the node killed before is back');
    const { recoveryMs } = await killMidAlbum('leader-kill', (leader) => leader);
    process.stdout.write(`      leader killed → album.completed in ${recoveryMs} ms\n`);
    assert.ok(await cluster.leaderName(), 'the survivors elected a leader');
  });
});
