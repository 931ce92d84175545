// The API on a Redis that fails over (test/api/sentinel-harness.ts: a primary, a replica, three sentinels, all
// real redis-server processes): the primary is SIGKILLed while album jobs and agent runs are being queued. Every
// request the API acknowledged (202) ends complete — albums' anchors ready, runs succeeded; requests answered
// 503 during the failover are repeated, as their error says is safe. The rate limit stays cluster-wide on the
// new primary, and the SSE stream of album events resumes from its Last-Event-ID with nothing missed.
import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startAlbumWorker } from '../../api/albums/album-worker.js';
import type { AlbumWorker } from '../../api/albums/album-worker.js';
import { ProceduralImageGenerator } from '../../api/images/procedural-generator.js';
import { parseRedisUrl, redisAddresses } from '../../api/redis/redis-target.js';
import { redactRedisUrl } from '../../api/redis/local-redis.js';
import { startAgentWorker } from '../../api/runs/agent-worker.js';
import type { AgentWorker } from '../../api/runs/agent-worker.js';
import { createAlbum, followEvents } from '../albums/helpers.js';
import type { EventFollower, SseEvent } from '../albums/helpers.js';
import { startTestApi, waitFor } from './harness.js';
import type { CallResult, TestApi } from './harness.js';
import { readSse } from './run-events.js';
import { startSentinelRedis } from './sentinel-harness.js';
import type { SentinelRedis } from './sentinel-harness.js';

/** acceptedAfterRepeats sends a request until it is acknowledged (202), repeating it on 503 (bounded). */
async function acceptedAfterRepeats(send: () => Promise<CallResult>, repeats: { count: number }): Promise<CallResult> {
  const deadline = Date.now() + 150_000;
  for (;;) {
    const result = await send();
    if (result.status !== 503 || Date.now() > deadline) return result;
    assert.equal(result.json.code, 'QUEUE_UNAVAILABLE', result.text);
    repeats.count++;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe('api: Redis URLs (redis-target.ts)', () => {
  it('reads one server or a Sentinel URL, refuses a malformed one by name, and never shows a password', () => {
    assert.equal(parseRedisUrl('redis://:pw@127.0.0.1:6379').kind, 'server');
    const target = parseRedisUrl(
      'redis+sentinel://:pw@a:26379,b:26379,[::1]:26379/main?sentinelPassword=sp&replicasToAck=2',
    );
    assert.deepEqual(target.kind === 'sentinel' && target.sentinels.map((s) => `${s.host}:${s.port}`), [
      'a:26379',
      'b:26379',
      '::1:26379',
    ]);
    assert.equal(target.replicasToAck, 2);
    assert.throws(() => parseRedisUrl('redis+sentinel://a:26379/main?bogus=1'), /unknown Redis URL parameter "bogus"/);
    assert.throws(() => parseRedisUrl('redis+sentinel://a/main'), /a sentinel is host:port/);
    assert.throws(() => parseRedisUrl('http://a'), /a Redis URL is/);
    const shown = redactRedisUrl('redis+sentinel://:pw@a:26379/main?sentinelPassword=sp');
    assert.ok(!shown.includes('pw') && !shown.includes('=sp'), shown);
  });
});

// Minutes of real servers and a failover: `make sentinel-test` (SVC_SENTINEL_TEST=1), not the default run. In the
// full suite on a loaded machine one run's SSE stream once never ended: its `complete` event (appended by the worker
// without waiting for a replica) can be lost in the failover — a gap to close (docs/operations.md).
(process.env.SVC_SENTINEL_TEST === '1' ? describe : describe.skip)(
  'api: Redis behind Sentinel fails over under load (primary, replica, three sentinels)',
  function () {
    this.timeout(240_000);
    let sentinel: SentinelRedis;
    let api: TestApi;
    let albumWorker: AlbumWorker;
    let runWorker: AgentWorker;
    let workspace: string;

    before(async () => {
      sentinel = await startSentinelRedis();
      api = await startTestApi({ redisUrl: sentinel.url, config: { sseKeepAliveMs: 200 } });
      albumWorker = await startAlbumWorker({
        redisUrl: sentinel.url,
        store: api.store,
        generator: new ProceduralImageGenerator(),
        backoffMs: 40,
        concurrency: 4,
      });
      // One run at a time: runs of one project share its workspace, which each run's uid owns while it runs.
      runWorker = await startAgentWorker({
        redisUrl: sentinel.url,
        store: api.store,
        concurrency: 1,
        runTimeoutMs: 20_000,
      });
      workspace = mkdtempSync(path.join(os.tmpdir(), 'svc-sentinel-ws-'));
      writeFileSync(path.join(workspace, 'agent.sh'), '#!/bin/sh\necho "prompt: $1"\nsleep 0.2\necho done\n');
      chmodSync(path.join(workspace, 'agent.sh'), 0o755);
    });
    after(async () => {
      await runWorker?.close();
      await albumWorker?.close();
      await api?.close();
      await sentinel?.stop();
      if (workspace) rmSync(workspace, { recursive: true, force: true });
    });

    it('reads a redis+sentinel URL, names every sentinel for egress denial and never shows its passwords', () => {
      const target = parseRedisUrl(sentinel.url);
      assert.equal(target.kind, 'sentinel');
      assert.equal(target.kind === 'sentinel' && target.sentinels.length, 3);
      assert.equal(target.replicasToAck, 1);
      assert.equal(redisAddresses(sentinel.url).length, 3);
      assert.ok(!redactRedisUrl(sentinel.url).includes(sentinel.password));
      assert.doesNotMatch(redactRedisUrl(sentinel.url), /sentinelPassword=[0-9a-f]/);
    });

    it('completes every acknowledged album job and run across a primary kill; SSE resumes; the rate limit holds', async () => {
      const albumCount = 8;
      const runCount = 6;
      const repeats = { count: 0 };
      let follower: EventFollower = await followEvents(api, {}, 180_000);
      const projectId = (
        await api.call('POST', '/projects', { body: { name: 'sentinel', workspace, command: ['./agent.sh'] } })
      ).json.id as string;
      const albumIds: string[] = [];
      const runs: Array<{ runId: string; streamUrl: string }> = [];
      let recovered: Promise<number> | undefined;
      for (let index = 0; index < Math.max(albumCount, runCount); index++) {
        // Halfway through the load, the primary dies (SIGKILL: no goodbye to the sentinels or the replica).
        // Until a replica is back, the new primary cannot have a job replicated: requests answer 503 (safe to
        // repeat) rather than acknowledge what one more failure could lose. The killed server is restarted as its
        // supervisor would, and the sentinels make it the new primary's replica.
        if (index === Math.floor(albumCount / 2)) {
          const killedPort = await sentinel.killPrimary();
          recovered = sentinel.waitForFailover(killedPort, 90_000).then((newPort) => {
            assert.notEqual(newPort, killedPort);
            sentinel.restart(killedPort);
            return newPort;
          });
        }
        if (index < albumCount) {
          const album = await createAlbum(api, {
            subject: `fox ${index}`,
            template: 'ProductShoot',
            width_px: 64,
            height_px: 64,
          });
          const accepted = await acceptedAfterRepeats(() => api.call('POST', `/albums/${album.id}/anchor`), repeats);
          assert.equal(accepted.status, 202, accepted.text);
          albumIds.push(album.id as string);
        }
        if (index < runCount) {
          const accepted = await acceptedAfterRepeats(
            () => api.call('POST', `/projects/${projectId}/commands`, { body: { prompt: `p${index}` } }),
            repeats,
          );
          assert.equal(accepted.status, 202, accepted.text);
          runs.push(accepted.json as { runId: string; streamUrl: string });
        }
      }
      await recovered;

      // SSE: a client whose stream broke (or not) reconnects with the last id it saw and gets the rest.
      const seen: SseEvent[] = [...follower.events];
      follower.close();
      follower = await followEvents(api, { lastEventId: seen.at(-1)?.id ?? '0' }, 180_000);
      try {
        const anchorsReady = async (): Promise<string[]> => {
          const all = [...seen, ...follower.events];
          return albumIds.filter(
            (id) => !all.some((event) => event.data?.albumId === id && event.event === 'anchor.completed'),
          );
        };
        await waitFor(anchorsReady, (missing) => missing.length === 0, 120_000, 100);
        const resumedIds = follower.events.map((event) => event.id);
        assert.equal(
          new Set([...seen.map((event) => event.id), ...resumedIds]).size,
          seen.length + resumedIds.length,
          'no event twice',
        );
        for (const id of albumIds) {
          const album = (await api.call('GET', `/albums/${id}`)).json;
          assert.equal(album.anchor.state, 'ready', `album ${id}`);
          // A request repeated after a 503 whose job had been queued after all, and ran, starts a new generation
          // (as any later anchor request does): each generation is announced once, the current one included.
          const generations = [...seen, ...follower.events]
            .filter((event) => event.data?.albumId === id && event.event === 'anchor.completed')
            .map((event) => event.data.generation as number);
          assert.equal(new Set(generations).size, generations.length, `album ${id}: a generation announced twice`);
          assert.ok(generations.includes(album.anchor.generation), `album ${id}: its current anchor was announced`);
        }
      } finally {
        follower.close();
      }

      for (const run of runs) {
        const read = await readSse(api, run.streamUrl, {}, 120_000);
        const complete = read.events.find((event) => event.event === 'complete');
        assert.ok(complete, `run ${run.runId} ended (events: ${read.events.map((event) => event.event).join(', ')})`);
        assert.equal(
          (complete.data as { status: string }).status,
          'succeeded',
          `run ${run.runId}: ${JSON.stringify(read.events)}`,
        );
      }
      process.stdout.write(
        `      albums acknowledged ${albumIds.length}, runs acknowledged ${runs.length}, all complete (lost 0); ` +
          `requests repeated after a 503 during the failover: ${repeats.count}\n`,
      );
    });

    it('keeps one rate limit for every API process on the new primary', async () => {
      const ratePerSecond = 20;
      const first = await startTestApi({ redisUrl: sentinel.url, config: { rateLimitPerSecond: ratePerSecond } });
      const second = await startTestApi({ redisUrl: sentinel.url, config: { rateLimitPerSecond: ratePerSecond } });
      try {
        const key = (await first.call('POST', '/keys', { body: { name: 'shared' } })).json as {
          key: string;
          record: { id: string };
        };
        const record = await first.store.get(`keys/${key.record.id}`);
        await second.store.put(`keys/${key.record.id}`, record!.value);
        for (const entry of (await first.store.list('keys-by-hash/')).entries)
          await second.store.put(entry.key, entry.value);
        // Bursts of 30 split over both processes, a window apart: a per-process fallback would admit 30.
        const admitted = await waitFor(
          async () => {
            await new Promise((resolve) => setTimeout(resolve, 1_100));
            const statuses = await Promise.all(
              Array.from({ length: 30 }, (_unused, index) =>
                (index % 2 === 0 ? first : second).call('GET', '/projects', { key: key.key }).then((r) => r.status),
              ),
            );
            return statuses.filter((status) => status === 200).length;
          },
          (count) => count === ratePerSecond,
          20_000,
          0,
        );
        assert.equal(admitted, ratePerSecond);
      } finally {
        await first.close();
        await second.close();
      }
    });
  },
);
