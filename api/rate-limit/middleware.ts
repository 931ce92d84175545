// rateLimit admits or refuses each authenticated request by its key id and sets the
// draft-ietf-httpapi-ratelimit-headers fields (RateLimit-Limit, -Remaining, -Reset) on every answer.
import type { RequestHandler } from 'express';
import { ApiError } from '../errors.js';
import type { RateLimiter } from './sliding-window.js';

export function rateLimit(limiter: RateLimiter, windowMs: number): RequestHandler {
  const windowSeconds = Math.max(1, Math.round(windowMs / 1000));
  // An async function, not a .then callback: a callback would be a new closure per request (tsx renames each).
  return async function rateLimitRequest(req, res, next) {
    const subject = req.auth?.keyId;
    if (subject === undefined) {
      next();
      return;
    }
    let decision: Awaited<ReturnType<RateLimiter['consume']>>;
    try {
      decision = await limiter.consume(subject);
    } catch (error) {
      next(error);
      return;
    }
    const resetSeconds = Math.ceil(decision.resetMs / 1000);
    res.setHeader('RateLimit-Limit', String(decision.limit));
    res.setHeader('RateLimit-Remaining', String(decision.remaining));
    res.setHeader('RateLimit-Reset', String(resetSeconds));
    res.setHeader('RateLimit-Policy', `${decision.limit};w=${windowSeconds}`);
    if (decision.allowed) {
      next();
      return;
    }
    res.setHeader('Retry-After', String(Math.max(1, resetSeconds)));
    next(
      new ApiError('RATE_LIMITED', `rate limit of ${decision.limit} requests per ${windowSeconds}s exceeded`, {
        retryAfterMs: decision.resetMs,
      }),
    );
  };
}
