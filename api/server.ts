// startApiServer runs the API over a given store: Redis from REDIS_URL, else a local redis-server when one is
// on the PATH, else none (queue endpoints then answer 503 and the rate limit is per process). With Redis it
// also runs an agent-run worker in this process unless SVC_RUN_WORKER=0.
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import path from 'node:path';
import type { DocumentStore } from './store/document-store.js';
import type { ApiConfig } from './config.js';
import { configFromEnv } from './config.js';
import { createApp } from './app.js';
import type { ApiService } from './app.js';
import { redisServerAvailable, startLocalRedis } from './redis/local-redis.js';
import type { LocalRedis } from './redis/local-redis.js';
import { startAgentWorker } from './runs/agent-worker.js';
import type { AgentWorker } from './runs/agent-worker.js';
import { imageGeneratorFromEnv, startAlbumWorker } from './albums/index.js';
import type { AlbumWorker } from './albums/index.js';

export const apiPortDefault = 8080;
export const apiHostDefault = '127.0.0.1';

export interface RunningApi {
  url: string;
  service: ApiService;
  redisUrl: string | null;
  close(): Promise<void>;
}

export interface StartApiOptions {
  store: DocumentStore;
  env?: NodeJS.ProcessEnv;
  /** dataDir holds a locally started redis-server's files (default .cluster/api-redis). */
  dataDir?: string;
  config?: Partial<ApiConfig>;
}

export async function startApiServer(options: StartApiOptions): Promise<RunningApi> {
  const env = options.env ?? process.env;
  const config = configFromEnv(env, options.config);
  let localRedis: LocalRedis | undefined;
  let redisUrl = env.REDIS_URL ?? null;
  if (!redisUrl && redisServerAvailable()) {
    localRedis = await startLocalRedis(options.dataDir ?? path.resolve('.cluster', 'api-redis'));
    redisUrl = localRedis.url;
  }
  if (!redisUrl) config.log('api.no_redis', { effect: 'queue endpoints answer 503; rate limit is per process' });
  const service = createApp({ store: options.store, redis: redisUrl ? { url: redisUrl } : undefined, config });
  // SVC_RUN_WORKER=0 leaves agent runs to worker processes elsewhere; by default this process runs them too.
  let worker: AgentWorker | undefined;
  if (redisUrl && env.SVC_RUN_WORKER !== '0') worker = await startAgentWorker({ redisUrl });
  // SVC_ALBUM_WORKER=0 likewise leaves album jobs to other processes (which need the same store).
  let albumWorker: AlbumWorker | undefined;
  if (redisUrl && env.SVC_ALBUM_WORKER !== '0') {
    albumWorker = await startAlbumWorker({
      redisUrl, store: options.store, generator: imageGeneratorFromEnv(env),
      onSweepError: (error) => config.log('albums.blob_sweep_failed', { error: error instanceof Error ? error.message : String(error) }),
    });
  }
  const port = Number(env.SVC_API_PORT ?? apiPortDefault);
  const host = env.SVC_API_HOST ?? apiHostDefault;
  const server: Server = service.app.listen(port, host);
  await new Promise<void>((resolve, reject) => { server.once('listening', resolve); server.once('error', reject); });
  const address = server.address() as AddressInfo;
  const hostText = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return {
    url: `http://${hostText}:${address.port}`,
    service,
    redisUrl,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await worker?.close();
      await albumWorker?.close();
      await service.close();
      await localRedis?.stop();
    },
  };
}
