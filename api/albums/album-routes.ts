// Album routes. An album belongs to the key's user: its record lives under that user's prefix, so another
// user's album id answers 404 and a listing never scans other users' albums. Every change goes through the
// AlbumUpdater and a pure step of album-state.ts; generation requests then queue their jobs and answer 202.
// A request whose state change committed but whose job could not be queued answers 503; repeating it queues
// the same job (same id), so nothing is lost or doubled.
import { Router } from 'express';
import type { Request } from 'express';
import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import type { DocumentStore } from '../../store/document-store.js';
import { ApiError } from '../errors.js';
import { newId, nowIso } from '../records.js';
import { listPage } from '../store-helpers.js';
import type { AlbumRecord } from './album-records.js';
import { albumKeys, albumView } from './album-records.js';
import type { AlbumJob } from './album-jobs.js';
import { albumJobOptions, albumQueueName } from './album-jobs.js';
import { deleteShots, requestAnchor, requestShot, requestShots } from './album-state.js';
import type { AlbumUpdater } from './album-updater.js';
import { StoreAlbumUpdater } from './album-updater.js';
import type { BlobStore } from './blob-store.js';
import { blobHashPattern } from './blob-store.js';
import { checkNewAlbum, newAlbumRecord } from './new-album.js';
import type { NewAlbumBody } from './new-album.js';
import { templateNames, templates } from './templates.js';

export interface AlbumRoutesOptions {
  store: DocumentStore;
  blobs: BlobStore;
  /** redis, when set, is the command connection the job queue uses; without it generation answers 503. */
  redis: Redis | undefined;
}

export const eventsUrl = '/events';

export function albumRoutes(options: AlbumRoutesOptions): { router: Router; close(): Promise<void> } {
  const router = Router();
  const { store, blobs } = options;
  const updater: AlbumUpdater = new StoreAlbumUpdater(store);
  const queue = options.redis ? new Queue<AlbumJob>(albumQueueName, { connection: options.redis }) : undefined;
  queue?.on('error', () => undefined);

  const refOf = (req: Request) => ({ userId: req.auth!.userId, albumId: req.params.id as string });
  const found = <T>(value: T | null): T => {
    if (value === null) throw new ApiError('NOT_FOUND', 'no such album');
    return value;
  };
  const requireQueue = (): Queue<AlbumJob> => {
    if (!queue) throw new ApiError('QUEUE_UNAVAILABLE', 'no Redis is configured: set REDIS_URL');
    return queue;
  };
  const enqueue = async (jobs: AlbumJob[]): Promise<void> => {
    if (jobs.length === 0) return;
    try {
      await requireQueue().addBulk(jobs.map((job) => ({ name: job.kind, data: job, opts: albumJobOptions(job) })));
    } catch {
      throw new ApiError(
        'QUEUE_UNAVAILABLE',
        'the job queue is unavailable; repeat the request to queue the same jobs',
      );
    }
  };

  router.get('/album-templates', (_req, res) => {
    res.json({
      items: templateNames.map((name) => ({ name, ...templates[name], directions: [...templates[name].directions] })),
    });
  });

  router.get('/albums', async (req, res) => {
    res.json(
      await listPage<AlbumRecord, ReturnType<typeof albumView>>(
        store,
        albumKeys.userAlbums(req.auth!.userId),
        req.query,
        albumView,
      ),
    );
  });

  router.post('/albums', async (req, res) => {
    const album = newAlbumRecord(newId('alb'), req.auth!.userId, checkNewAlbum(req.body as NewAlbumBody), nowIso());
    await updater.create(album);
    res.status(201).json(albumView(album));
  });

  router.get('/albums/:id', async (req, res) => {
    res.json(albumView(found(await updater.read(refOf(req)))));
  });

  router.delete('/albums/:id', async (req, res) => {
    // Jobs still queued for it find no album and end; its images go with the next blob sweep.
    if (!(await updater.remove(refOf(req)))) throw new ApiError('NOT_FOUND', 'no such album');
    res.status(204).end();
  });

  router.post('/albums/:id/anchor', async (req, res) => {
    requireQueue();
    const seed = (req.body as { seed?: number } | undefined)?.seed ?? 0;
    const { album, result } = found(
      await updater.update(refOf(req), (current) => requestAnchor(current, seed, nowIso())),
    );
    await enqueue([result.job]);
    res.status(202).json({ album: albumView(album), queued: result.fresh, eventsUrl });
  });

  router.post('/albums/:id/shots', async (req, res) => {
    requireQueue();
    const { album, result } = found(await updater.update(refOf(req), (current) => requestShots(current, nowIso())));
    await enqueue(result.jobs);
    res.status(202).json({ album: albumView(album), queuedShots: result.queued, eventsUrl });
  });

  router.delete('/albums/:id/shots', async (req, res) => {
    const { album, result } = found(await updater.update(refOf(req), (current) => deleteShots(current, nowIso())));
    res.json({ album: albumView(album), discarded: result.discarded });
  });

  router.post('/albums/:id/shots/:index', async (req, res) => {
    requireQueue();
    const index = Number(req.params.index);
    const variation = (req.body as { variation?: number } | undefined)?.variation ?? 0;
    const { album, result } = found(
      await updater.update(refOf(req), (current) => requestShot(current, index, variation, nowIso())),
    );
    await enqueue([result.job]);
    res.status(202).json({ album: albumView(album), queued: result.fresh, eventsUrl });
  });

  router.get('/albums/:id/images/:hash', async (req, res) => {
    const hash = req.params.hash as string;
    const album = found(await updater.read(refOf(req)));
    // Only images the album shows now are served: the anchor's and the shots'.
    const shown = album.anchor.hash === hash || album.shots.some((shot) => shot.image_hash === hash);
    if (!blobHashPattern.test(hash) || !shown) throw new ApiError('NOT_FOUND', 'no such image in this album');
    const blob = await blobs.get(hash);
    if (!blob) throw new ApiError('NOT_FOUND', 'the image is no longer stored');
    res.setHeader('Content-Type', blob.contentType);
    // Content-addressed: the bytes at this URL never change, so a browser may keep them (privately).
    res.setHeader('Cache-Control', 'private, max-age=31536000, immutable');
    res.setHeader('ETag', `"${hash}"`);
    res.end(blob.bytes);
  });

  return {
    router,
    async close() {
      await queue?.close();
    },
  };
}
