// startApiService builds the API over a given store without listening: Redis from REDIS_URL, else a local
// redis-server when one is on the PATH, else none (queue endpoints then answer 503 and the rate limit is per
// process). With Redis it also runs an agent-run worker and an album worker in this process unless
// SVC_RUN_WORKER=0 / SVC_ALBUM_WORKER=0. A cluster node mounts `service.app` on its own HTTP server
// (cli/node/node-api.ts); startApiServer listens on its own port (`tsx api/main.ts`). startApiService runs in
// stages: the mount (mountApi: config, its Redis, the app), the app's answer (onServing), then the workers.
import { parseRedisUrl } from './redis/redis-target.js';
import type { AddressInfo } from 'node:net';
import { createServer, type Server } from 'node:http';
import { ApiIncomingMessage } from './request-class.js';
import { ApiServerResponse } from './response-class.js';
import path from 'node:path';
import type { DocumentStore } from '../store/document-store.js';
import type { ApiConfig } from './config.js';
import { configFromEnv } from './config.js';
import { envSetting } from './env-settings.js';
import { createApp } from './app.js';
import type { ApiService } from './app.js';
import { redisServerAvailable, startLocalRedis } from './redis/local-redis.js';
import type { LocalRedis } from './redis/local-redis.js';
import type { AgentWorker } from './runs/agent-worker.js';
import type { AlbumWorker } from './albums/index.js';
import type { ClusterSource } from './cluster/cluster-source.js';

export interface ApiRuntime {
  service: ApiService;
  redisUrl: string | null;
  /** localRedis is true when this process started its own redis-server (REDIS_URL unset). */
  localRedis: boolean;
  /** close stops the workers, the Redis clients and a local redis-server; the HTTP server is the caller's. */
  close(): Promise<void>;
}

export interface RunningApi extends Omit<ApiRuntime, 'localRedis'> {
  url: string;
}

export interface StartApiOptions {
  store: DocumentStore;
  env?: NodeJS.ProcessEnv;
  /** dataDir holds a locally started redis-server's files (default .cluster/api-redis). */
  dataDir?: string;
  /** localRedis false never starts a local redis-server when REDIS_URL is unset (default true). */
  localRedis?: boolean;
  /**
   * earlyLocalRedis is a local redis-server its caller started already (a node starts it while the API's modules
   * load), used in place of starting one; the runtime owns it from here, and stops it if it goes unused.
   */
  earlyLocalRedis?: Promise<LocalRedis>;
  /**
   * clusterAddresses answers the cluster members' addresses as they are now (a node's roster); the agent-run
   * worker denies their hosts (names resolved at each networked run's start) to networked runs.
   */
  clusterAddresses?: () => readonly string[];
  /** cluster is the node's view of its cluster, for /cluster (app.ts). */
  cluster?: ClusterSource;
  config?: Partial<ApiConfig>;
  /**
   * onServing is handed the app as soon as it can answer requests, before the workers start (they probe the
   * run sandbox, stage the agent and connect to Redis: seconds that no request needs to wait for).
   */
  onServing?: (service: ApiService) => void;
  /**
   * signal stops the start: the start ends with the signal's reason at its next stage, or at once while its
   * workers wait for Redis (which they otherwise do without end), having closed what it opened.
   */
  signal?: AbortSignal;
}

/** WorkerModules are the workers' modules a start loaded (none for a worker that will not run here). */
interface WorkerModules {
  agent?: typeof import('./runs/agent-worker.js') & typeof import('./runs/run-backend-config.js');
  album?: typeof import('./albums/album-worker.js') & typeof import('./images/generator-config.js');
}

/**
 * loadWorkerModules imports the workers that will run, apart from the app's modules: the album worker's image
 * code (sharp) and the agent worker are loaded only by a process that runs them (a Redis, and the worker on).
 */
async function loadWorkerModules(run: { agent: boolean; album: boolean }): Promise<WorkerModules> {
  const [agent, album] = await Promise.all([
    run.agent
      ? Promise.all([import('./runs/agent-worker.js'), import('./runs/run-backend-config.js')]).then(([a, b]) => ({
          ...a,
          ...b,
        }))
      : undefined,
    run.album
      ? Promise.all([import('./albums/album-worker.js'), import('./images/generator-config.js')]).then(([a, b]) => ({
          ...a,
          ...b,
        }))
      : undefined,
  ]);
  return { ...(agent ? { agent } : {}), ...(album ? { album } : {}) };
}

/** MountedApi is what the mount stage built: the app over its store, with the Redis it uses and its workers' modules. */
interface MountedApi {
  config: ApiConfig;
  service: ApiService;
  redisUrl: string | null;
  /** localRedis is the redis-server this start owns (started here, or the caller's early one it took). */
  localRedis: LocalRedis | undefined;
  workerModules: WorkerModules;
}

/** StartedWorkers are the workers a start runs in this process (none without Redis or when turned off). */
interface StartedWorkers {
  agent: AgentWorker | undefined;
  album: AlbumWorker | undefined;
}

export async function startApiService(options: StartApiOptions): Promise<ApiRuntime> {
  const env = options.env ?? process.env;
  const { config, service, redisUrl, localRedis, workerModules } = await mountApi(options, env);
  // The app answers once its validator has loaded its document (CPU on this event loop that would hold every
  // request meanwhile, public ones too); the workers start after it: no request needs them.
  let workers: StartedWorkers;
  try {
    await service.validatorLoaded;
    options.signal?.throwIfAborted();
    options.onServing?.(service);
    workers = await startWorkers(options, env, config, redisUrl, workerModules);
  } catch (error) {
    await service.close();
    await localRedis?.stop();
    throw error;
  }
  return {
    service,
    redisUrl,
    localRedis: localRedis !== undefined,
    async close() {
      await workers.agent?.close();
      await workers.album?.close();
      await service.close();
      await localRedis?.stop();
    },
  };
}

/**
 * mountApi builds the app: its config, the Redis it uses (settleRedis) and the modules of the workers that will
 * run. An early redis-server the mount does not take (a REDIS_URL, or a failure) is stopped here.
 */
async function mountApi(options: StartApiOptions, env: NodeJS.ProcessEnv): Promise<MountedApi> {
  let localRedis: LocalRedis | undefined;
  try {
    const config = configFromEnv(env, options.config);
    const redis = await settleRedis(options, env);
    localRedis = redis.localRedis;
    const redisUrl = redis.redisUrl;
    options.signal?.throwIfAborted();
    // The workers' modules (the image code among them) load before the app answers: loading them is CPU on this
    // event loop, which would hold the first requests if it came after. Workers that will not run load nothing.
    const workerModules = await loadWorkerModules({
      agent: redisUrl !== null && envSetting<boolean>(env, 'SVC_RUN_WORKER'),
      album: redisUrl !== null && envSetting<boolean>(env, 'SVC_ALBUM_WORKER'),
    });
    if (!redisUrl)
      config.log.warn(
        { event: 'api.no_redis', effect: 'queue endpoints answer 503; rate limit is per process' },
        'the API has no Redis',
      );
    const service = createApp({
      store: options.store,
      redis: redisUrl ? { url: redisUrl } : undefined,
      config,
      ...(options.cluster ? { cluster: options.cluster } : {}),
    });
    return { config, service, redisUrl, localRedis, workerModules };
  } catch (error) {
    await localRedis?.stop();
    throw error;
  } finally {
    // An early redis-server this start did not take (a REDIS_URL, or a failure before it) is stopped.
    if (options.earlyLocalRedis)
      await options.earlyLocalRedis.then(
        (early) => (early === localRedis ? undefined : early.stop()),
        () => undefined,
      );
  }
}

/**
 * settleRedis picks the API's Redis: REDIS_URL (checked here), else the caller's early redis-server, else one
 * started now when redis-server is on the PATH (unless options.localRedis is false), else none.
 */
async function settleRedis(
  options: StartApiOptions,
  env: NodeJS.ProcessEnv,
): Promise<{ redisUrl: string | null; localRedis: LocalRedis | undefined }> {
  const redisUrl = env.REDIS_URL ?? null;
  if (redisUrl !== null) {
    // A malformed URL stops the start here, naming the setting, rather than failing every queued request later.
    try {
      parseRedisUrl(redisUrl);
    } catch (error) {
      throw new Error(`REDIS_URL: ${(error as Error).message}`, { cause: error });
    }
    return { redisUrl, localRedis: undefined };
  }
  let localRedis: LocalRedis | undefined;
  if (options.earlyLocalRedis) localRedis = await options.earlyLocalRedis;
  else if (options.localRedis !== false && redisServerAvailable())
    localRedis = await startLocalRedis(options.dataDir ?? path.resolve('.cluster', 'api-redis'));
  return { redisUrl: localRedis?.url ?? null, localRedis };
}

/**
 * startWorkers starts the agent-run worker and the album worker this process runs (SVC_RUN_WORKER=0 and
 * SVC_ALBUM_WORKER=0 leave them to worker processes elsewhere, which need the same store). A failure closes the
 * worker already started; the app and Redis are the caller's.
 */
async function startWorkers(
  options: StartApiOptions,
  env: NodeJS.ProcessEnv,
  config: ApiConfig,
  redisUrl: string | null,
  modules: WorkerModules,
): Promise<StartedWorkers> {
  const workers: StartedWorkers = { agent: undefined, album: undefined };
  if (!redisUrl) return workers;
  try {
    if (modules.agent) {
      const { startAgentWorker, runBackendFromConfig } = modules.agent;
      workers.agent = await startAgentWorker({
        redisUrl,
        ...(options.signal ? { signal: options.signal } : {}),
        store: options.store,
        secretKey: config.secretKey,
        log: config.log,
        backend: await runBackendFromConfig(config, env),
        isolation: {
          egressAllow: envSetting<string[]>(env, 'SVC_RUN_EGRESS_ALLOW'),
          egressDeny: envSetting<string[]>(env, 'SVC_RUN_EGRESS_DENY'),
          ...(options.clusterAddresses ? { clusterAddresses: options.clusterAddresses } : {}),
        },
      });
    }
    if (modules.album) {
      const { startAlbumWorker, imageGeneratorFromEnv } = modules.album;
      options.signal?.throwIfAborted();
      workers.album = await startAlbumWorker({
        redisUrl,
        ...(options.signal ? { signal: options.signal } : {}),
        store: options.store,
        generator: imageGeneratorFromEnv(env),
        onSweepError: (error) =>
          config.log.warn(
            { event: 'albums.blob_sweep_failed', error: error instanceof Error ? error.message : String(error) },
            'the album blob sweep failed',
          ),
      });
    }
  } catch (error) {
    await workers.agent?.close();
    throw error;
  }
  return workers;
}

export async function startApiServer(options: StartApiOptions): Promise<RunningApi> {
  const env = options.env ?? process.env;
  const runtime = await startApiService(options);
  const port = envSetting<number>(env, 'SVC_API_PORT');
  const host = envSetting<string>(env, 'SVC_API_HOST');
  // The API's request and response classes, as the node's HTTP port uses (request-class.ts: its field holder is in
  // each request from the constructor on; response-class.ts: constant headers written as one block).
  const server: Server = createServer(
    { IncomingMessage: ApiIncomingMessage, ServerResponse: ApiServerResponse },
    runtime.service.app,
  ).listen(port, host);
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('listening', resolve);
      server.once('error', reject);
    });
  } catch (error) {
    await runtime.close();
    throw error;
  }
  const address = server.address() as AddressInfo;
  const hostText = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return {
    url: `http://${hostText}:${address.port}`,
    service: runtime.service,
    redisUrl: runtime.redisUrl,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await runtime.close();
    },
  };
}
