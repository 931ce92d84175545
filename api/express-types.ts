// The fields this API adds to every Express request.
import type { AuthContext } from './auth/auth-context.js';
import type { DocumentStore } from '../store/document-store.js';
import type { ApiLogger } from './log.js';

declare global {
  // eslint-disable-next-line @typescript-eslint/no-namespace
  namespace Express {
    interface Request {
      /** requestId is the echoed or generated X-Request-Id. */
      requestId: string;
      /** auth is set by the authenticate middleware on every non-public route. */
      auth?: AuthContext;
      /**
       * readStore is the request's read session (set by authenticate): reads through it share the barrier
       * authentication took, so a request asks a follower's leader for a read index once.
       */
      readStore?: DocumentStore;
      /** log is the request's child logger (requestLogger in request-id.ts), made on first use. */
      log?: ApiLogger;
      /** startedMs is performance.now() when the API took the request, set only when metrics or the access log are on. */
      startedMs?: number;
    }
  }
}

export {};
