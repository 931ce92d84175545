// LeasedLimiter (api/rate-limit/leased-limiter.ts) over a shared sliding window double with a fake clock:
// one process never admits more than the limit in any window; several processes sharing the window admit at
// most one slice per process more; and under load most requests are judged without asking the shared window.
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { LeasedLimiter } from '../../api/rate-limit/leased-limiter.js';
import type { RateGrant, RateLeaseSource } from '../../api/rate-limit/sliding-window.js';

const windowMs = 1000;

/** SharedWindow is the Redis script's logic over a fake clock: it records granted admissions at lease time. */
class SharedWindow implements RateLeaseSource {
  readonly log: number[] = [];
  leases = 0;
  constructor(
    private readonly limit: number,
    private readonly clock: { now: number },
  ) {}
  async lease(_subject: string, count: number): Promise<RateGrant> {
    this.leases++;
    const now = this.clock.now;
    while (this.log.length > 0 && this.log[0]! <= now - windowMs) this.log.shift();
    const granted = Math.max(0, Math.min(count, this.limit - this.log.length));
    for (let index = 0; index < granted; index++) this.log.push(now);
    return {
      granted,
      remaining: this.limit - this.log.length,
      resetMs: this.log.length > 0 ? this.log[0]! + windowMs - now : 0,
    };
  }
}

/** maxInAnyWindow is the most admissions any windowMs span holds. */
function maxInAnyWindow(times: number[]): number {
  const sorted = [...times].sort((a, b) => a - b);
  let best = 0;
  for (let start = 0, end = 0; end < sorted.length; end++) {
    while (sorted[end]! - sorted[start]! >= windowMs) start++;
    best = Math.max(best, end - start + 1);
  }
  return best;
}

describe('api: leased rate limit', () => {
  const settings = { sliceShareOfLimit: 0.05, sliceTokensMax: 64, leaseMs: 100 };

  it('admits at most the limit in any window in one process, and at most one slice per process more across processes', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 3 }),
        fc.integer({ min: 5, max: 60 }),
        fc.array(
          fc.record({
            gapMs: fc.integer({ min: 0, max: 120 }),
            process: fc.nat(),
            burst: fc.integer({ min: 1, max: 20 }),
          }),
          { minLength: 1, maxLength: 80 },
        ),
        async (processCount, limit, schedule) => {
          const clock = { now: 0 };
          const shared = new SharedWindow(limit, clock);
          const limiters = Array.from(
            { length: processCount },
            () => new LeasedLimiter(shared, limit, windowMs, settings, () => clock.now),
          );
          const admitted: number[][] = limiters.map(() => []);
          for (const step of schedule) {
            clock.now += step.gapMs;
            const which = step.process % processCount;
            const decisions = await Promise.all(
              Array.from({ length: step.burst }, () => limiters[which]!.consume('k')),
            );
            for (const decision of decisions) {
              if (decision.allowed) admitted[which]!.push(clock.now);
              assert.ok(decision.remaining >= 0 && decision.remaining <= limit);
            }
          }
          for (const times of admitted) assert.ok(maxInAnyWindow(times) <= limit, 'one process stays within the limit');
          const slice = Math.min(settings.sliceTokensMax, Math.max(1, Math.ceil(limit * settings.sliceShareOfLimit)));
          // A lease may ask for as many tokens as requests wait (one burst), so a process may hold that many.
          const heldMax = Math.max(slice, ...schedule.map((step) => step.burst));
          assert.ok(
            maxInAnyWindow(admitted.flat()) <= limit + processCount * Math.min(settings.sliceTokensMax, heldMax),
            'across processes at most what each held beyond the limit',
          );
        },
      ),
      { numRuns: 200 },
    );
  });

  it('under load judges most requests without asking the shared window', async () => {
    const clock = { now: 0 };
    const shared = new SharedWindow(1_000_000, clock);
    const limiter = new LeasedLimiter(shared, 1_000_000, windowMs, settings, () => clock.now);
    let requests = 0;
    for (let step = 0; step < 200; step++) {
      clock.now += 1;
      const decisions = await Promise.all(Array.from({ length: 10 }, () => limiter.consume('k')));
      requests += decisions.filter((decision) => decision.allowed).length;
    }
    assert.equal(requests, 2000);
    assert.ok(shared.leases * 10 < requests, `${shared.leases} leases for ${requests} requests`);
  });

  it('refuses locally until the shared window frees a slot, then asks again', async () => {
    const clock = { now: 0 };
    const shared = new SharedWindow(3, clock);
    const limiter = new LeasedLimiter(shared, 3, windowMs, settings, () => clock.now);
    const first = await Promise.all(Array.from({ length: 5 }, () => limiter.consume('k')));
    assert.deepEqual(
      first.map((decision) => decision.allowed),
      [true, true, true, false, false],
    );
    const leasesAfterRefusal = shared.leases;
    clock.now = 500;
    const refused = await limiter.consume('k');
    assert.equal(refused.allowed, false);
    assert.equal(shared.leases, leasesAfterRefusal, 'a known-full window is not asked again before its reset');
    assert.ok(refused.resetMs > 0 && refused.resetMs <= 500);
    clock.now = 1000;
    assert.equal((await limiter.consume('k')).allowed, true);
  });

  it('judges at once (consumeNow) from a lease in hand or a known-full window, and asks for a wait otherwise', async () => {
    const clock = { now: 0 };
    const shared = new SharedWindow(4, clock);
    const limiter = new LeasedLimiter(shared, 4, windowMs, { ...settings, sliceShareOfLimit: 0.5 }, () => clock.now);
    assert.equal(limiter.consumeNow('k'), null, 'no lease yet: the request must wait for one');
    assert.equal((await limiter.consume('k')).allowed, true, 'a first lease, of one token');
    assert.equal(limiter.consumeNow('k'), null, 'the lease is spent: wait for the next');
    assert.equal((await limiter.consume('k')).allowed, true, 'a second lease, of two tokens (demand doubled)');
    assert.equal(shared.leases, 2);
    assert.equal(limiter.consumeNow('k')?.allowed, true, 'a token of the lease in hand');
    assert.equal(shared.leases, 2, 'judged without asking the shared window');
    assert.equal(limiter.consumeNow('k'), null);
    assert.equal((await limiter.consume('k')).allowed, true, 'the last slot of the window');
    assert.equal((await limiter.consume('k')).allowed, false, 'the shared window is full');
    const leases = shared.leases;
    assert.equal(limiter.consumeNow('k')?.allowed, false, 'refused at once until the window frees a slot');
    assert.equal(shared.leases, leases);
    clock.now = settings.leaseMs + 1;
    assert.equal(limiter.consumeNow('k')?.allowed, false, 'still full: no slot frees before the reset');
  });
});
