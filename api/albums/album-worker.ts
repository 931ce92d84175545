// startAlbumWorker runs album jobs from the BullMQ queue in this process (the API's by default, or one of
// its own). It needs the same DocumentStore as the API: album state lives there, and so do the images.
// A job that ends with its anchor or shot failed is failed in BullMQ too (UnrecoverableError, no more
// retries), so /work/stats counts it. A node that dies mid-job leaves the job to BullMQ's stalled-job
// check, which gives it to another worker within albumJobLockDurationMsDefault + albumJobStalledIntervalMsDefault;
// the job starts over from the album state, which still says `generating` for the same request, and so goes on
// (test/cluster-albums kills nodes of a real cluster mid-album). A job BullMQ fails without the job having
// recorded an end (stalled too often, or every attempt failed before it could write) has its shot or anchor
// marked failed here, so nothing waits for ever.
import { UnrecoverableError, Worker } from 'bullmq';
import type { Job } from 'bullmq';
import { connectRedis } from '../redis/redis-target.js';
import { abortableWait } from '../redis/abortable-wait.js';
import type { DocumentStore } from '../../store/document-store.js';
import type { ImageGenerator } from '../images/image-generator.js';
import type { AlbumJob } from './album-jobs.js';
import { albumBackoffMs, albumQueueName } from './album-jobs.js';
import type { JobOutcome } from './album-jobs-processor.js';
import { StoreAnchorFetcher, albumJobProcessor } from './album-jobs-processor.js';
import { StoreAlbumUpdater } from './album-updater.js';
import { BlobStore } from './blob-store.js';
import { RedisUserEventPublisher } from './user-events.js';
import { startBlobSweeper } from './blob-sweep.js';
import {
  albumJobBackoffMsDefault,
  albumJobLockDurationMsDefault,
  albumJobStalledCountMax,
  albumJobStalledIntervalMsDefault,
  albumWorkerConcurrencyDefault,
} from './limits.js';

export interface AlbumWorkerOptions {
  redisUrl: string;
  store: DocumentStore;
  generator: ImageGenerator;
  concurrency?: number;
  /** backoffMs is the first retry delay (doubling after); default albumJobBackoffMsDefault. */
  backoffMs?: number;
  /** onOutcome hears how each job run ended (logs, tests). */
  onOutcome?: (job: AlbumJob, outcome: JobOutcome) => void;
  /**
   * lockDurationMs and stalledIntervalMs (BullMQ's; defaults albumJobLockDurationMsDefault and
   * albumJobStalledIntervalMsDefault) decide how soon a job whose worker died is given to another: once its
   * lock expires, at the next stalled check of any worker.
   */
  lockDurationMs?: number;
  stalledIntervalMs?: number;
  /** onAbandonError hears a failure to mark a job BullMQ gave up on as failed (the store or Redis was down). */
  onAbandonError?: (error: unknown) => void;
  /** onSweepError hears a failed hourly blob sweep (see blob-sweep.ts); it is retried next hour. */
  onSweepError?: (error: unknown) => void;
  /**
   * signal stops the start: an abort while the worker waits for Redis closes its connections, and the start
   * rejects with the signal's reason (else it waits for Redis without end).
   */
  signal?: AbortSignal;
}

export interface AlbumWorker {
  /** close waits for running jobs; close(true) abandons them (as a crash would) for another worker to redo. */
  close(force?: boolean): Promise<void>;
}

export async function startAlbumWorker(options: AlbumWorkerOptions): Promise<AlbumWorker> {
  const redis = connectRedis(options.redisUrl, { maxRetriesPerRequest: 3 });
  redis.on('error', () => undefined);
  const blobs = new BlobStore(options.store);
  const process = albumJobProcessor({
    updater: new StoreAlbumUpdater(options.store),
    blobs,
    generator: options.generator,
    events: new RedisUserEventPublisher(redis),
    anchors: new StoreAnchorFetcher(blobs),
  });
  const backoffMs = options.backoffMs ?? albumJobBackoffMsDefault;

  // BullMQ does not close a connection it was given, so the worker keeps it to close it.
  const workerConnection = connectRedis(options.redisUrl, { maxRetriesPerRequest: null });
  workerConnection.on('error', () => undefined);
  const worker = new Worker<AlbumJob>(
    albumQueueName,
    async (job: Job<AlbumJob>) => {
      const attempts = job.opts.attempts ?? 1;
      const outcome = await process(job.data, { number: job.attemptsMade + 1, last: job.attemptsMade + 1 >= attempts });
      options.onOutcome?.(job.data, outcome);
      if (outcome.kind === 'failed') throw new UnrecoverableError(outcome.reason);
      return outcome;
    },
    {
      connection: workerConnection,
      concurrency: options.concurrency ?? albumWorkerConcurrencyDefault,
      settings: { backoffStrategy: (attemptsMade: number) => albumBackoffMs(attemptsMade, backoffMs) },
      lockDuration: options.lockDurationMs ?? albumJobLockDurationMsDefault,
      stalledInterval: options.stalledIntervalMs ?? albumJobStalledIntervalMsDefault,
      maxStalledCount: albumJobStalledCountMax,
    },
  );
  worker.on('error', () => undefined);
  // BullMQ emits `failed` for every failed run; finishedOn is set only when it will not run the job again.
  worker.on('failed', (job, error) => {
    if (!job?.finishedOn) return;
    void process
      .abandon(job.data, `JOB_ABANDONED: ${error.message.slice(0, 300)}`)
      .catch((abandonError: unknown) => options.onAbandonError?.(abandonError));
  });
  await abortableWait(worker.waitUntilReady(), options.signal, () => {
    worker.close(true).catch(() => undefined);
    workerConnection.disconnect();
    redis.disconnect();
  });
  const sweeper = startBlobSweeper(redis, options.store, blobs, (error) => options.onSweepError?.(error));

  return {
    async close(force = false) {
      sweeper.stop();
      await worker.close(force);
      await workerConnection.quit().catch(() => workerConnection.disconnect());
      await redis.quit().catch(() => redis.disconnect());
    },
  };
}
