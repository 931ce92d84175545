// Per-key request rate limiting with a sliding-window log: a request is admitted only if fewer than `limit`
// requests were admitted in the preceding windowMs. Unlike a fixed window, no instant ever sees more than
// `limit` admissions in any windowMs span, so a burst straddling a window edge is held to the limit.
// RedisSlidingWindowLimiter shares the log across every API process; LocalSlidingWindowLimiter is the
// per-process stand-in when no Redis is configured or Redis fails.
import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';

export interface RateDecision {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** resetMs is how long until the oldest admission in the window expires, freeing one slot. */
  resetMs: number;
}

export interface RateLimiter {
  consume(subject: string): Promise<RateDecision>;
  /**
   * consumeNow is consume when the decision needs no wait (no Redis round trip): the decision, with its
   * admission counted, or null when it must wait (then call consume). Most requests are judged here
   * (leased-limiter.ts): the middleware then passes them on without a promise.
   */
  consumeNow?(subject: string): RateDecision | null;
}

// The script reads Redis's own clock (TIME) so that every API process judges by one clock; Redis 7
// replicates script effects, so reading TIME in a writing script is allowed. Scores are microseconds,
// formatted with %.0f because Lua's default number formatting would round them.
const slidingWindowScript = `
local now = redis.call('TIME')
local nowUs = tonumber(now[1]) * 1000000 + tonumber(now[2])
local windowUs = tonumber(ARGV[1])
local limit = tonumber(ARGV[2])
local wanted = tonumber(ARGV[4])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', string.format('%.0f', nowUs - windowUs))
local count = redis.call('ZCARD', KEYS[1])
local granted = math.max(0, math.min(wanted, limit - count))
if granted > 0 then
  local score = string.format('%.0f', nowUs)
  local args = {}
  for i = 1, granted do
    args[#args + 1] = score
    args[#args + 1] = score .. ':' .. ARGV[3] .. ':' .. i
  end
  redis.call('ZADD', KEYS[1], unpack(args))
  redis.call('PEXPIRE', KEYS[1], math.ceil(windowUs / 1000))
  count = count + granted
end
local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
local resetUs = 0
if oldest[2] then resetUs = tonumber(oldest[2]) + windowUs - nowUs end
return {granted, limit - count, math.floor(resetUs / 1000)}
`;

/** RateGrant is the answer to a lease: how many admissions were recorded for the caller, and what is left. */
export interface RateGrant {
  granted: number;
  /** remaining is what the shared window still holds after this grant. */
  remaining: number;
  /** resetMs is how long until the oldest admission in the window expires, freeing one slot. */
  resetMs: number;
}

/** RateLeaseSource records up to `count` admissions at once in the shared window (RedisSlidingWindowLimiter). */
export interface RateLeaseSource {
  lease(subject: string, count: number): Promise<RateGrant>;
}

type SlidingWindowCommand = (
  key: string,
  windowUs: number,
  limit: number,
  nonce: string,
  count: number,
) => Promise<number[]>;

export class RedisSlidingWindowLimiter implements RateLimiter, RateLeaseSource {
  private readonly run: SlidingWindowCommand;
  // Log members must be unique across processes: a random per-process prefix and a counter make them so,
  // without the cost of drawing random bytes for every request.
  private readonly memberPrefix = randomBytes(8).toString('hex');
  private memberCount = 0;

  constructor(
    redis: Redis,
    private readonly limit: number,
    private readonly windowMs: number,
    private readonly keyPrefix = 'svc:ratelimit:',
  ) {
    if (!('svcSlidingWindow' in redis)) {
      redis.defineCommand('svcSlidingWindow', { numberOfKeys: 1, lua: slidingWindowScript });
    }
    const command = (redis as unknown as { svcSlidingWindow: SlidingWindowCommand }).svcSlidingWindow;
    this.run = command.bind(redis);
  }

  async consume(subject: string): Promise<RateDecision> {
    const grant = await this.lease(subject, 1);
    return { allowed: grant.granted === 1, limit: this.limit, remaining: grant.remaining, resetMs: grant.resetMs };
  }

  async lease(subject: string, count: number): Promise<RateGrant> {
    const [granted, remaining, resetMs] = await this.run(
      this.keyPrefix + subject,
      this.windowMs * 1000,
      this.limit,
      `${this.memberPrefix}${(this.memberCount++).toString(36)}`,
      count,
    );
    return { granted: granted!, remaining: Math.max(0, remaining!), resetMs: resetMs! };
  }
}

/** localLimiterSubjectsMax bounds the keys a process tracks; the least recently seen are forgotten first. */
export const localLimiterSubjectsMax = 100_000;

export class LocalSlidingWindowLimiter implements RateLimiter {
  private readonly logs = new Map<string, number[]>();

  constructor(
    private readonly limit: number,
    private readonly windowMs: number,
    private readonly nowMs: () => number = () => performance.now(),
  ) {}

  consume(subject: string): Promise<RateDecision> {
    try {
      return Promise.resolve(this.consumeNow(subject));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /** consumeNow: this limiter never waits. */
  consumeNow(subject: string): RateDecision {
    const now = this.nowMs();
    const log = (this.logs.get(subject) ?? []).filter((time) => time > now - this.windowMs);
    this.logs.delete(subject);
    const allowed = log.length < this.limit;
    if (allowed) log.push(now);
    this.logs.set(subject, log);
    if (this.logs.size > localLimiterSubjectsMax) this.logs.delete(this.logs.keys().next().value!);
    const resetMs = log.length > 0 ? Math.max(0, Math.floor(log[0]! + this.windowMs - now)) : 0;
    return { allowed, limit: this.limit, remaining: this.limit - log.length, resetMs };
  }
}

/** FallbackLimiter asks the shared limiter and, when it fails (Redis down), the local one. */
export class FallbackLimiter implements RateLimiter {
  constructor(
    private readonly primary: RateLimiter,
    private readonly fallback: RateLimiter,
    private readonly onFallback: (error: unknown) => void,
  ) {}

  async consume(subject: string): Promise<RateDecision> {
    try {
      return await this.primary.consume(subject);
    } catch (error) {
      this.onFallback(error);
      return this.fallback.consume(subject);
    }
  }

  /** consumeNow is the primary's decision when it needs no wait (a failure only shows in consume, which falls back). */
  consumeNow(subject: string): RateDecision | null {
    return this.primary.consumeNow?.(subject) ?? null;
  }
}
