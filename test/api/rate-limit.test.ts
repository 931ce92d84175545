import assert from 'node:assert/strict';
import { Redis } from 'ioredis';
import { RateLimiterRedis } from 'rate-limiter-flexible';
import { configFromEnv } from '../../api/config.js';
import { rateLimitPerSecondDefault } from '../../api/limits.js';
import { startTestApi, useApiOnRedis } from './harness.js';
import type { CallResult } from './harness.js';

const ratePerSecond = 20;

async function sleepUntil(targetMs: number): Promise<void> {
  const waitMs = targetMs - performance.now();
  if (waitMs > 0) await new Promise((resolve) => setTimeout(resolve, waitMs));
}

async function burst(count: number, send: () => Promise<boolean>): Promise<number> {
  const results = await Promise.all(Array.from({ length: count }, send));
  return results.filter(Boolean).length;
}

/**
 * edgeSchedule sends 1 request at t0, limit-1 at t0+800 ms (inside the fixed window that t0 opened) and
 * `limit` at t0+1200 ms (inside the next one). A fixed window admits all 2*limit-1 of the last two bursts; a
 * limit of `limit` per second admits `limit`. t0 is taken after the first answer for a limiter behind HTTP
 * (so that Redis saw it before t0) and before the call for a direct one (so that its window opened after t0).
 */
async function edgeSchedule(
  send: () => Promise<boolean>,
  t0After: boolean,
): Promise<{ admittedAtEdge: number; spanMs: number }> {
  const sentMs = performance.now();
  assert.equal(await burst(1, send), 1);
  const t0 = t0After ? performance.now() : sentMs;
  await sleepUntil(t0 + 800);
  const edgeStart = performance.now();
  const before = await burst(ratePerSecond - 1, send);
  await sleepUntil(t0 + 1200);
  const after = await burst(ratePerSecond, send);
  return { admittedAtEdge: before + after, spanMs: performance.now() - edgeStart };
}

describe('api: rate limiting (sliding window in Redis)', function () {
  this.timeout(30_000);
  const setup = useApiOnRedis({ config: { rateLimitPerSecond: ratePerSecond } });

  it('answers 429 RATE_LIMITED past the rate, with Retry-After and RateLimit-* headers', async () => {
    const key = (await setup.api.call('POST', '/keys', { body: { name: 'burst' } })).json.key as string;
    const startMs = performance.now();
    const results: CallResult[] = await Promise.all(
      Array.from({ length: ratePerSecond + 5 }, () => setup.api.call('GET', '/projects', { key })),
    );
    assert.ok(performance.now() - startMs < 1000, 'the burst must fit in one window to prove anything');
    const admitted = results.filter((result) => result.status === 200);
    const limited = results.filter((result) => result.status === 429);
    assert.equal(admitted.length, ratePerSecond);
    assert.equal(limited.length, 5);
    for (const result of limited) {
      assert.equal(result.json.code, 'RATE_LIMITED');
      assert.ok(Number(result.headers.get('retry-after')) >= 1);
      assert.equal(result.headers.get('ratelimit-limit'), String(ratePerSecond));
      assert.equal(result.headers.get('ratelimit-remaining'), '0');
      assert.ok(Number(result.headers.get('ratelimit-reset')) >= 0);
    }
    const remaining = admitted.map((result) => Number(result.headers.get('ratelimit-remaining'))).sort((a, b) => a - b);
    assert.deepEqual(
      remaining,
      Array.from({ length: ratePerSecond }, (_unused, index) => index),
    );
  });

  it('holds a burst straddling a window edge to the limit (a fixed window would admit about twice)', async () => {
    const key = (await setup.api.call('POST', '/keys', { body: { name: 'edge' } })).json.key as string;
    const ours = await edgeSchedule(
      async () => (await setup.api.call('GET', '/projects', { key })).status === 200,
      true,
    );
    assert.ok(ours.spanMs < 1000, `the edge bursts must fit in one window to prove anything (${ours.spanMs} ms)`);
    assert.equal(
      ours.admittedAtEdge,
      ratePerSecond - 1 + 1,
      'within one second only the t0 slot freed up, so one request of the late burst is admitted',
    );

    // The same schedule against rate-limiter-flexible's Redis limiter, a fixed window, on the same Redis.
    const client = new Redis(setup.redis.url);
    try {
      const fixed = new RateLimiterRedis({ storeClient: client, points: ratePerSecond, duration: 1, keyPrefix: 'cmp' });
      const theirs = await edgeSchedule(
        () =>
          fixed.consume('edge').then(
            () => true,
            () => false,
          ),
        false,
      );
      assert.ok(
        theirs.admittedAtEdge > ratePerSecond * 1.5,
        `a fixed window lets ~2x through at the edge (admitted ${theirs.admittedAtEdge})`,
      );
    } finally {
      client.disconnect();
    }
  });

  it('counts one key across every API process sharing the Redis (cluster-wide)', async () => {
    const second = await startTestApi({ redisUrl: setup.redis.url, config: { rateLimitPerSecond: ratePerSecond } });
    try {
      // The burst proves something only if it fits in one window; on a loaded machine it may not, so it is tried
      // again with a fresh key (a fresh count), a bounded number of times.
      let fitted = false;
      for (let attempt = 0; attempt < 5 && !fitted; attempt++) {
        // Same store contents are not needed: the limit is keyed by key id, so create the key in both stores.
        const key = (await setup.api.call('POST', '/keys', { body: { name: `shared-${attempt}` } })).json as {
          key: string;
          record: { id: string };
        };
        const record = await setup.api.store.get(`keys/${key.record.id}`);
        const index = await setup.api.store.list('keys-by-hash/');
        await second.store.put(`keys/${key.record.id}`, record!.value);
        for (const entry of index.entries) await second.store.put(entry.key, entry.value);
        const startMs = performance.now();
        const statuses = await Promise.all(
          Array.from({ length: 30 }, (_unused, i) =>
            (i % 2 === 0 ? setup.api : second)
              .call('GET', '/projects', { key: key.key })
              .then((result) => result.status),
          ),
        );
        if (performance.now() - startMs >= 1000) continue;
        fitted = true;
        assert.equal(statuses.filter((status) => status === 200).length, ratePerSecond, 'not 2 × the rate');
      }
      assert.ok(fitted, 'the burst must fit in one window to prove anything (5 tries)');
    } finally {
      await second.close();
    }
  });
});

describe('api: rate limiting without Redis', () => {
  it('still limits per process with the same algorithm', async () => {
    const api = await startTestApi({ config: { rateLimitPerSecond: 5 } });
    try {
      const statuses = await Promise.all(
        Array.from({ length: 8 }, () => api.call('GET', '/projects').then((r) => r.status)),
      );
      assert.equal(statuses.filter((status) => status === 200).length, 5);
      assert.equal(statuses.filter((status) => status === 429).length, 3);
    } finally {
      await api.close();
    }
  });

  it('reads SVC_RATE_LIMIT_RPS and defaults to the documented rate', () => {
    assert.equal(configFromEnv({}).rateLimitPerSecond, rateLimitPerSecondDefault);
    assert.equal(rateLimitPerSecondDefault, 50);
    assert.equal(configFromEnv({ SVC_RATE_LIMIT_RPS: '7' }).rateLimitPerSecond, 7);
    assert.throws(() => configFromEnv({ SVC_RATE_LIMIT_RPS: 'fast' }), /SVC_RATE_LIMIT_RPS/);
    assert.throws(() => configFromEnv({ SVC_RATE_LIMIT_RPS: '0' }), /SVC_RATE_LIMIT_RPS/);
  });
});
