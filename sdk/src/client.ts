// SvcClient is the SDK's entry point: the generated operations (SvcApi, from the OpenAPI document) on an HTTP
// client that sends the API key, bounds each call, and throws typed errors, plus the event-stream helpers.
import { SvcApi } from './gen/sdk.gen.js';
import { createClient, createConfig } from './gen/client/index.js';
import type { Client } from './gen/client/index.js';
import { SvcError, SvcStreamError, apiErrorFromBody, connectionError } from './errors.js';
import {
  apiKeyEnvName,
  requestTimeoutMsDefault,
  retryAfterMsMax,
  retryAttemptsMaxDefault,
  serverUrlEnvName,
} from './limits.js';
import { readEventStream } from './event-stream.js';
import type { StreamOptions } from './event-stream.js';
import { channelEventDecoder, runEventDecoder } from './run-events.js';
import type { ChannelEvent, RunCompleteData, RunEvent } from './run-events.js';

/** userEventsPath is the caller's user channel (album progress), an open-ended stream. */
const userEventsPath = '/events';

export interface SvcClientOptions {
  /** apiKey is sent as X-API-Key. Default: the SVC_API_KEY environment variable; without either no key is sent,
   * and keyed operations answer UNAUTHORIZED. */
  apiKey?: string;
  /** baseUrl is the server's URL, e.g. http://127.0.0.1:8080 (a path prefix is kept). Default: SVC_URL. */
  baseUrl?: string;
  /** fetch replaces globalThis.fetch (for a proxy agent, or to observe requests). */
  fetch?: typeof fetch;
  /**
   * dispatcher goes to every fetch as RequestInit.dispatcher (Node's fetch is undici): an undici Agent made with
   * `connect: { ca }` trusts a private CA, such as a cluster's (cluster.json's tls.caFile). The SDK itself depends
   * on no undici; NODE_EXTRA_CA_CERTS is the other way.
   */
  dispatcher?: object;
  /** requestTimeoutMs bounds each call; event streams are bounded by idleTimeoutMs instead. */
  requestTimeoutMs?: number;
  /**
   * retryAttemptsMax: how many times a call answered 503 with Retry-After is sent again, after waiting what the
   * server asked (at most retryAfterMsMax; every attempt within requestTimeoutMs). The server sends Retry-After
   * on a 503 only when the request wrote nothing (a node catching up), so a retry cannot write twice. Default
   * retryAttemptsMaxDefault; 0 turns retries off.
   */
  retryAttemptsMax?: number;
  /** env is where the defaults come from; default process.env. */
  env?: Record<string, string | undefined>;
}

export class SvcClient extends SvcApi {
  /** baseUrl is the server URL without a trailing slash. */
  readonly baseUrl: string;
  readonly #apiKey: string | undefined;
  readonly #fetch: typeof fetch;

  constructor(options: SvcClientOptions = {}) {
    const env = options.env ?? (typeof process === 'undefined' ? {} : process.env);
    const baseUrl = checkBaseUrl(options.baseUrl ?? env[serverUrlEnvName]);
    const apiKey = checkApiKey(options.apiKey ?? env[apiKeyEnvName]);
    const requestTimeoutMs = options.requestTimeoutMs ?? requestTimeoutMsDefault;
    if (!Number.isFinite(requestTimeoutMs) || requestTimeoutMs <= 0) {
      throw new SvcError('INVALID_OPTIONS', `requestTimeoutMs must be a positive number, not ${requestTimeoutMs}`);
    }
    const retryAttemptsMax = options.retryAttemptsMax ?? retryAttemptsMaxDefault;
    if (!Number.isSafeInteger(retryAttemptsMax) || retryAttemptsMax < 0) {
      throw new SvcError('INVALID_OPTIONS', `retryAttemptsMax must be a non-negative integer, not ${retryAttemptsMax}`);
    }
    const baseFetch = withDispatcher(options.fetch ?? globalThis.fetch, options.dispatcher);
    const callFetch = timedFetch(retryingFetch(baseFetch, retryAttemptsMax), requestTimeoutMs);
    super({ client: createHttpClient(baseUrl, apiKey, callFetch) });
    this.baseUrl = baseUrl;
    this.#apiKey = apiKey;
    this.#fetch = baseFetch;
  }

  /** hasApiKey tells whether this client sends a key (the key itself stays private). */
  get hasApiKey(): boolean {
    return this.#apiKey !== undefined;
  }

  /**
   * runEvents iterates a run's events (streamUrl from runCommand, relative to the server URL) until `complete`,
   * reconnecting with Last-Event-ID when the connection drops. Breaking out of the loop closes the stream.
   */
  runEvents(streamUrl: string, options: StreamOptions = {}): AsyncGenerator<RunEvent, void, undefined> {
    return readEventStream(this.streamTransport(streamUrl), runEventDecoder, options);
  }

  /**
   * userEvents iterates the caller's user channel (GET /events: album progress) with the same reconnects. It
   * has no last event: stop it with break or options.signal. Without options.lastEventId it starts now.
   */
  userEvents(options: StreamOptions = {}): AsyncGenerator<ChannelEvent, void, undefined> {
    return readEventStream(this.streamTransport(userEventsPath), channelEventDecoder, options);
  }

  /** streamRun calls onEvent for each event of the run, in order, and resolves with the `complete` event's data. */
  async streamRun(
    streamUrl: string,
    onEvent: (event: RunEvent) => void | Promise<void>,
    options: StreamOptions = {},
  ): Promise<RunCompleteData> {
    for await (const event of this.runEvents(streamUrl, options)) {
      await onEvent(event);
      if (event.event === 'complete') return event.data;
    }
    throw new SvcStreamError('ENDED_EARLY', 'the stream ended before its complete event');
  }

  private streamTransport(streamUrl: string) {
    const headers: Record<string, string> = this.#apiKey === undefined ? {} : { 'x-api-key': this.#apiKey };
    return { url: this.resolveStreamUrl(streamUrl), headers, fetch: this.#fetch };
  }

  /** resolveStreamUrl makes streamUrl absolute; it refuses another origin, which would be sent the API key. */
  resolveStreamUrl(streamUrl: string): string {
    if (typeof streamUrl !== 'string' || streamUrl.length === 0) {
      throw new SvcError('INVALID_OPTIONS', 'streamUrl must be a non-empty string (runCommand gives it)');
    }
    const absolute = /^[a-z][a-z0-9+.-]*:/i.test(streamUrl);
    const url = new URL(absolute ? streamUrl : this.baseUrl + (streamUrl.startsWith('/') ? '' : '/') + streamUrl);
    if (url.origin !== new URL(this.baseUrl).origin) {
      throw new SvcStreamError('FOREIGN_STREAM_URL', `${url.origin} is not the server ${new URL(this.baseUrl).origin}`);
    }
    return url.href;
  }
}

function createHttpClient(baseUrl: string, apiKey: string | undefined, fetchImpl: typeof fetch): Client {
  const client = createClient(createConfig({ baseUrl, auth: apiKey, throwOnError: true, fetch: fetchImpl }));
  // The generated client throws the parsed error body; every failure becomes a typed SvcError instead.
  client.interceptors.error.use((error: unknown, response: Response | undefined) =>
    response ? apiErrorFromBody(response.status, error, response.headers) : connectionError(error, 'request'),
  );
  return client;
}

/** withDispatcher passes `dispatcher` in every call's init (a Request's own init does not carry one through). */
function withDispatcher(baseFetch: typeof fetch, dispatcher: object | undefined): typeof fetch {
  if (dispatcher === undefined) return baseFetch;
  return (input, init) => baseFetch(input, { ...init, dispatcher } as RequestInit);
}

/**
 * retryingFetch sends a call again, up to attemptsMax times, when it is answered 503 with a Retry-After in seconds
 * no longer than retryAfterMsMax, after waiting that long (cut short by the call's signal). Any other answer, and
 * the last 503, goes to the caller as it came.
 */
function retryingFetch(baseFetch: typeof fetch, attemptsMax: number): typeof fetch {
  if (attemptsMax === 0) return baseFetch;
  return async (input, init) => {
    for (let attempt = 0; ; attempt++) {
      // A Request's body is read when sent: a copy is kept for the next attempt.
      const spare = attempt < attemptsMax && input instanceof Request ? input.clone() : input;
      const response = await baseFetch(input, init);
      const waitMs = attempt < attemptsMax ? retryAfterMs(response) : null;
      if (waitMs === null) return response;
      await response.body?.cancel();
      await sleep(waitMs, init?.signal ?? (input instanceof Request ? input.signal : undefined));
      input = spare;
    }
  };
}

/** retryAfterMs reads a 503's Retry-After (delay-seconds only: a date is not waited for); null when not to retry. */
function retryAfterMs(response: Response): number | null {
  if (response.status !== 503) return null;
  const header = response.headers.get('retry-after');
  if (header === null || !/^\d{1,6}$/.test(header.trim())) return null;
  const ms = Number(header.trim()) * 1000;
  return ms <= retryAfterMsMax ? ms : null;
}

/** sleep waits ms, or rejects with the signal's reason when it aborts first. */
function sleep(ms: number, signal: AbortSignal | null | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** timedFetch bounds each call by timeoutMs, keeping the caller's own signal. */
function timedFetch(baseFetch: typeof fetch, timeoutMs: number): typeof fetch {
  return (input, init) => {
    const signals = [AbortSignal.timeout(timeoutMs)];
    if (init?.signal) signals.push(init.signal);
    else if (input instanceof Request) signals.push(input.signal);
    return baseFetch(input, { ...init, signal: AbortSignal.any(signals) });
  };
}

function checkBaseUrl(value: string | undefined): string {
  if (value === undefined || value === '') {
    throw new SvcError('INVALID_OPTIONS', `no server URL: pass baseUrl or set ${serverUrlEnvName}`);
  }
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new SvcError('INVALID_OPTIONS', `the server URL ${JSON.stringify(value)} is not a URL`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new SvcError('INVALID_OPTIONS', `the server URL must be http or https, not ${url.protocol}`);
  }
  if (url.search !== '' || url.hash !== '' || url.username !== '' || url.password !== '') {
    throw new SvcError('INVALID_OPTIONS', 'the server URL must not carry a query, a fragment or credentials');
  }
  return url.href.replace(/\/+$/, '');
}

function checkApiKey(value: string | undefined): string | undefined {
  if (value === undefined || value === '') return undefined;
  // Said without the key itself, which must never reach a log.
  if (!/^[\x21-\x7e]+$/.test(value)) {
    throw new SvcError(
      'INVALID_OPTIONS',
      'the API key has characters a header cannot carry (spaces, newlines, non-ASCII)',
    );
  }
  return value;
}
