// Album generation, as the app mounts it: albumApi (the keyed routes and GET /events) and albumPageRoutes (the public
// page). The queue worker (album-worker.ts) and the image generators (../images/generator-config.ts) are imported
// by themselves: they load the image code (sharp), which no request needs, so the server loads them after its app
// answers (server.ts).
import { Router } from 'express';
import type { Redis } from 'ioredis';
import type { DocumentStore } from '../../store/document-store.js';
import { albumRoutes } from './album-routes.js';
import { BlobStore } from './blob-store.js';
import { ChannelHub, eventStreamRoutes } from './event-stream.js';

export { albumPageRoutes } from './view-page.js';
export type { AlbumWorker, AlbumWorkerOptions } from './album-worker.js';
export { albumQueueName } from './album-jobs.js';

export interface AlbumApiOptions {
  store: DocumentStore;
  redisUrl: string | undefined;
  /** connect makes a command connection (with a timeout) that the app closes. */
  connect: () => Redis;
  sseKeepAliveMs: number;
}

export function albumApi(options: AlbumApiOptions): {
  router: Router;
  /** openStreams is the album event streams open now. */
  openStreams(): number;
  close(): Promise<void>;
} {
  const redis = options.redisUrl ? options.connect() : undefined;
  const hub = options.redisUrl ? new ChannelHub(options.redisUrl) : undefined;
  const albums = albumRoutes({
    store: options.store,
    blobs: new BlobStore(options.store),
    redis,
    ...(options.redisUrl ? { redisUrl: options.redisUrl } : {}),
  });
  const events = eventStreamRoutes({ redis, hub, keepAliveMs: options.sseKeepAliveMs });
  const router = Router();
  router.use(albums.router, events.router);
  return {
    router,
    openStreams: () => events.openStreams(),
    async close() {
      events.close();
      hub?.close();
      await albums.close();
    },
  };
}
