// LeasedLimiter spends a per-key budget leased from the shared (Redis) sliding window in small slices, so that
// most requests are judged in this process without a Redis round trip. A lease records its admissions in the
// shared window when it is granted (so every process sees them at once) and may be spent here for leaseMs.
// Requests that find no token wait for the one lease in flight per key and are served from it in arrival
// order; a lease asks for at least as many tokens as requests wait, and for up to a slice by recent demand
// (doubling while leases run out before they expire, else what the last one spent), so under load one Redis
// call serves a whole batch while a quiet key wastes few tokens.
//
// Exactness: in one process, a local sliding-window log of the admissions actually made keeps every 1-second
// span at or under the limit, exactly. Across processes, a token recorded at its lease's time may be spent up
// to leaseMs later, so a 1-second span can admit up to one slice per process more than the limit (the
// tokens held when the span began); unspent tokens of an expired lease are not returned, so a process may
// equally admit up to a slice less. Refusals are exact: when the shared window grants nothing, no slot frees
// before its reset, so this process refuses locally until then.
import type { RateDecision, RateLeaseSource, RateLimiter } from './sliding-window.js';
import { localLimiterSubjectsMax } from './sliding-window.js';

export interface LeaseSettings {
  /** sliceShareOfLimit: a lease asks for at least this share of the limit (rounded up, at least 1 token). */
  sliceShareOfLimit: number;
  /** sliceTokensMax caps one lease, and so the cross-process overshoot per process. */
  sliceTokensMax: number;
  /** leaseMs is how long the tokens of a lease may be spent after it was granted. */
  leaseMs: number;
}

interface Waiter {
  resolve(decision: RateDecision): void;
  reject(error: unknown): void;
}

interface SubjectState {
  tokens: number;
  tokensExpireAtMs: number;
  /** sharedRemaining is what the shared window held after this process's last grant. */
  sharedRemaining: number;
  /** refusedUntilMs: the shared window granted nothing, and frees no slot before then. */
  refusedUntilMs: number;
  /** log holds the times of this process's admissions in the last window, oldest first. */
  log: number[];
  waiters: Waiter[];
  leasing: boolean;
  /** lastGranted and spentFromLease size the next lease by demand: tokens that expire unspent are lost. */
  lastGranted: number;
  spentFromLease: number;
}

export class LeasedLimiter implements RateLimiter {
  private readonly subjects = new Map<string, SubjectState>();
  private readonly sliceTokens: number;

  constructor(
    private readonly source: RateLeaseSource,
    private readonly limit: number,
    private readonly windowMs: number,
    private readonly settings: LeaseSettings,
    private readonly nowMs: () => number = () => performance.now(),
  ) {
    if (!(settings.sliceShareOfLimit > 0 && settings.sliceShareOfLimit <= 1))
      throw new RangeError('sliceShareOfLimit must be in (0, 1]');
    if (!Number.isSafeInteger(settings.sliceTokensMax) || settings.sliceTokensMax < 1)
      throw new RangeError('sliceTokensMax must be a positive integer');
    if (!(settings.leaseMs > 0)) throw new RangeError('leaseMs must be positive');
    this.sliceTokens = Math.min(settings.sliceTokensMax, Math.max(1, Math.ceil(limit * settings.sliceShareOfLimit)));
  }

  consume(subject: string): Promise<RateDecision> {
    const decided = this.consumeNow(subject);
    if (decided !== null) return Promise.resolve(decided);
    const state = this.state(subject);
    return new Promise<RateDecision>((resolve, reject) => {
      state.waiters.push({ resolve, reject });
      if (!state.leasing) void this.leaseFor(subject, state);
    });
  }

  /**
   * consumeNow decides without Redis when it can: a local refusal, or a token of the lease in hand (none waiting
   * before this request, so arrival order holds); null when the request must wait for a lease (consume).
   */
  consumeNow(subject: string): RateDecision | null {
    const state = this.state(subject);
    const now = this.nowMs();
    const local = this.localRefusal(state, now);
    if (local) return local;
    if (state.waiters.length === 0 && state.tokens > 0 && now < state.tokensExpireAtMs) return this.admit(state, now);
    return null;
  }

  /** localRefusal refuses without asking Redis when this process alone is at the limit, or the shared window is known full. */
  private localRefusal(state: SubjectState, now: number): RateDecision | null {
    while (state.log.length > 0 && state.log[0]! <= now - this.windowMs) state.log.shift();
    if (state.log.length >= this.limit)
      return this.refusal(Math.max(0, Math.floor(state.log[0]! + this.windowMs - now)));
    if (now < state.refusedUntilMs) return this.refusal(Math.ceil(state.refusedUntilMs - now));
    return null;
  }

  private admit(state: SubjectState, now: number): RateDecision {
    state.tokens--;
    state.spentFromLease++;
    state.log.push(now);
    const remaining = Math.max(0, Math.min(state.sharedRemaining + state.tokens, this.limit - state.log.length));
    return {
      allowed: true,
      limit: this.limit,
      remaining,
      resetMs: Math.max(0, Math.floor(state.log[0]! + this.windowMs - now)),
    };
  }

  private refusal(resetMs: number): RateDecision {
    return { allowed: false, limit: this.limit, remaining: 0, resetMs };
  }

  /** leaseFor serves the subject's waiters from leases, one lease in flight at a time, until none wait. */
  private async leaseFor(subject: string, state: SubjectState): Promise<void> {
    state.leasing = true;
    try {
      while (state.waiters.length > 0) {
        const wanted = Math.min(
          this.settings.sliceTokensMax,
          Math.max(state.waiters.length, Math.min(this.sliceTokens, this.demand(state))),
        );
        let grant;
        try {
          grant = await this.source.lease(subject, wanted);
        } catch (error) {
          for (const waiter of state.waiters.splice(0)) waiter.reject(error);
          return;
        }
        const now = this.nowMs();
        // Tokens left from an expired lease are dropped: they were counted in the shared window long ago.
        state.tokens = grant.granted;
        state.lastGranted = grant.granted;
        state.spentFromLease = 0;
        state.tokensExpireAtMs = now + this.settings.leaseMs;
        state.sharedRemaining = grant.remaining;
        if (grant.granted === 0) {
          // The shared window is full and frees no slot before resetMs: refuse the waiters, and others until then.
          state.refusedUntilMs = now + grant.resetMs;
          for (const waiter of state.waiters.splice(0)) waiter.resolve(this.refusal(grant.resetMs));
          return;
        }
        // Serve in arrival order while tokens last; the rest wait for the next lease (or are refused).
        while (state.waiters.length > 0) {
          const local = this.localRefusal(state, now);
          if (local) {
            state.waiters.shift()!.resolve(local);
            continue;
          }
          if (state.tokens === 0) break;
          state.waiters.shift()!.resolve(this.admit(state, now));
        }
      }
    } finally {
      state.leasing = false;
    }
  }

  /**
   * demand sizes the next lease: twice the last one when it was spent before it expired (demand is growing),
   * else what was spent of it (tokens that expire unspent were counted in the shared window for nothing, and
   * would starve other processes of the limit).
   */
  private demand(state: SubjectState): number {
    if (state.lastGranted === 0) return 1;
    return state.tokens === 0 && state.spentFromLease >= state.lastGranted && this.nowMs() < state.tokensExpireAtMs
      ? state.lastGranted * 2
      : Math.max(1, state.spentFromLease);
  }

  private state(subject: string): SubjectState {
    let state = this.subjects.get(subject);
    if (state) {
      // Most recently seen last, so the first entry is the one to forget when over the bound.
      this.subjects.delete(subject);
      this.subjects.set(subject, state);
      return state;
    }
    state = {
      tokens: 0,
      tokensExpireAtMs: 0,
      sharedRemaining: this.limit,
      refusedUntilMs: 0,
      log: [],
      waiters: [],
      leasing: false,
      lastGranted: 0,
      spentFromLease: 0,
    };
    this.subjects.set(subject, state);
    if (this.subjects.size > localLimiterSubjectsMax) {
      const [oldest, oldestState] = this.subjects.entries().next().value!;
      // A subject with requests waiting on a lease stays; its waiters still get their answer either way.
      if (!oldestState.leasing) this.subjects.delete(oldest);
    }
    return state;
  }
}
