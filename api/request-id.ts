// Every request gets an id: the client's X-Request-Id when it is short and plain, otherwise a new UUID.
// It is echoed in the X-Request-Id response header and in every error body.
import { randomUUID } from 'node:crypto';
import type { Request, RequestHandler, Response } from 'express';
import { requestIdLengthMax } from './limits.js';
import type { ApiLogger } from './log.js';

const requestIdPattern = new RegExp(`^[A-Za-z0-9._:-]{1,${requestIdLengthMax}}$`);

/** assignRequestId sets req.requestId and the X-Request-Id response header. */
export function assignRequestId(req: Request, res: Response): void {
  const offered = req.headers['x-request-id'];
  req.requestId = typeof offered === 'string' && requestIdPattern.test(offered) ? offered : randomUUID();
  res.setHeader('X-Request-Id', req.requestId);
}

export function requestId(): RequestHandler {
  return (req, res, next) => {
    assignRequestId(req, res);
    next();
  };
}

/**
 * requestLogger is the request's child of `base`, bound to its request id, so every line written while serving
 * it carries the id. Made on the first line, not per request: most requests log nothing.
 */
export function requestLogger(req: Request, base: ApiLogger): ApiLogger {
  return (req.log ??= base.child({ requestId: req.requestId }));
}
