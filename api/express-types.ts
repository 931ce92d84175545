// The fields this API adds to every Express request.
import type { AuthContext } from './auth/auth-context.js';

declare global {
  // eslint-disable-next-line @typescript-eslint/no-namespace
  namespace Express {
    interface Request {
      /** requestId is the echoed or generated X-Request-Id. */
      requestId: string;
      /** auth is set by the authenticate middleware on every non-public route. */
      auth?: AuthContext;
    }
  }
}

export {};
