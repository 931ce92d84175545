// Test harness for the HTTP API: a real server on 127.0.0.1:0 over the in-memory store double, and a real
// redis-server on a free loopback port. A missing redis-server fails the suite loudly (CI installs it).
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createApp } from '../../api/app.js';
import type { ApiService } from '../../api/app.js';
import type { ApiConfig } from '../../api/config.js';
import { bootstrapAdminKey } from '../../api/auth/api-keys.js';
import type { ClusterSource } from '../../api/cluster/cluster-source.js';
import { MemoryDocumentStore } from '../../store/memory-store.js';
import type { DocumentStore } from '../../store/document-store.js';
import { startLocalRedis } from '../../api/redis/local-redis.js';
import { createApiLogger, type ApiLogger } from '../../api/log.js';
import type { LocalRedis } from '../../api/redis/local-redis.js';

export const testSecretKey = Buffer.alloc(32, 0x5a);

export interface LogLine {
  event: string;
  /** level is pino's name of the line's level (info, warn, error, …). */
  level: string;
  /** msg is the line's message, for people; tests match on event. */
  msg: string;
  fields: Record<string, unknown>;
}

/** memoryLogger is an API logger (the API's redaction included) whose lines land in `lines`, and as written in `written`. */
export function memoryLogger(level = 'debug'): { logger: ApiLogger; lines: LogLine[]; written: string[] } {
  const lines: LogLine[] = [];
  const written: string[] = [];
  const logger = createApiLogger(level, {
    write(text: string) {
      written.push(text);
      // pino's own fields (level, time, msg, the logger's source) are not the caller's: fields holds the rest.
      const {
        event,
        level: levelNumber,
        msg,
        time: _time,
        source: _source,
        ...fields
      } = JSON.parse(text) as Record<string, unknown>;
      lines.push({
        event: String(event),
        level: logger.levels.labels[levelNumber as number] ?? String(levelNumber),
        msg: String(msg),
        fields,
      });
    },
  });
  return { logger, lines, written };
}

export interface TestApi {
  baseUrl: string;
  store: DocumentStore;
  service: ApiService;
  adminKey: string;
  adminKeyId: string;
  adminUserId: string;
  logs: LogLine[];
  call(method: string, urlPath: string, options?: CallOptions): Promise<CallResult>;
  close(): Promise<void>;
}

export interface CallOptions {
  /** key defaults to the admin key; null sends no X-API-Key header. */
  key?: string | null;
  body?: unknown;
  /** rawBody is sent as-is instead of JSON-encoding body. */
  rawBody?: string;
  headers?: Record<string, string>;
}

export interface CallResult {
  status: number;
  headers: Headers;
  text: string;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  json: any;
}

export interface TestApiOptions {
  redisUrl?: string;
  config?: Partial<ApiConfig>;
  /** store defaults to the in-memory double; pass another DocumentStore to run the API tests over it. */
  store?: DocumentStore;
  /** cluster is the node's view for /cluster (without it, /cluster answers 404 as on an API without a node). */
  cluster?: ClusterSource;
}

export async function startTestApi(options: TestApiOptions = {}): Promise<TestApi> {
  const store = options.store ?? new MemoryDocumentStore();
  const memory = memoryLogger();
  const logs = memory.lines;
  const admin = await bootstrapAdminKey(store, 'test-admin');
  const service = createApp({
    store,
    redis: options.redisUrl ? { url: options.redisUrl } : undefined,
    ...(options.cluster ? { cluster: options.cluster } : {}),
    config: {
      validateResponses: true,
      secretKey: testSecretKey,
      rateLimitPerSecond: 10_000,
      log: memory.logger,
      ...options.config,
    },
  });
  const server: Server = service.app.listen(0, '127.0.0.1');
  await new Promise<void>((resolve, reject) => {
    server.once('listening', resolve);
    server.once('error', reject);
  });
  const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  const call = async (method: string, urlPath: string, callOptions: CallOptions = {}): Promise<CallResult> => {
    const headers: Record<string, string> = { ...callOptions.headers };
    const key = callOptions.key === undefined ? admin.key : callOptions.key;
    if (key !== null) headers['x-api-key'] = key;
    let body: string | undefined = callOptions.rawBody;
    if (body === undefined && callOptions.body !== undefined) body = JSON.stringify(callOptions.body);
    if (body !== undefined && !Object.keys(headers).some((name) => name.toLowerCase() === 'content-type')) {
      headers['content-type'] = 'application/json';
    }
    const response = await fetch(baseUrl + urlPath, { method, headers, body });
    const text = await response.text();
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      json = undefined;
    }
    return { status: response.status, headers: response.headers, text, json };
  };

  return {
    baseUrl,
    store,
    service,
    adminKey: admin.key,
    adminKeyId: admin.keyId,
    adminUserId: admin.userId,
    logs,
    call,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await service.close();
    },
  };
}

export interface TestRedis extends LocalRedis {
  dir: string;
}

export async function startTestRedis(): Promise<TestRedis> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'svc-api-redis-'));
  const redis = await startLocalRedis(dir);
  return {
    ...redis,
    dir,
    async stop() {
      await redis.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** ApiOnRedis is a suite's throwaway Redis and the API on it, there from its before() hook on. */
export interface ApiOnRedis {
  readonly api: TestApi;
  readonly redis: TestRedis;
}

/**
 * useApiOnRedis registers the suite's hooks: before() starts a test Redis and an API on it (with options),
 * after() closes the API and then stops Redis. Call it inside describe(); read .api and .redis in tests.
 */
export function useApiOnRedis(options: Omit<TestApiOptions, 'redisUrl'> = {}): ApiOnRedis {
  let redis: TestRedis | undefined;
  let api: TestApi | undefined;
  before(async () => {
    redis = await startTestRedis();
    api = await startTestApi({ ...options, redisUrl: redis.url });
  });
  after(async () => {
    await api?.close();
    await redis?.stop();
  });
  const started = <T>(value: T | undefined, what: string): T => {
    if (value === undefined) throw new Error(`${what} is not started: read it inside a test or hook, after before()`);
    return value;
  };
  return {
    get api() {
      return started(api, 'the test API');
    },
    get redis() {
      return started(redis, 'the test Redis');
    },
  };
}

/** waitFor polls condition until it holds or timeoutMs passes (then it throws with the last value seen). */
export async function waitFor<T>(
  read: () => Promise<T>,
  holds: (value: T) => boolean,
  timeoutMs = 10_000,
  intervalMs = 25,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: T = await read();
  while (!holds(last)) {
    if (Date.now() > deadline)
      throw new Error(`condition not met within ${timeoutMs} ms; last: ${JSON.stringify(last)}`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
    last = await read();
  }
  return last;
}
