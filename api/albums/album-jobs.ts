// Album queue jobs. A payload carries ids, counters and the AnchorURL, never image bytes: a worker fetches
// the anchor from AnchorURL when the job runs. The job id is derived from the payload, so adding the same
// request twice queues one job, and a job id names exactly one request of one anchor or shot.
import type { JobsOptions } from 'bullmq';
import { albumJobAttemptsDefault, albumJobsKept } from './limits.js';

export { albumQueueName } from '../config.js';

export interface AnchorJob {
  kind: 'anchor';
  userId: string;
  albumId: string;
  anchorGeneration: number;
}

export interface ShotJob {
  kind: 'shot';
  userId: string;
  albumId: string;
  index: number;
  /** request is the shot's request counter when this job was queued; a newer request supersedes it. */
  request: number;
  anchorGeneration: number;
  /** anchorUrl is the AnchorURL the shot is made from, fetched by the worker at run time. */
  anchorUrl: string;
}

export type AlbumJob = AnchorJob | ShotJob;

/** albumJobId names a job by what it does; BullMQ ids may not contain ':'. */
export function albumJobId(job: AlbumJob): string {
  switch (job.kind) {
    case 'anchor':
      return `anchor.${job.albumId}.${job.anchorGeneration}`;
    case 'shot':
      return `shot.${job.albumId}.${job.index}.${job.request}`;
    default: {
      const unknown: never = job;
      throw new Error(`unknown album job ${JSON.stringify(unknown)}`);
    }
  }
}

/** albumBackoffType names the worker's own back-off (startAlbumWorker's backoffMs), so the worker sets the delays. */
export const albumBackoffType = 'album-backoff';

export function albumJobOptions(job: AlbumJob): JobsOptions {
  return {
    jobId: albumJobId(job),
    attempts: albumJobAttemptsDefault,
    backoff: { type: albumBackoffType },
    removeOnComplete: { count: albumJobsKept },
    removeOnFail: { count: albumJobsKept },
  };
}

/** albumBackoffMs is the delay before retry number attemptsMade: backoffMs doubled each time, within ±20 %. */
export function albumBackoffMs(attemptsMade: number, backoffMs: number, random: () => number = Math.random): number {
  return Math.round(backoffMs * 2 ** Math.max(0, attemptsMade - 1) * (0.8 + 0.4 * random()));
}
