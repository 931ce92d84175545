// readEventStream consumes an event stream over fetch and survives dropped connections: it reconnects with
// Last-Event-ID set to the last event it delivered, so no event is repeated or skipped, and it ends after the
// event its decoder calls final (a run's `complete`). A stream that goes silent past idleTimeoutMs (the server
// sends keep-alives) counts as dropped. Reconnects are bounded: reconnectAttemptsMax in a row that deliver
// nothing, then RECONNECT_LIMIT.
import { SvcApiError, SvcError, SvcStreamError, apiErrorFromResponse, connectionError } from './errors.js';
import {
  reconnectAttemptsMaxDefault,
  reconnectDelayMsDefault,
  reconnectDelayMsMax,
  streamIdleTimeoutMsDefault,
} from './limits.js';
import { SseParser } from './sse-parser.js';
import type { SseEvent, SseLimits } from './sse-parser.js';

export interface StreamOptions {
  /** lastEventId resumes after this event, as a reconnect does; by default the stream starts at its beginning. */
  lastEventId?: string;
  /** signal stops the stream; the iterator then throws SvcStreamError ABORTED. */
  signal?: AbortSignal;
  idleTimeoutMs?: number;
  reconnectAttemptsMax?: number;
  reconnectDelayMs?: number;
  /** onReconnect is told before each reconnect why it happens and after which event it resumes. */
  onReconnect?: (info: ReconnectInfo) => void;
  /** sseLimits overrides the parser's line and data bounds. */
  sseLimits?: Partial<SseLimits>;
}

export interface ReconnectInfo {
  /** attempt counts reconnects since the last delivered event, from 1. */
  attempt: number;
  lastEventId: string | null;
  delayMs: number;
  reason: SvcError;
}

/** StreamTransport is what the client hands over: where the stream is, how to fetch, and the key header. */
export interface StreamTransport {
  url: string;
  fetch: typeof fetch;
  headers: Record<string, string>;
}

/** EventDecoder turns each SSE event into what the stream yields, and says which event ends the stream. */
export interface EventDecoder<T extends { id: string }> {
  decode(event: SseEvent): T;
  isFinal(event: T): boolean;
}

/** retryableStatuses are answers a later reconnect may get past. */
const retryableStatuses = new Set([429, 502, 503, 504]);

export async function* readEventStream<T extends { id: string }>(
  transport: StreamTransport,
  decoder: EventDecoder<T>,
  options: StreamOptions = {},
): AsyncGenerator<T, void, undefined> {
  const idleTimeoutMs = options.idleTimeoutMs ?? streamIdleTimeoutMsDefault;
  const attemptsMax = options.reconnectAttemptsMax ?? reconnectAttemptsMaxDefault;
  const delayMsFirst = options.reconnectDelayMs ?? reconnectDelayMsDefault;
  let lastEventId: string | null = options.lastEventId ?? null;
  let serverRetryMs: number | null = null;
  let failures = 0;

  for (;;) {
    throwIfAborted(options.signal);
    const connection = new AbortController();
    const signal = options.signal ? AbortSignal.any([options.signal, connection.signal]) : connection.signal;
    const idleError = new SvcStreamError('IDLE_TIMEOUT', `no bytes for ${idleTimeoutMs} ms`);
    let idleTimer: ReturnType<typeof setTimeout> | undefined;
    const armIdleTimer = () => {
      clearTimeout(idleTimer);
      idleTimer = setTimeout(() => connection.abort(idleError), idleTimeoutMs);
    };
    let reason: SvcError;
    try {
      const headers: Record<string, string> = { ...transport.headers, accept: 'text/event-stream' };
      if (lastEventId !== null) headers['last-event-id'] = lastEventId;
      armIdleTimer();
      const response = await transport.fetch(transport.url, { headers, signal });
      if (!response.ok) throw await apiErrorFromResponse(response);
      const contentType = response.headers.get('content-type') ?? '';
      if (!/^text\/event-stream\b/i.test(contentType) || !response.body) {
        await response.body?.cancel().catch(() => undefined);
        throw new SvcStreamError('NOT_AN_EVENT_STREAM', `expected text/event-stream, got ${contentType || 'no body'}`);
      }
      const parser = new SseParser(options.sseLimits);
      const textDecoder = new TextDecoder();
      const reader = response.body.getReader();
      try {
        for (;;) {
          armIdleTimer();
          const { done, value } = await reader.read();
          // The consumer's time between events is not the server's silence.
          clearTimeout(idleTimer);
          const sseEvents = done
            ? [...parser.push(textDecoder.decode()), ...parser.end()]
            : parser.push(textDecoder.decode(value, { stream: true }));
          for (const sseEvent of sseEvents) {
            serverRetryMs = sseEvent.retryMs;
            const event = decoder.decode(sseEvent);
            if (event.id !== '') lastEventId = event.id;
            failures = 0;
            yield event;
            if (decoder.isFinal(event)) return;
          }
          if (done) break;
        }
      } finally {
        // Abort too, so the socket closes however the loop is left: complete, an error, or the consumer breaking out.
        connection.abort();
        await reader.cancel().catch(() => undefined);
      }
      reason = new SvcStreamError('ENDED_EARLY', 'the stream ended before its final event');
    } catch (error) {
      reason = classify(error, options.signal, connection.signal, idleError);
    } finally {
      clearTimeout(idleTimer);
      connection.abort();
    }

    failures += 1;
    if (failures > attemptsMax) {
      throw new SvcStreamError(
        'RECONNECT_LIMIT',
        `gave up after ${attemptsMax} reconnect(s) without an event: ${reason.message}`,
        { cause: reason },
      );
    }
    const retryAfterMs =
      reason instanceof SvcApiError && reason.retryAfterSeconds !== null ? reason.retryAfterSeconds * 1000 : 0;
    const backoffMs = serverRetryMs ?? delayMsFirst * 2 ** (failures - 1);
    const delayMs = Math.min(Math.max(backoffMs, retryAfterMs), reconnectDelayMsMax);
    options.onReconnect?.({ attempt: failures, lastEventId, delayMs, reason });
    await sleep(delayMs, options.signal);
  }
}

/** classify turns what a connection threw into the reason to reconnect, or throws when reconnecting can't help. */
function classify(
  error: unknown,
  userSignal: AbortSignal | undefined,
  connectionSignal: AbortSignal,
  idleError: SvcStreamError,
): SvcError {
  if (userSignal?.aborted) throw abortedError(userSignal);
  if (connectionSignal.aborted && connectionSignal.reason === idleError) return idleError;
  if (error instanceof SvcApiError) {
    if (retryableStatuses.has(error.status)) return error;
    throw error;
  }
  if (error instanceof SvcStreamError) throw error;
  return connectionError(error, 'event stream');
}

function throwIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw abortedError(signal);
}

function abortedError(signal: AbortSignal): SvcStreamError {
  return new SvcStreamError('ABORTED', 'the event stream was aborted', { cause: signal.reason });
}

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      clearTimeout(timer);
      reject(abortedError(signal!));
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
