// rateLimit admits or refuses each authenticated request by its key id and sets the
// draft-ietf-httpapi-ratelimit-headers fields (RateLimit-Limit, -Remaining, -Reset) on every answer.
import type { NextFunction, RequestHandler, Response } from 'express';
import { ApiError } from '../errors.js';
import { setConstantHeaders, type ConstantHeaders } from '../response-class.js';
import type { RateDecision, RateLimiter } from './sliding-window.js';

export function rateLimit(limiter: RateLimiter, windowMs: number): RequestHandler {
  const windowSeconds = Math.max(1, Math.round(windowMs / 1000));
  const headers = new DecisionHeaders(windowSeconds);
  /** waitForDecision: a request the limiter cannot judge at once (a lease from Redis in flight). */
  async function waitForDecision(subject: string, res: Response, next: NextFunction): Promise<void> {
    let decision: RateDecision;
    try {
      decision = await limiter.consume(subject);
    } catch (error) {
      next(error);
      return;
    }
    headers.answer(decision, res, next);
  }
  // Most requests are judged at once (limiter.consumeNow): no promise, no microtask hop.
  return function rateLimitRequest(req, res, next) {
    const subject = req.auth?.keyId;
    if (subject === undefined) {
      next();
      return;
    }
    const decided = limiter.consumeNow?.(subject) ?? null;
    if (decided === null) return waitForDecision(subject, res, next);
    headers.answer(decided, res, next);
    return undefined;
  };
}

/**
 * DecisionHeaders sets a decision's draft-ietf-httpapi-ratelimit-headers fields and passes the request on or
 * refuses it. The limit's two headers are one constant list while the limit stays the same (every request):
 * the node's response class writes it as one block (response-class.ts).
 */
class DecisionHeaders {
  private limit = -1;
  private limitHeaders: ConstantHeaders = [];

  constructor(private readonly windowSeconds: number) {}

  answer(decision: RateDecision, res: Response, next: NextFunction): void {
    if (decision.limit !== this.limit) {
      this.limit = decision.limit;
      this.limitHeaders = [
        ['RateLimit-Limit', String(decision.limit)],
        ['RateLimit-Policy', `${decision.limit};w=${this.windowSeconds}`],
      ];
    }
    const resetSeconds = Math.ceil(decision.resetMs / 1000);
    setConstantHeaders(res, this.limitHeaders);
    res.setHeader('RateLimit-Remaining', String(decision.remaining));
    res.setHeader('RateLimit-Reset', String(resetSeconds));
    if (decision.allowed) {
      next();
      return;
    }
    res.setHeader('Retry-After', String(Math.max(1, resetSeconds)));
    next(
      new ApiError('RATE_LIMITED', `rate limit of ${decision.limit} requests per ${this.windowSeconds}s exceeded`, {
        retryAfterMs: decision.resetMs,
      }),
    );
  }
}
