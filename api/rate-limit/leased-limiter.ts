// LeasedLimiter spends a per-key budget leased from the shared (Redis) sliding window in small slices, so that
// most requests are judged in this process without a Redis round trip. A lease records its admissions in the
// shared window when it is granted (so every process sees them at once) and may be spent here for leaseMs.
//
// Leases are renewed ahead of need: once renewAtShare of the tokens in hand is spent, or of the newest lease's
// time has passed, the next lease is asked in the background at the end of that loop turn (one lease in flight
// per key), so a busy key's requests find a token instead of waiting for Redis; only while the key is well under
// its limit (the shared window had renewAheadRemainingShare of it left at the last grant), so that near the
// limit no token is held here ahead of need while another process refuses for want of it. A lease is sized by
// recent demand (the admissions of the last leaseMs, at least 1, at most a slice, or as many requests as wait)
// minus the tokens still in hand: the tokens in hand plus those asked never exceed one lease. Requests that find
// no token wait for the lease in flight and are served from it in arrival order. Tokens are spent oldest first.
//
// Exactness: in one process, a local sliding-window log of the admissions actually made keeps every 1-second
// span at or under the limit, exactly. Across processes, a token recorded in the shared window may be spent
// later (up to leaseMs after its grant), so a 1-second span can admit, beyond the limit, what each process held
// or had asked for when the span began: at most one lease per process, ahead renewal or not. Unspent tokens of
// an expired lease are not returned, so a process may equally admit up to that much less. Refusals are exact:
// when the shared window grants nothing, no slot frees before its reset, so this process refuses locally until
// then (after spending the tokens it still holds: they were counted in the shared window when granted).
import type { RateDecision, RateLeaseSource, RateLimiter } from './sliding-window.js';
import { localLimiterSubjectsMax } from './sliding-window.js';

export interface LeaseSettings {
  /** sliceShareOfLimit: a lease asks for at least this share of the limit (rounded up, at least 1 token). */
  sliceShareOfLimit: number;
  /** sliceTokensMax caps one lease, and so the cross-process overshoot per process. */
  sliceTokensMax: number;
  /** leaseMs is how long the tokens of a lease may be spent after it was granted. */
  leaseMs: number;
  /**
   * renewAtShare in (0, 1]: the next lease is asked in the background once this share of the tokens in hand is
   * spent or of the newest lease's time has passed (1: once the last token is spent or the lease expired).
   */
  renewAtShare: number;
  /**
   * renewAheadRemainingShare in [0, 1]: leases are renewed ahead only while the shared window had at least this
   * share of the limit left after this process's last grant. Nearer the limit, tokens asked ahead could expire
   * here unspent while another process refuses for want of them, so leases are asked on need, as the limit
   * allows exactly.
   */
  renewAheadRemainingShare: number;
}

/**
 * LeaseStats counts, over every LeasedLimiter of this process, the leases asked (and how many of them ahead of
 * need, with no request waiting) and the requests that waited for one. For benches: waits per request.
 */
export interface LeaseStats {
  leases: number;
  leasesAhead: number;
  waits: number;
}
export const leaseStats: LeaseStats = { leases: 0, leasesAhead: 0, waits: 0 };

interface Waiter {
  resolve(decision: RateDecision): void;
  reject(error: unknown): void;
}

/** Lease is the unspent part of one grant, spendable until expiresAtMs. */
interface Lease {
  tokens: number;
  expiresAtMs: number;
}

interface SubjectState {
  /** leases in hand, oldest first; tokens is their sum. */
  leases: Lease[];
  tokens: number;
  /** sharedRemaining is what the shared window held after this process's last grant. */
  sharedRemaining: number;
  /** refusedUntilMs: the shared window granted nothing, and frees no slot before then. */
  refusedUntilMs: number;
  /** log holds the times of this process's admissions in the last window, oldest first. */
  log: number[];
  waiters: Waiter[];
  leasing: boolean;
  /** renewBelowTokens, renewAtMs: once the tokens in hand fall to the one or the clock passes the other, renew. */
  renewBelowTokens: number;
  renewAtMs: number;
}

export class LeasedLimiter implements RateLimiter {
  private readonly subjects = new Map<string, SubjectState>();
  private readonly sliceTokens: number;
  /** renewAheadRemainingMin: the shared window's remaining slots below which no lease is asked ahead. */
  private readonly renewAheadRemainingMin: number;

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
    if (!(settings.renewAtShare > 0 && settings.renewAtShare <= 1))
      throw new RangeError('renewAtShare must be in (0, 1]');
    if (!(settings.renewAheadRemainingShare >= 0 && settings.renewAheadRemainingShare <= 1))
      throw new RangeError('renewAheadRemainingShare must be in [0, 1]');
    this.renewAheadRemainingMin = limit * settings.renewAheadRemainingShare;
    this.sliceTokens = Math.min(settings.sliceTokensMax, Math.max(1, Math.ceil(limit * settings.sliceShareOfLimit)));
  }

  consume(subject: string): Promise<RateDecision> {
    const decided = this.consumeNow(subject);
    if (decided !== null) return Promise.resolve(decided);
    const state = this.state(subject);
    leaseStats.waits++;
    return new Promise<RateDecision>((resolve, reject) => {
      state.waiters.push({ resolve, reject });
      if (!state.leasing) void this.leaseFor(subject, state);
    });
  }

  /**
   * consumeNow decides without Redis when it can: a token in hand (none waiting before this request, so arrival
   * order holds), or a local refusal; null when the request must wait for a lease (consume). Spending a token
   * may start the next lease in the background (ahead of need).
   */
  consumeNow(subject: string): RateDecision | null {
    const state = this.state(subject);
    const now = this.nowMs();
    const overLog = this.logRefusal(state, now);
    if (overLog) return overLog;
    if (state.waiters.length === 0) {
      this.dropExpired(state, now);
      if (state.tokens > 0) {
        const decision = this.admit(state, now);
        if (!state.leasing && this.renewDue(state, now)) {
          // Asked at the end of this loop turn, not now: the requests this turn handles together (a closed-loop
          // client's whole round, bench/api-cluster.ts) spend first, so one lease refills what they all spent, and
          // none of them waits. Asked mid-turn, it would be sized before the turn's last requests, and they would
          // wait for the next lease: a round of requests split in two, which then wait for a read index apart.
          state.leasing = true;
          setImmediate(this.renewAhead, subject, state);
        }
        return decision;
      }
    }
    if (now < state.refusedUntilMs) return this.refusal(Math.ceil(state.refusedUntilMs - now));
    return null;
  }

  /** renewAhead starts the lease asked ahead in consumeNow (leasing was set, so that no other starts meanwhile). */
  private readonly renewAhead = (subject: string, state: SubjectState): void => {
    state.leasing = false;
    void this.leaseFor(subject, state);
  };

  /**
   * renewDue: renewAtShare of the tokens in hand is spent or of the newest lease's time gone, and the shared
   * window well short of full (not known full, and renewAheadRemainingShare of the limit left at the last grant).
   */
  private renewDue(state: SubjectState, now: number): boolean {
    return (
      (state.tokens <= state.renewBelowTokens || now >= state.renewAtMs) &&
      now >= state.refusedUntilMs &&
      state.sharedRemaining >= this.renewAheadRemainingMin
    );
  }

  /** logRefusal refuses when this process alone has admitted the limit in the last window. */
  private logRefusal(state: SubjectState, now: number): RateDecision | null {
    while (state.log.length > 0 && state.log[0]! <= now - this.windowMs) state.log.shift();
    if (state.log.length >= this.limit)
      return this.refusal(Math.max(0, Math.floor(state.log[0]! + this.windowMs - now)));
    return null;
  }

  /** dropExpired forgets the leases whose time is up: their tokens were counted in the shared window long ago. */
  private dropExpired(state: SubjectState, now: number): void {
    while (state.leases.length > 0 && state.leases[0]!.expiresAtMs <= now) state.tokens -= state.leases.shift()!.tokens;
  }

  /** admit spends a token of the oldest lease in hand (the caller saw tokens > 0). */
  private admit(state: SubjectState, now: number): RateDecision {
    const oldest = state.leases[0]!;
    if (--oldest.tokens === 0) state.leases.shift();
    state.tokens--;
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

  /**
   * leaseFor asks leases, one in flight at a time, for as long as requests wait, serving them in arrival order,
   * and once ahead of need (no request waiting) when a renewal is due: started by a spent token, or after waiters
   * were served.
   */
  private async leaseFor(subject: string, state: SubjectState): Promise<void> {
    state.leasing = true;
    let askedAhead = false;
    try {
      for (;;) {
        if (state.waiters.length === 0) {
          if (askedAhead || !this.renewDue(state, this.nowMs())) return;
          askedAhead = true;
        }
        const askedAt = this.nowMs();
        this.dropExpired(state, askedAt);
        const hold = this.holdTokens(state, askedAt);
        const wanted = hold - state.tokens;
        if (wanted <= 0) {
          // Asked ahead with enough in hand (never while requests wait: they find no token): ask again once
          // the tokens in hand are spent down.
          state.renewBelowTokens = this.renewBelow(hold);
          state.renewAtMs = Infinity;
          return;
        }
        leaseStats.leases++;
        if (state.waiters.length === 0) leaseStats.leasesAhead++;
        let grant;
        try {
          grant = await this.source.lease(subject, wanted);
        } catch (error) {
          // An ahead renewal that failed asks nothing more for this lease: the first request to find no token
          // asks again, and meets the error if it persists (the caller falls back).
          state.renewBelowTokens = -1;
          state.renewAtMs = Infinity;
          for (const waiter of state.waiters.splice(0)) waiter.reject(error);
          return;
        }
        const now = this.nowMs();
        this.dropExpired(state, now);
        state.sharedRemaining = grant.remaining;
        if (grant.granted > 0) {
          state.leases.push({ tokens: grant.granted, expiresAtMs: now + this.settings.leaseMs });
          state.tokens += grant.granted;
        } else {
          // The shared window is full and frees no slot before resetMs: after the tokens in hand, refuse until then.
          state.refusedUntilMs = now + grant.resetMs;
        }
        state.renewBelowTokens = this.renewBelow(hold);
        state.renewAtMs = now + this.settings.renewAtShare * this.settings.leaseMs;
        // Serve in arrival order while tokens last; the rest wait for the next lease (or are refused).
        while (state.waiters.length > 0) {
          const overLog = this.logRefusal(state, now);
          if (overLog) state.waiters.shift()!.resolve(overLog);
          else if (state.tokens > 0) state.waiters.shift()!.resolve(this.admit(state, now));
          else if (grant.granted === 0) state.waiters.shift()!.resolve(this.refusal(grant.resetMs));
          else break;
        }
      }
    } finally {
      state.leasing = false;
    }
  }

  /**
   * holdTokens is one lease: what this process may hold in hand and in flight for the subject. It follows demand
   * (the admissions of the last leaseMs, at least 1: tokens that expire unspent were counted in the shared
   * window for nothing, and would starve other processes of the limit) up to a slice, or as many requests as
   * wait, never more than sliceTokensMax.
   */
  private holdTokens(state: SubjectState, now: number): number {
    const recent = state.log.length - firstAfter(state.log, now - this.settings.leaseMs);
    return Math.min(
      this.settings.sliceTokensMax,
      Math.max(state.waiters.length, Math.min(this.sliceTokens, Math.max(1, recent))),
    );
  }

  /** renewBelow: the tokens in hand at which renewAtShare of a lease of `hold` tokens is spent. */
  private renewBelow(hold: number): number {
    return Math.floor(hold * (1 - this.settings.renewAtShare));
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
      leases: [],
      tokens: 0,
      sharedRemaining: this.limit,
      refusedUntilMs: 0,
      log: [],
      waiters: [],
      leasing: false,
      renewBelowTokens: -1,
      renewAtMs: Infinity,
    };
    this.subjects.set(subject, state);
    if (this.subjects.size > localLimiterSubjectsMax) {
      const [oldest, oldestState] = this.subjects.entries().next().value!;
      // A subject with a lease in flight stays; its waiters still get their answer either way.
      if (!oldestState.leasing) this.subjects.delete(oldest);
    }
    return state;
  }
}

/** firstAfter: the index of the first time in `sorted` (ascending) above `time` (its length when none is). */
function firstAfter(sorted: number[], time: number): number {
  let low = 0;
  let high = sorted.length;
  while (low < high) {
    const middle = (low + high) >>> 1;
    if (sorted[middle]! <= time) low = middle + 1;
    else high = middle;
  }
  return low;
}
