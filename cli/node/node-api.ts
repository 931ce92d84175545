// The developer HTTP API (api/) on a node: built over the node's ReplicatedStore and answered on the node's
// HTTP port for every path the node itself does not serve (/health, /ready, /metrics and /status stay the
// node's). node.ts imports this file only when the config has an `api` section, so a node without the API
// loads none of Express, BullMQ or the image code.
import { join } from 'node:path';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ApiConfig } from '../../api/config.js';
import { startApiService } from '../../api/server.js';
import { withApiRedaction } from '../../api/log.js';
import type { Registry } from 'prom-client';
import { API_ENV_SETTINGS } from '../../api/env-settings.js';
import type { DocumentStore } from '../../store/document-store.js';
import type { ClusterSource } from '../../api/cluster/cluster-source.js';
import { ConfigError, type NodeApiConfig } from './config.js';
import { API_REDIS_DIR, readApiSecretKey } from './api-early-start.js';
import type { LocalRedis } from '../../api/redis/local-redis.js';
import type { Logger } from '../../transports/node/logger.js';

export { API_REDIS_DIR };

export interface NodeApi {
  /** handler answers one HTTP request (the Express app). */
  handler: (req: IncomingMessage, res: ServerResponse) => void;
  /** redisUrl is the Redis the API uses, or null (queue endpoints answer 503). */
  redisUrl: string | null;
  /** redisScope says whose Redis it is: 'shared' (configured), 'local' (this node's own) or 'none'. */
  redisScope: 'shared' | 'local' | 'none';
  close(): Promise<void>;
}

export interface NodeApiStartOptions {
  store: DocumentStore;
  dataDir: string;
  log: Logger;
  /** ready is the node's readiness, for the API's own view of it. */
  ready: () => boolean;
  env?: NodeJS.ProcessEnv;
  /** metricsRegistry is the node's /metrics registry: the API adds its HTTP, event-stream and queue families. */
  metricsRegistry?: Registry;
  /**
   * clusterAddresses answers the members' addresses this node knows now (host:port or URLs: its roster, the
   * bootstrap list and seeds); the agent-run worker denies their hosts, by address or by name (resolved when
   * each networked run starts, api/runs/egress-deny.ts), so a networked run cannot reach another node.
   */
  clusterAddresses?: () => readonly string[];
  /** cluster is the node's view of its cluster, for the API's /cluster (transports/node/cluster-feed.ts). */
  cluster?: ClusterSource;
  /** onServing is handed the API's handler as soon as it answers, before its workers have started. */
  onServing?: (handler: NodeApi['handler']) => void;
  /** secretKey is api.secretKeyFile's key as the node read it at the start of its start (api-secret-key.ts). */
  secretKey?: Buffer;
  /** localRedis is the node-local redis-server the node started early (api-early-start.ts); the API owns it. */
  localRedis?: Promise<LocalRedis>;
  /** signal is the node's stop: it ends the API's start (its wait for Redis too) with the signal's reason. */
  signal?: AbortSignal;
}

export async function startNodeApi(api: NodeApiConfig, options: NodeApiStartOptions): Promise<NodeApi> {
  // The API reads its settings from variables (api/env-settings.ts): the api section's values are handed to it as
  // those variables, over the environment's (which `svc node` has already folded into the section).
  const env: NodeJS.ProcessEnv = { ...(options.env ?? process.env) };
  for (const setting of API_ENV_SETTINGS) {
    if (setting.key === undefined) continue;
    const value = setting.key
      .split('.')
      .reduce<unknown>((node, part) => (node as Record<string, unknown> | undefined)?.[part], api);
    if (value !== undefined) env[setting.env] = setting.kind.toText(value);
  }
  // One logger: the API writes through a child of the node's (its level, its destination, `node` in every
  // line), with the API's redaction; each call site picks its own level.
  const overrides: Partial<ApiConfig> = { isReady: options.ready, log: withApiRedaction(options.log) };
  if (options.metricsRegistry !== undefined) overrides.metricsRegistry = options.metricsRegistry;
  const secretKey = options.secretKey ?? (await readApiSecretKey(api));
  if (secretKey !== undefined) overrides.secretKey = secretKey;
  if (api.rateLimitPerSecond !== undefined) overrides.rateLimitPerSecond = api.rateLimitPerSecond;
  if (api.trustedProxies !== undefined) overrides.trustedProxies = api.trustedProxies;
  if (api.workspaceRoot !== undefined) overrides.workspaceRoot = api.workspaceRoot;
  if (api.accessLog !== undefined) overrides.accessLog = api.accessLog;
  let runtime;
  try {
    runtime = await startApiService({
      store: options.store,
      env,
      dataDir: join(options.dataDir, API_REDIS_DIR),
      localRedis: api.localRedis !== false,
      ...(options.localRedis ? { earlyLocalRedis: options.localRedis } : {}),
      ...(options.signal ? { signal: options.signal } : {}),
      ...(options.clusterAddresses ? { clusterAddresses: options.clusterAddresses } : {}),
      ...(options.cluster ? { cluster: options.cluster } : {}),
      ...(options.onServing
        ? { onServing: (service: { app: unknown }) => options.onServing!(service.app as NodeApi['handler']) }
        : {}),
      config: overrides,
    });
  } catch (err) {
    // configFromEnv names the variable it could not use (SVC_RATE_LIMIT_RPS, the secret key): a config problem.
    if (err instanceof Error && /SVC_|secret key/.test(err.message)) throw new ConfigError(`api: ${err.message}`);
    throw err;
  }
  const redisScope = runtime.redisUrl === null ? 'none' : runtime.localRedis ? 'local' : 'shared';
  options.log.info(
    {
      redis: redisScope,
      credentials: runtime.service.config.secretKey ? 'on' : 'off (no secret key)',
      rateLimitPerSecond: runtime.service.config.rateLimitPerSecond,
    },
    'developer API mounted',
  );
  if (redisScope === 'local')
    options.log.warn(
      'the API uses a redis-server of this node alone: set api.redisUrl (or REDIS_URL) to one Redis for the whole cluster',
    );
  return {
    handler: runtime.service.app as unknown as NodeApi['handler'],
    redisUrl: runtime.redisUrl,
    redisScope,
    close: () => runtime.close(),
  };
}
