// Errors the SDK throws. Each carries a stable `code`: the server's code for an error answer (SvcApiError),
// or the SDK's own for a failed connection (SvcConnectionError) or event stream (SvcStreamError).
import { errorBodyLengthMax } from './limits.js';

/** authErrorCodes are the four ways a request can fail authentication (spec: Authentication, rule 4). */
export const authErrorCodes = ['UNAUTHORIZED', 'KEY_REVOKED', 'KEY_EXPIRED', 'IP_NOT_ALLOWED'] as const;
export type AuthErrorCode = (typeof authErrorCodes)[number];

/** ApiErrorCode lists the codes the server documents; an unknown code still arrives as a string. */
export type ApiErrorCode =
  | AuthErrorCode
  | 'VALIDATION_FAILED'
  | 'MALFORMED_JSON'
  | 'FORBIDDEN'
  | 'NOT_FOUND'
  | 'METHOD_NOT_ALLOWED'
  | 'CONFLICT'
  | 'PAYLOAD_TOO_LARGE'
  | 'UNSUPPORTED_MEDIA_TYPE'
  | 'INVALID_CATEGORY'
  | 'INVALID_WORKSPACE'
  | 'RATE_LIMITED'
  | 'NOT_READY'
  | 'QUEUE_UNAVAILABLE'
  | 'CREDENTIALS_UNAVAILABLE'
  | 'INTERNAL'
  /** UNEXPECTED_RESPONSE: the answer was not the API's JSON error (a proxy's page, say). */
  | 'UNEXPECTED_RESPONSE'
  | (string & {});

export class SvcError extends Error {
  readonly code: string;
  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
    this.code = code;
  }
}

/** SvcApiError is an error answer from the server: `{code, message, requestId, details?}` and its status. */
export class SvcApiError extends SvcError {
  declare readonly code: ApiErrorCode;
  readonly status: number;
  readonly requestId: string | null;
  readonly details: unknown;
  /** retryAfterSeconds is the server's Retry-After (on 429), else null. */
  readonly retryAfterSeconds: number | null;

  constructor(fields: {
    status: number;
    code: ApiErrorCode;
    message: string;
    requestId: string | null;
    details?: unknown;
    retryAfterSeconds?: number | null;
  }) {
    super(fields.code, `${fields.status} ${fields.code}: ${fields.message}`);
    this.status = fields.status;
    this.requestId = fields.requestId;
    this.details = fields.details;
    this.retryAfterSeconds = fields.retryAfterSeconds ?? null;
  }
}

export type ConnectionErrorCode = 'CONNECTION_FAILED' | 'TIMEOUT' | 'ABORTED';

/** SvcConnectionError: no answer arrived (refused, reset, timed out, or the caller aborted). */
export class SvcConnectionError extends SvcError {
  declare readonly code: ConnectionErrorCode;
}

export type StreamErrorCode =
  /** RECONNECT_LIMIT: reconnects kept failing; `cause` holds the last failure. */
  | 'RECONNECT_LIMIT'
  /** MALFORMED_EVENT: an event's data is not what its name promises. */
  | 'MALFORMED_EVENT'
  /** EVENT_TOO_LARGE: a line or an event's data is over sseLineLengthMax / sseEventDataLengthMax. */
  | 'EVENT_TOO_LARGE'
  /** NOT_AN_EVENT_STREAM: a 2xx answer that is not text/event-stream. */
  | 'NOT_AN_EVENT_STREAM'
  /** FOREIGN_STREAM_URL: the stream URL points at another origin, which would be sent the API key. */
  | 'FOREIGN_STREAM_URL'
  /** ENDED_EARLY and IDLE_TIMEOUT are why a reconnect happened (seen as a RECONNECT_LIMIT's cause). */
  | 'ENDED_EARLY'
  | 'IDLE_TIMEOUT'
  | 'ABORTED';

/** SvcStreamError: an event stream failed in a way a reconnect does not fix, or reconnects ran out. */
export class SvcStreamError extends SvcError {
  declare readonly code: StreamErrorCode;
}

/** isAuthError tells whether error is an authentication failure (one of authErrorCodes). */
export function isAuthError(error: unknown): error is SvcApiError & { code: AuthErrorCode } {
  return error instanceof SvcApiError && (authErrorCodes as readonly string[]).includes(error.code);
}

/** apiErrorFromBody builds the SvcApiError for an error answer whose body was already read. */
export function apiErrorFromBody(status: number, body: unknown, headers: Headers): SvcApiError {
  const retryAfter = Number(headers.get('retry-after'));
  const retryAfterSeconds = headers.has('retry-after') && Number.isFinite(retryAfter) ? retryAfter : null;
  const headerRequestId = headers.get('x-request-id');
  if (isErrorBody(body)) {
    return new SvcApiError({
      status,
      code: body.code,
      message: body.message,
      requestId: body.requestId ?? headerRequestId,
      details: body.details,
      retryAfterSeconds,
    });
  }
  const text = typeof body === 'string' ? body : (JSON.stringify(body) ?? '');
  const quoted = text.length > errorBodyLengthMax ? `${text.slice(0, errorBodyLengthMax)}…` : text;
  return new SvcApiError({
    status,
    code: 'UNEXPECTED_RESPONSE',
    message: `not an API error body: ${quoted || '(empty)'}`,
    requestId: headerRequestId,
    retryAfterSeconds,
  });
}

/** apiErrorFromResponse reads an error answer's body and builds its SvcApiError. */
export async function apiErrorFromResponse(response: Response): Promise<SvcApiError> {
  const text = await response.text().catch(() => '');
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // Not JSON: quoted as text.
  }
  return apiErrorFromBody(response.status, body, response.headers);
}

/** connectionError classifies what fetch threw when no answer arrived. */
export function connectionError(error: unknown, what: string): SvcError {
  if (error instanceof SvcError) return error;
  const name = (error as { name?: unknown } | null)?.name;
  if (name === 'TimeoutError') return new SvcConnectionError('TIMEOUT', `${what}: timed out`, { cause: error });
  if (name === 'AbortError') return new SvcConnectionError('ABORTED', `${what}: aborted`, { cause: error });
  const detail = (error as { cause?: { code?: unknown } } | null)?.cause?.code ?? (error as Error)?.message;
  return new SvcConnectionError('CONNECTION_FAILED', `${what}: ${String(detail)}`, { cause: error });
}

function isErrorBody(body: unknown): body is { code: string; message: string; requestId?: string; details?: unknown } {
  if (typeof body !== 'object' || body === null) return false;
  const fields = body as Record<string, unknown>;
  return (
    typeof fields.code === 'string' &&
    typeof fields.message === 'string' &&
    (fields.requestId === undefined || typeof fields.requestId === 'string')
  );
}
