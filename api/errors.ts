// Errors are data: every failure answers JSON {code, message, requestId, details?} with a stable code.
import type { ErrorRequestHandler, RequestHandler } from 'express';
import { isVersionConflict } from '../store/document-store.js';
import type { ApiLogger } from './log.js';
import { requestLogger } from './request-id.js';

export const errorStatusByCode = {
  VALIDATION_FAILED: 400,
  MALFORMED_JSON: 400,
  BAD_REQUEST: 400,
  UNAUTHORIZED: 401,
  KEY_REVOKED: 401,
  KEY_EXPIRED: 401,
  IP_NOT_ALLOWED: 403,
  FORBIDDEN: 403,
  KEY_SCOPE_EXCEEDED: 403,
  NOT_FOUND: 404,
  METHOD_NOT_ALLOWED: 405,
  NOT_ACCEPTABLE: 406,
  CONFLICT: 409,
  PAYLOAD_TOO_LARGE: 413,
  UNSUPPORTED_MEDIA_TYPE: 415,
  INVALID_CATEGORY: 422,
  INVALID_WORKSPACE: 422,
  RATE_LIMITED: 429,
  INTERNAL: 500,
  NOT_READY: 503,
  QUEUE_UNAVAILABLE: 503,
  CREDENTIALS_UNAVAILABLE: 503,
  STORE_UNAVAILABLE: 503,
  /** OUTSIDE_COMMUNITIES: a filtered member (a read replica of some communities) was asked for data it does not hold. */
  OUTSIDE_COMMUNITIES: 421,
} as const;

export type ErrorCode = keyof typeof errorStatusByCode;

export class ApiError extends Error {
  readonly status: number;
  /** retryAfterSeconds goes out as Retry-After: a refusal that is safe to repeat after that long. */
  retryAfterSeconds: number | undefined;
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details?: unknown,
  ) {
    super(message);
    this.name = 'ApiError';
    this.status = errorStatusByCode[code];
  }
}

export interface ErrorBody {
  code: ErrorCode;
  message: string;
  requestId: string;
  details?: unknown;
}

/** codeForStatus names errors thrown by Express, body-parser and the OpenAPI validator, which carry a status. */
function codeForStatus(status: number): ErrorCode {
  switch (status) {
    case 400:
      return 'BAD_REQUEST';
    case 401:
      return 'UNAUTHORIZED';
    case 403:
      return 'FORBIDDEN';
    case 404:
      return 'NOT_FOUND';
    case 405:
      return 'METHOD_NOT_ALLOWED';
    case 406:
      return 'NOT_ACCEPTABLE';
    case 409:
      return 'CONFLICT';
    case 413:
      return 'PAYLOAD_TOO_LARGE';
    case 415:
      return 'UNSUPPORTED_MEDIA_TYPE';
    case 429:
      return 'RATE_LIMITED';
    default:
      return status >= 400 && status < 500 ? 'BAD_REQUEST' : 'INTERNAL';
  }
}

const genericMessages: Partial<Record<ErrorCode, string>> = {
  BAD_REQUEST: 'bad request',
  NOT_FOUND: 'no such route or resource',
  METHOD_NOT_ALLOWED: 'method not allowed',
  UNSUPPORTED_MEDIA_TYPE: 'send application/json',
  PAYLOAD_TOO_LARGE: 'request is too large',
};

interface HttpishError {
  status?: unknown;
  statusCode?: unknown;
  type?: unknown;
  message?: unknown;
  errors?: unknown;
  path?: unknown;
}

/** toApiError turns anything thrown into an ApiError; unknown errors become INTERNAL and hide their message. */
export function toApiError(error: unknown): ApiError {
  if (error instanceof ApiError) return error;
  if (isVersionConflict(error)) return new ApiError('CONFLICT', 'the record changed concurrently; retry');
  // The replicated store's StoreUnavailableError (no leader, partition, removed node): retryable, not a bug.
  if (typeof error === 'object' && error !== null && (error as { code?: unknown }).code === 'STORE_UNAVAILABLE') {
    // A node catching up (store/errors.ts StoreCatchingUpError) refused a read at once: nothing was written, so
    // it says when to come back (the SDK honours Retry-After); any member that has caught up answers now.
    const catchingUp = error as { catchingUp?: unknown; retryAfterSeconds?: unknown };
    if (catchingUp.catchingUp === true && typeof catchingUp.retryAfterSeconds === 'number') {
      const refusal = new ApiError(
        'STORE_UNAVAILABLE',
        'this node is catching up with the cluster; retry after Retry-After, or at another node',
      );
      refusal.retryAfterSeconds = catchingUp.retryAfterSeconds;
      return refusal;
    }
    return new ApiError('STORE_UNAVAILABLE', 'the cluster could not commit or confirm in time; retry');
  }
  // A filtered member asked for keys outside its communities (store/errors.ts): read at an unfiltered member.
  if (typeof error === 'object' && error !== null && (error as { code?: unknown }).code === 'OUTSIDE_COMMUNITIES') {
    return new ApiError('OUTSIDE_COMMUNITIES', (error as Error).message);
  }
  const httpish = (typeof error === 'object' && error !== null ? error : {}) as HttpishError;
  const rawStatus = typeof httpish.status === 'number' ? httpish.status : httpish.statusCode;
  const status = typeof rawStatus === 'number' && rawStatus >= 400 && rawStatus < 600 ? rawStatus : 500;
  if (httpish.type === 'entity.parse.failed') return new ApiError('MALFORMED_JSON', 'request body is not valid JSON');
  if (httpish.type === 'entity.too.large') return new ApiError('PAYLOAD_TOO_LARGE', 'request body is too large');
  if (status >= 500) return new ApiError('INTERNAL', 'internal error');
  // express-openapi-validator reports schema failures as 400 with an `errors` array.
  if (status === 400 && Array.isArray(httpish.errors)) {
    const details = (httpish.errors as Array<Record<string, unknown>>).map((item) => ({
      path: String(item.path ?? ''),
      message: String(item.message ?? ''),
      ...(typeof item.errorCode === 'string' ? { errorCode: item.errorCode } : {}),
    }));
    return new ApiError('VALIDATION_FAILED', 'request does not match the API schema', details);
  }
  const code = codeForStatus(status);
  // Only the validator's messages are known to be safe to show; others (a static-file miss, say) may name
  // server paths, so they get a generic message.
  const fromValidator = Array.isArray(httpish.errors);
  const message =
    fromValidator && typeof httpish.message === 'string' && httpish.message.length <= 500
      ? httpish.message
      : (genericMessages[code] ?? code);
  const apiError = new ApiError(code, message);
  (apiError as { status: number }).status = status;
  return apiError;
}

export function sendError(res: Parameters<RequestHandler>[1], error: ApiError, requestId: string): void {
  const body: ErrorBody = { code: error.code, message: error.message, requestId };
  if (error.details !== undefined) body.details = error.details;
  if (res.headersSent) {
    res.end();
    return;
  }
  if (error.retryAfterSeconds !== undefined) res.setHeader('Retry-After', String(error.retryAfterSeconds));
  res.status(error.status).type('application/json').send(JSON.stringify(body));
}

export function errorHandler(log: ApiLogger): ErrorRequestHandler {
  return (error: unknown, req, res, _next) => {
    const apiError = toApiError(error);
    if (apiError.code === 'INTERNAL') {
      // Only the error's name and message are logged: request bodies may hold secrets.
      requestLogger(req, log).error(
        {
          event: 'request.error',
          method: req.method,
          path: req.path,
          error: error instanceof Error ? `${error.name}: ${error.message}` : String(error),
        },
        'request failed with an internal error',
      );
    }
    sendError(res, apiError, req.requestId ?? 'unknown');
  };
}
