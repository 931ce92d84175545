// LeasedLimiter (api/rate-limit/leased-limiter.ts) over a shared sliding window double with a fake clock:
// one process never admits more than the limit in any window; several processes sharing the window admit at
// most one lease per process more, whether leases answer at once, late, or fail (before or after the shared
// window recorded them); leases are renewed ahead of need, so under steady load no request waits for one; and
// under load most requests are judged without asking the shared window.
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { LeasedLimiter, type LeaseSettings } from '../../api/rate-limit/leased-limiter.js';
import type { RateDecision, RateGrant, RateLeaseSource } from '../../api/rate-limit/sliding-window.js';

const windowMs = 1000;

/** SharedWindow is the Redis script's logic over a fake clock: it records granted admissions at lease time. */
class SharedWindow implements RateLeaseSource {
  readonly log: number[] = [];
  leases = 0;
  constructor(
    private readonly limit: number,
    private readonly clock: { now: number },
  ) {}
  lease(_subject: string, count: number): Promise<RateGrant> {
    return Promise.resolve(this.grant(count));
  }
  grant(count: number): RateGrant {
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

/** How an answered lease fares: granted, or failed before the shared window ran it, or after (the reply lost). */
type Answer = 'grant' | 'fail-before' | 'fail-after';

/**
 * DeferredSource is one process's connection to the shared window, answering only when told: a lease is run
 * in the shared window when asked (recordAtAsk: a slow reply) or when answered (a slow request).
 */
class DeferredSource implements RateLeaseSource {
  private readonly pending: Array<{
    count: number;
    recorded: RateGrant | null;
    resolve(grant: RateGrant): void;
    reject(error: unknown): void;
  }> = [];
  asked: number[] = [];
  constructor(
    private readonly shared: SharedWindow,
    private readonly recordAtAsk: boolean,
  ) {}
  get inFlight(): number {
    return this.pending.length;
  }
  lease(_subject: string, count: number): Promise<RateGrant> {
    this.asked.push(count);
    return new Promise((resolve, reject) => {
      this.pending.push({ count, recorded: this.recordAtAsk ? this.shared.grant(count) : null, resolve, reject });
    });
  }
  answer(how: Answer = 'grant'): void {
    const lease = this.pending.shift();
    if (!lease) return;
    if (how === 'fail-before' && !lease.recorded) {
      lease.reject(new Error('redis: connection lost'));
      return;
    }
    const grant = lease.recorded ?? this.shared.grant(lease.count);
    if (how === 'grant') lease.resolve(grant);
    else lease.reject(new Error('redis: reply lost'));
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

/** settled lets the promise callbacks of what was just answered run (the fake clock stands still meanwhile). */
const settled = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** answerAll grants every lease asked, including those asked meanwhile, until none is in flight. */
async function answerAll(source: DeferredSource): Promise<void> {
  while (source.inFlight > 0) {
    source.answer();
    await settled();
  }
}

const sliceOf = (limit: number, settings: LeaseSettings): number =>
  Math.min(settings.sliceTokensMax, Math.max(1, Math.ceil(limit * settings.sliceShareOfLimit)));

describe('api: leased rate limit', () => {
  const settings: LeaseSettings = {
    sliceShareOfLimit: 0.05,
    sliceTokensMax: 64,
    leaseMs: 100,
    renewAtShare: 0.5,
    renewAheadRemainingShare: 0.5,
  };

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
          // A lease may ask for as many tokens as requests wait (one burst), so a process may hold that many.
          const heldMax = Math.max(sliceOf(limit, settings), ...schedule.map((step) => step.burst));
          assert.ok(
            maxInAnyWindow(admitted.flat()) <= limit + processCount * Math.min(settings.sliceTokensMax, heldMax),
            'across processes at most what each held beyond the limit',
          );
        },
      ),
      { numRuns: 200 },
    );
  });

  it('holds both bounds when leases answer late, out of step with requests, or fail before or after the shared window counted them', async () => {
    const step = fc.oneof(
      fc.record({
        kind: fc.constant('requests' as const),
        gapMs: fc.integer({ min: 0, max: 80 }),
        process: fc.nat(),
        burst: fc.integer({ min: 1, max: 12 }),
      }),
      fc.record({
        kind: fc.constant('answer' as const),
        process: fc.nat(),
        how: fc.constantFrom<Answer>('grant', 'grant', 'grant', 'fail-before', 'fail-after'),
      }),
    );
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 3 }),
        fc.integer({ min: 5, max: 60 }),
        fc.constantFrom(0.05, 0.25),
        fc.constantFrom(0.25, 0.5, 1),
        fc.constantFrom(0, 0.5),
        fc.boolean(),
        fc.array(step, { minLength: 1, maxLength: 120 }),
        async (
          processCount,
          limit,
          sliceShareOfLimit,
          renewAtShare,
          renewAheadRemainingShare,
          recordAtAsk,
          schedule,
        ) => {
          const leaseSettings = { ...settings, sliceShareOfLimit, renewAtShare, renewAheadRemainingShare };
          const clock = { now: 0 };
          const shared = new SharedWindow(limit, clock);
          const sources = Array.from({ length: processCount }, () => new DeferredSource(shared, recordAtAsk));
          const limiters = sources.map(
            (source) => new LeasedLimiter(source, limit, windowMs, leaseSettings, () => clock.now),
          );
          const admitted: number[][] = limiters.map(() => []);
          const waiting = limiters.map(() => 0);
          const waitingMax = limiters.map(() => 0);
          let failuresInjected = 0;
          let rejected = 0;
          const judged = (which: number, decision: RateDecision): void => {
            if (decision.allowed) admitted[which]!.push(clock.now);
            assert.ok(decision.remaining >= 0 && decision.remaining <= limit);
          };
          for (const action of schedule) {
            const which = action.process % processCount;
            if (action.kind === 'answer') {
              if (action.how !== 'grant' && sources[which]!.inFlight > 0) failuresInjected++;
              sources[which]!.answer(action.how);
              await settled();
              continue;
            }
            clock.now += action.gapMs;
            // As the middleware does: judged at once when it can be, else waiting for a lease.
            for (let request = 0; request < action.burst; request++) {
              const now = limiters[which]!.consumeNow('k');
              if (now !== null) {
                judged(which, now);
                continue;
              }
              waiting[which]!++;
              waitingMax[which] = Math.max(waitingMax[which]!, waiting[which]!);
              limiters[which]!.consume('k').then(
                (decision) => {
                  waiting[which]!--;
                  judged(which, decision);
                },
                () => {
                  waiting[which]!--;
                  rejected++;
                },
              );
            }
            await settled();
          }
          // Answer whatever is still in flight (renewals start more), so that every request has its answer.
          for (let round = 0; sources.some((source) => source.inFlight > 0); round++) {
            assert.ok(round < 1000, 'leases keep being asked with no request waiting');
            for (const source of sources) source.answer();
            await settled();
          }
          assert.deepEqual(
            waiting,
            limiters.map(() => 0),
            'every request was answered',
          );
          assert.ok(rejected === 0 || failuresInjected > 0, 'a request fails only when a lease failed');
          for (const times of admitted) assert.ok(maxInAnyWindow(times) <= limit, 'one process stays within the limit');
          // One lease per process: a slice, or as many requests as waited together, at most sliceTokensMax.
          const slice = sliceOf(limit, leaseSettings);
          const leaseMax = waitingMax.map((most) => Math.min(leaseSettings.sliceTokensMax, Math.max(slice, most)));
          sources.forEach((source, which) =>
            assert.ok(Math.max(0, ...source.asked) <= leaseMax[which]!, 'no lease asks more than one lease'),
          );
          const overshootMax = leaseMax.reduce((sum, most) => sum + most, 0);
          assert.ok(
            maxInAnyWindow(admitted.flat()) <= limit + overshootMax,
            `across processes at most one lease each beyond the limit (${maxInAnyWindow(admitted.flat())} > ${limit} + ${overshootMax})`,
          );
        },
      ),
      { numRuns: 300 },
    );
  });

  it('renews a lease ahead of need: under steady load, with leases answering 2 ms late, no request waits once demand is known', async () => {
    const clock = { now: 0 };
    const limit = 1_000_000;
    const shared = new SharedWindow(limit, clock);
    const source = new DeferredSource(shared, true);
    const limiter = new LeasedLimiter(source, limit, windowMs, settings, () => clock.now);
    const leaseLatencyMs = 2;
    // Half a lease of sliceTokensMax (64) lasts 3.2 ms at this rate: longer than a lease's round trip.
    const requestsPerMs = 10;
    /** due: when each lease asked will be answered, in order. */
    const due: number[] = [];
    const noteAsks = (ms: number): void => {
      while (due.length + answered < source.asked.length) due.push(ms + leaseLatencyMs);
    };
    let answered = 0;
    /** waitedAtMs: when each request that waited for a lease came. */
    const waitedAtMs: number[] = [];
    let admitted = 0;
    for (let ms = 0; ms < 500; ms++) {
      clock.now = ms;
      while (due.length > 0 && due[0]! <= ms) {
        due.shift();
        answered++;
        source.answer();
        await settled();
        noteAsks(ms);
      }
      // requestsPerMs, each judged at once or waiting, as the middleware does.
      for (let request = 0; request < requestsPerMs; request++) {
        const decision = limiter.consumeNow('k');
        if (decision !== null) {
          assert.ok(decision.allowed);
          admitted++;
        } else {
          waitedAtMs.push(ms);
          void limiter.consume('k').then((late) => {
            assert.ok(late.allowed);
            admitted++;
          });
        }
        noteAsks(ms);
      }
      // One loop turn a millisecond: a renewal ahead is asked at the end of the turn that made it due.
      await settled();
      noteAsks(ms);
    }
    await answerAll(source);
    // While demand grows from one request, a lease covers those waiting when it was asked; then none waits.
    const warmUpMs = 20;
    assert.deepEqual(
      waitedAtMs.filter((ms) => ms >= warmUpMs),
      [],
      `requests waited after the first ${warmUpMs} ms (${waitedAtMs.length} in all)`,
    );
    assert.equal(admitted, 500 * requestsPerMs);
    assert.ok(source.asked.length * 10 < admitted, `${source.asked.length} leases for ${admitted} requests`);
    assert.ok(Math.max(...source.asked) <= settings.sliceTokensMax);
  });

  it('renewing ahead, a saturated key holds at most one lease per process beyond the limit', async () => {
    for (const leaseLatencyMs of [0, 3]) {
      const clock = { now: 0 };
      const limit = 40;
      // Renewed ahead even at the limit: the bound holds all the same.
      const leaseSettings = { ...settings, sliceShareOfLimit: 0.25, renewAheadRemainingShare: 0 };
      const shared = new SharedWindow(limit, clock);
      const processes = [0, 1, 2].map(() => {
        const source = new DeferredSource(shared, true);
        return {
          source,
          limiter: new LeasedLimiter(source, limit, windowMs, leaseSettings, () => clock.now),
          admitted: [] as number[],
          due: [] as number[],
          answered: 0,
        };
      });
      for (let ms = 0; ms < 3000; ms++) {
        clock.now = ms;
        for (const process of processes) {
          while (process.due.length > 0 && process.due[0]! <= ms) {
            process.due.shift();
            process.answered++;
            process.source.answer();
            await settled();
          }
          // One request a millisecond per process, 75 times the limit: the window stays full.
          const decision = process.limiter.consumeNow('k');
          if (decision?.allowed) process.admitted.push(ms);
          if (decision === null)
            void process.limiter.consume('k').then((late) => {
              if (late.allowed) process.admitted.push(clock.now);
            });
          await settled();
          while (process.due.length + process.answered < process.source.asked.length)
            process.due.push(ms + leaseLatencyMs);
        }
      }
      for (const process of processes) assert.ok(maxInAnyWindow(process.admitted) <= limit);
      const all = processes.flatMap((process) => process.admitted);
      const slice = sliceOf(limit, leaseSettings);
      assert.ok(
        maxInAnyWindow(all) <= limit + processes.length * slice,
        `latency ${leaseLatencyMs} ms: ${maxInAnyWindow(all)} in a window, over ${limit} + ${processes.length} x ${slice}`,
      );
      assert.ok(all.length >= (limit - processes.length * slice) * 2, `${all.length} admitted in 3 s`);
    }
  });

  it('sizes a renewal ahead at the end of the loop turn, so that one lease refills what the whole turn spent', async () => {
    const clock = { now: 0 };
    const shared = new SharedWindow(1_000_000, clock);
    const source = new DeferredSource(shared, true);
    const limiter = new LeasedLimiter(source, 1_000_000, windowMs, settings, () => clock.now);
    const first = Array.from({ length: settings.sliceTokensMax }, () => limiter.consume('k'));
    await answerAll(source);
    assert.ok((await Promise.all(first)).every((decision) => decision.allowed));
    assert.equal(source.asked.at(-1), settings.sliceTokensMax, 'a full lease in hand');
    // Two turns of 45 requests each (more than half a lease), as a closed-loop client's rounds come.
    for (let turn = 0; turn < 2; turn++) {
      const asked = source.asked.length;
      for (let request = 0; request < 45; request++) assert.equal(limiter.consumeNow('k')?.allowed, true);
      assert.equal(source.asked.length, asked, 'nothing asked during the turn');
      await settled();
      assert.deepEqual(source.asked.slice(asked), [45], 'at its end, one lease for all the turn spent');
      source.answer();
      await settled();
    }
  });

  it('serves a key from the lease in hand while its renewal is in flight, and makes late requests wait for a slow one', async () => {
    const clock = { now: 0 };
    const shared = new SharedWindow(1000, clock);
    const source = new DeferredSource(shared, true);
    // Leases of at most 4 tokens, renewed once half the tokens in hand are spent.
    const limiter = new LeasedLimiter(source, 1000, windowMs, { ...settings, sliceTokensMax: 4 }, () => clock.now);
    const first = Array.from({ length: 4 }, () => limiter.consume('k'));
    await answerAll(source);
    assert.ok((await Promise.all(first)).every((decision) => decision.allowed));
    assert.deepEqual(source.asked, [1, 3, 4], 'one for the first request, three for those waiting, then 4 ahead');
    assert.equal(limiter.consumeNow('k')?.allowed, true);
    assert.equal(source.inFlight, 0, 'one token of four spent: not yet due');
    assert.equal(limiter.consumeNow('k')?.allowed, true);
    assert.equal(source.inFlight, 0, 'asked at the end of the loop turn');
    await settled();
    assert.deepEqual(source.asked.slice(3), [2], 'two spent: renewed ahead, up to one lease (the hand holds 2)');
    assert.equal(limiter.consumeNow('k')?.allowed, true, 'a token in hand while the renewal is in flight');
    assert.equal(limiter.consumeNow('k')?.allowed, true);
    assert.equal(limiter.consumeNow('k'), null, 'the hand is empty and the renewal late: wait for it');
    const late = [limiter.consume('k'), limiter.consume('k'), limiter.consume('k')];
    assert.equal(source.inFlight, 1, 'still the one lease in flight');
    source.answer();
    await settled();
    const served = await Promise.race([Promise.all(late).then(() => 'all'), settled().then(() => 'not all')]);
    assert.equal(served, 'not all', 'two tokens for three waiting requests: the third waits for the next lease');
    assert.deepEqual(source.asked.slice(4), [4], 'the next is asked at once, sized by demand');
    source.answer();
    assert.deepEqual(
      (await Promise.all(late)).map((decision) => decision.allowed),
      [true, true, true],
    );
  });

  it('a failed ahead renewal costs no request an error; the next request with no token asks again', async () => {
    const clock = { now: 0 };
    const shared = new SharedWindow(1000, clock);
    const source = new DeferredSource(shared, false);
    const limiter = new LeasedLimiter(source, 1000, windowMs, { ...settings, sliceTokensMax: 2 }, () => clock.now);
    const first = limiter.consume('k');
    source.answer();
    assert.equal((await first).allowed, true);
    await settled();
    assert.equal(source.inFlight, 1, 'the spent lease is renewed ahead');
    source.answer('fail-before');
    await settled();
    assert.equal(source.inFlight, 0, 'a failed renewal is not retried ahead');
    const next = limiter.consume('k');
    assert.equal(source.inFlight, 1, 'a request with no token asks again');
    source.answer('fail-before');
    await assert.rejects(next, /connection lost/, 'and meets the error while it persists (the caller falls back)');
    const after = limiter.consume('k');
    source.answer();
    assert.equal((await after).allowed, true);
  });

  it('spends the tokens in hand before refusing when a renewal finds the shared window full', async () => {
    const clock = { now: 0 };
    const limit = 8;
    const shared = new SharedWindow(limit, clock);
    shared.grant(3); // another process's
    const source = new DeferredSource(shared, true);
    const limiter = new LeasedLimiter(
      source,
      limit,
      windowMs,
      { ...settings, sliceShareOfLimit: 0.5, renewAheadRemainingShare: 0 },
      () => clock.now,
    );
    const first = [limiter.consume('k'), limiter.consume('k'), limiter.consume('k')];
    await answerAll(source);
    assert.ok((await Promise.all(first)).every((decision) => decision.allowed));
    assert.deepEqual(source.asked, [1, 2, 3], 'then renewed ahead: 3 asked, 2 left in the window');
    assert.equal(limiter.consumeNow('k')?.allowed, true);
    await settled();
    assert.equal(source.inFlight, 1, 'one of two left: renewed ahead');
    source.answer();
    await settled();
    assert.equal(limiter.consumeNow('k')?.allowed, true, 'the window is full, but this token was counted in it');
    const leases = source.asked.length;
    const refused = limiter.consumeNow('k');
    assert.equal(refused?.allowed, false, 'then refused at once');
    assert.ok(refused.resetMs > 0);
    assert.equal(source.asked.length, leases, 'without asking the known-full window');
    assert.equal(shared.log.length, limit);
  });

  it('near its limit a key is not renewed ahead, so a process that stops holds no token another one needs', async () => {
    for (const renewAheadRemainingShare of [0.5, 0]) {
      const clock = { now: 0 };
      const limit = 20;
      const shared = new SharedWindow(limit, clock);
      const leaseSettings = { ...settings, renewAheadRemainingShare };
      const [first, second] = [0, 1].map(
        () => new LeasedLimiter(shared, limit, windowMs, leaseSettings, () => clock.now),
      );
      let admitted = 0;
      // One request a millisecond, all inside one window: the second process's 12, then the first's 20.
      for (let request = 0; request < 32; request++) {
        clock.now = request;
        if ((await (request < 12 ? second : first)!.consume('k')).allowed) admitted++;
        await settled();
      }
      if (renewAheadRemainingShare > 0) assert.equal(admitted, limit, 'the limit, exactly');
      else assert.equal(admitted, limit - 1, 'renewed ahead near the limit: the token the second holds is lost');
    }
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
});
