// ApiConfig gathers every setting of the HTTP API; configFromEnv reads the environment variables env-settings.ts
// declares.
import { readFileSync } from 'node:fs';
import type { Registry } from 'prom-client';
import { defaultApiLogger, type ApiLogger } from './log.js';
import { rateLimitPerSecondDefault, sseKeepAliveMsDefault } from './limits.js';
import type { RunBackendName } from './runs/run-backend.js';
import { apiEnvSetting, envSetting, envValueProblem } from './env-settings.js';
import { parseSecretKey } from './secret-key.js';

export type { ApiLogger };

export interface ApiConfig {
  /** rateLimitPerSecond is the request rate allowed per API key, cluster-wide (SVC_RATE_LIMIT_RPS). */
  rateLimitPerSecond: number;
  /** secretKey (32 bytes) encrypts credential values; without it credential endpoints answer 503. */
  secretKey?: Buffer;
  /** trustedProxies lists IPs/CIDRs whose X-Forwarded-For is believed (SVC_TRUSTED_PROXIES, comma-separated). */
  trustedProxies: string[];
  /** isReady gates GET /ready (503 NOT_READY until it returns true). */
  isReady: () => boolean | Promise<boolean>;
  /** validateResponses checks every JSON response against the OpenAPI document (tests: a drift becomes a 500). */
  validateResponses: boolean;
  /** workspaceRoot, when set, confines project workspaces to directories under it (SVC_WORKSPACE_ROOT). */
  workspaceRoot?: string;
  /** queueNames are the BullMQ queues that /work/stats reports. */
  queueNames: string[];
  /**
   * log is a pino logger (api/log.ts): a node's child, else JSON lines on stderr. Lines carry an `event` name and
   * never request bodies, keys or secret values (and the logger redacts such fields should one slip in).
   */
  log: ApiLogger;
  /**
   * metricsRegistry, when given, gets the API's HTTP, event-stream and queue families (api/http-metrics.ts): a
   * node passes the registry its metrics listener serves. Without it the API keeps no metrics at all.
   */
  metricsRegistry?: Registry;
  /** sseKeepAliveMs is the interval of keep-alive comments on a quiet run event stream. */
  sseKeepAliveMs: number;
  /**
   * accessLog logs one `request` event per answer at info (SVC_ACCESS_LOG=1): method, route pattern, path
   * without query, status, duration, request id and key id. Never headers, query strings or bodies, which may
   * carry secrets.
   */
  accessLog: boolean;
  /**
   * runBackend is where agent runs go (SVC_RUN_BACKEND): `bubblewrap` on the worker's host (the default) or
   * `kubernetes`, one Job per run (api/runs/kubernetes-backend.ts; its settings: run-backend-config.ts).
   */
  runBackend: RunBackendName;
}

export const agentRunQueueName = 'agent-runs';
/** albumQueueName is the BullMQ queue of album anchor and shot jobs (api/albums/). */
export const albumQueueName = 'album-jobs';

export function defaultConfig(overrides: Partial<ApiConfig> = {}): ApiConfig {
  return {
    rateLimitPerSecond: rateLimitPerSecondDefault,
    trustedProxies: [],
    isReady: () => true,
    validateResponses: false,
    queueNames: [agentRunQueueName, albumQueueName],
    log: overrides.log ?? defaultApiLogger(),
    sseKeepAliveMs: sseKeepAliveMsDefault,
    accessLog: false,
    runBackend: 'bubblewrap',
    ...overrides,
  };
}

export { parseSecretKey } from './secret-key.js';

export function parseRateLimit(text: string): number {
  const setting = apiEnvSetting('SVC_RATE_LIMIT_RPS');
  const problem = envValueProblem(setting, text);
  if (problem !== null) throw new Error(problem);
  return setting.kind.fromText(text) as number;
}

/**
 * configFromEnv reads SVC_RATE_LIMIT_RPS, SVC_SECRET_KEY or SVC_SECRET_KEY_FILE, SVC_TRUSTED_PROXIES,
 * SVC_WORKSPACE_ROOT, SVC_ACCESS_LOG and SVC_RUN_BACKEND, as env-settings.ts declares them (a bad value throws,
 * naming the variable). Unset variables keep the defaults of defaultConfig.
 */
export function configFromEnv(env: NodeJS.ProcessEnv = process.env, overrides: Partial<ApiConfig> = {}): ApiConfig {
  const fromEnv: Partial<ApiConfig> = {};
  if (env.SVC_RATE_LIMIT_RPS) fromEnv.rateLimitPerSecond = envSetting<number>(env, 'SVC_RATE_LIMIT_RPS');
  const keyFile = envSetting<string | undefined>(env, 'SVC_SECRET_KEY_FILE');
  if (keyFile !== undefined) fromEnv.secretKey = parseSecretKey(readFileSync(keyFile, 'utf8'));
  else if (env.SVC_SECRET_KEY) fromEnv.secretKey = parseSecretKey(envSetting<string>(env, 'SVC_SECRET_KEY'));
  if (env.SVC_TRUSTED_PROXIES) fromEnv.trustedProxies = envSetting<string[]>(env, 'SVC_TRUSTED_PROXIES');
  const workspaceRoot = envSetting<string | undefined>(env, 'SVC_WORKSPACE_ROOT');
  if (workspaceRoot !== undefined) fromEnv.workspaceRoot = workspaceRoot;
  if (env.SVC_ACCESS_LOG) fromEnv.accessLog = envSetting<boolean>(env, 'SVC_ACCESS_LOG');
  if (env.SVC_RUN_BACKEND) fromEnv.runBackend = envSetting<RunBackendName>(env, 'SVC_RUN_BACKEND');
  return defaultConfig({ ...fromEnv, ...overrides });
}
