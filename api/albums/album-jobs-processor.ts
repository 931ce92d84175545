// What an album job does, apart from BullMQ: each step goes through the AlbumUpdater (compare-and-set on
// the store), and a step that finds its job superseded or already finished does nothing more, so a
// repeated job is harmless. A shot fetches its anchor from the job's AnchorURL. A retryable failure with
// attempts left puts the anchor or shot back to `pending` and rethrows (the queue retries after a back-off);
// otherwise it is marked `failed` with its reason and the job ends. Events follow each committed change.
// End events (anchor and shot completed or failed, album completed) carry a once-key: a job that finds its
// request already ended announces that end again, and the publisher shows it once. So a worker killed after
// the state write but before the event loses nothing: BullMQ runs the job again and the end is announced.
import type { AlbumRecord } from './album-records.js';
import { parseImagePath } from './album-records.js';
import type { AnchorJob, AlbumJob, ShotJob } from './album-jobs.js';
import type { ShotEnd } from './album-state.js';
import {
  abandonAnchor,
  abandonShot,
  completeAnchor,
  completeShot,
  endEventKeys,
  failAnchor,
  failShot,
  finishedShot,
  startAnchor,
  startShot,
} from './album-state.js';
import type { AlbumUpdater } from './album-updater.js';
import type { BlobStore } from './blob-store.js';
import type { UserEventPublisher } from './user-events.js';
import { anchorImageBytesMax, shotImageBytesMax } from './limits.js';
import type { ImageGenerator } from '../images/image-generator.js';
import { ImageGenerationError } from '../images/image-generator.js';
import { checkPng } from '../images/png-check.js';

/** AnchorFetcher resolves an AnchorURL to the anchor's PNG bytes. */
export interface AnchorFetcher {
  fetch(anchorUrl: string, albumId: string): Promise<Buffer>;
}

/**
 * StoreAnchorFetcher resolves this API's own image paths (`/albums/<id>/images/<hash>`) from the blob store,
 * which verifies the bytes against the hash. Any other URL is refused: a worker does not fetch addresses it
 * was handed (that would let a job reach internal services).
 */
export class StoreAnchorFetcher implements AnchorFetcher {
  constructor(private readonly blobs: BlobStore) {}

  async fetch(anchorUrl: string, albumId: string): Promise<Buffer> {
    const parsed = parseImagePath(anchorUrl);
    if (!parsed || parsed.albumId !== albumId) {
      throw new ImageGenerationError(
        `AnchorURL ${JSON.stringify(anchorUrl.slice(0, 200))} is not an image of this album`,
        false,
        'BAD_ANCHOR_URL',
      );
    }
    let blob;
    try {
      blob = await this.blobs.get(parsed.hash, anchorImageBytesMax);
    } catch (error) {
      if (error instanceof RangeError) throw new ImageGenerationError(error.message, false, 'IMAGE_TOO_LARGE');
      throw error;
    }
    if (!blob) throw new ImageGenerationError('the anchor image is no longer stored', false, 'ANCHOR_MISSING');
    return blob.bytes;
  }
}

export type JobOutcome =
  { kind: 'superseded' | 'finished' | 'album-gone' | 'completed' } | { kind: 'failed'; reason: string };

export interface JobAttempt {
  /** number counts this job's runs from 1. */
  number: number;
  /** last is true when the queue will not run the job again after a failure. */
  last: boolean;
}

export interface AlbumJobProcessorOptions {
  updater: AlbumUpdater;
  blobs: BlobStore;
  generator: ImageGenerator;
  events: UserEventPublisher;
  anchors: AnchorFetcher;
  now?: () => string;
}

/** failureOf describes a failure for the album owner; only generator errors may say they are final. */
export function failureOf(error: unknown): { reason: string; retryable: boolean } {
  if (error instanceof ImageGenerationError)
    return { reason: `${error.code}: ${error.message}`, retryable: error.retryable };
  const message = error instanceof Error ? error.message : String(error);
  return { reason: `INTERNAL: ${message.slice(0, 300)}`, retryable: true };
}

/**
 * AlbumJobProcessor runs one album job: it records the job's start and end in the album (compare-and-set through
 * the updater), makes the image, and announces each end once.
 */
class AlbumJobProcessor {
  private readonly updater: AlbumJobProcessorOptions['updater'];
  private readonly blobs: AlbumJobProcessorOptions['blobs'];
  private readonly generator: ImageGenerator;
  private readonly events: UserEventPublisher;
  private readonly anchors: AnchorFetcher;
  private readonly now: () => string;

  constructor(options: AlbumJobProcessorOptions) {
    this.updater = options.updater;
    this.blobs = options.blobs;
    this.generator = options.generator;
    this.events = options.events;
    this.anchors = options.anchors;
    this.now = options.now ?? (() => new Date().toISOString());
  }

  run(job: AlbumJob, attempt: JobAttempt): Promise<JobOutcome> {
    switch (job.kind) {
      case 'anchor':
        return this.processAnchor(job, attempt);
      case 'shot':
        return this.processShot(job, attempt);
      default: {
        const unknown: never = job;
        throw new Error(`unknown album job ${JSON.stringify(unknown)}`);
      }
    }
  }

  private async announceAlbumEnd(album: AlbumRecord, end: ShotEnd): Promise<void> {
    if (!end.albumComplete) return;
    await this.events.publish(
      album.user_id,
      'album.completed',
      {
        albumId: album.id,
        complete: end.albumComplete.complete,
        failed: end.albumComplete.failed,
        at: this.now(),
      },
      endEventKeys.round(album),
    );
  }

  private async announceAnchorEnd(album: AlbumRecord, generation: number): Promise<void> {
    const onceKey = endEventKeys.anchor(album.id, generation);
    if (album.anchor.state === 'ready') {
      await this.events.publish(
        album.user_id,
        'anchor.completed',
        { albumId: album.id, generation, anchorUrl: album.anchor.url, at: this.now() },
        onceKey,
      );
    } else if (album.anchor.state === 'failed') {
      await this.events.publish(
        album.user_id,
        'anchor.failed',
        { albumId: album.id, generation, error: album.anchor.error, at: this.now() },
        onceKey,
      );
    }
  }

  private async announceShotEnd(album: AlbumRecord, job: ShotJob): Promise<void> {
    const finished = finishedShot(album, job);
    if (!finished) return;
    const { shot } = finished;
    const onceKey = endEventKeys.shot(album.id, job.index, job.request);
    if (shot.status === 'complete') {
      await this.events.publish(
        album.user_id,
        'shot.completed',
        { albumId: album.id, index: job.index, imageUrl: shot.image_url, at: this.now() },
        onceKey,
      );
    } else {
      await this.events.publish(
        album.user_id,
        'shot.failed',
        { albumId: album.id, index: job.index, error: shot.error, at: this.now() },
        onceKey,
      );
    }
    await this.announceAlbumEnd(album, finished);
  }

  /**
   * alsoAnnounce is reannounce for a run that found, at its own end, that another run of the job ended the
   * request meanwhile: that run announces it (or is run again and does), so this repeat is best effort and
   * its failure (this worker may be closing) does not fail the run.
   */
  private async alsoAnnounce(job: AlbumJob, album: AlbumRecord): Promise<void> {
    await this.reannounce(job, album).catch(() => undefined);
  }

  /** reannounce publishes the end of a job that found its request already ended (the publisher keeps it once). */
  private async reannounce(job: AlbumJob, album: AlbumRecord): Promise<void> {
    if (!this.events.keepsOnce) return;
    if (job.kind === 'anchor') {
      if (album.anchor.generation === job.anchorGeneration) await this.announceAnchorEnd(album, job.anchorGeneration);
    } else {
      await this.announceShotEnd(album, job);
    }
  }

  async processAnchor(job: AnchorJob, attempt: JobAttempt): Promise<JobOutcome> {
    const ref = { userId: job.userId, albumId: job.albumId };
    const generation = job.anchorGeneration;
    const started = await this.updater.update(ref, (album) => startAnchor(album, generation, this.now()));
    if (!started) return { kind: 'album-gone' };
    if (started.result.kind === 'finished') await this.reannounce(job, started.album);
    if (started.result.kind !== 'started') return { kind: started.result.kind };
    const album = started.album;
    await this.events.publish(job.userId, 'anchor.started', {
      albumId: album.id,
      generation,
      attempt: album.anchor.attempts,
      at: this.now(),
    });
    let hash: string;
    try {
      const png = await this.generator.generateAnchor({
        subject: album.subject,
        seed: album.anchor.seed,
        widthPx: album.width_px,
        heightPx: album.height_px,
      });
      await checkPng(png, album.width_px, album.height_px, anchorImageBytesMax);
      hash = await this.blobs.put(png, 'image/png');
    } catch (error) {
      const { reason, retryable } = failureOf(error);
      const final = !retryable || attempt.last;
      const failed = await this.updater.update(ref, (current) =>
        failAnchor(current, generation, reason, final, this.now()),
      );
      if (failed?.result.kind === 'retrying') {
        await this.events.publish(job.userId, 'anchor.retrying', {
          albumId: album.id,
          generation,
          attempt: attempt.number,
          error: reason,
          at: this.now(),
        });
        throw error;
      }
      if (failed?.result.kind === 'failed') {
        await this.announceAnchorEnd(failed.album, generation);
        return { kind: 'failed', reason };
      }
      if (failed?.result.kind === 'finished') await this.alsoAnnounce(job, failed.album);
      return { kind: failed ? failed.result.kind : 'album-gone' };
    }
    // Outside the try: a store or Redis failure from here on is not the image's failure. It fails this run,
    // and the queue's next run finds the anchor generating (and makes it again) or ready (and announces it).
    const done = await this.updater.update(ref, (current) => completeAnchor(current, generation, hash, this.now()));
    if (!done) return { kind: 'album-gone' };
    if (done.result.kind === 'finished') await this.alsoAnnounce(job, done.album);
    if (done.result.kind !== 'completed') return { kind: done.result.kind };
    await this.announceAnchorEnd(done.album, generation);
    return { kind: 'completed' };
  }

  async processShot(job: ShotJob, attempt: JobAttempt): Promise<JobOutcome> {
    const ref = { userId: job.userId, albumId: job.albumId };
    const started = await this.updater.update(ref, (album) => startShot(album, job, this.now()));
    if (!started) return { kind: 'album-gone' };
    if (started.result.kind === 'finished') await this.reannounce(job, started.album);
    if (started.result.kind !== 'started') return { kind: started.result.kind };
    const album = started.album;
    const shot = album.shots[job.index]!;
    await this.events.publish(job.userId, 'shot.started', {
      albumId: album.id,
      index: job.index,
      attempt: shot.attempts,
      at: this.now(),
    });
    let hash: string;
    try {
      const anchorPng = await this.anchors.fetch(job.anchorUrl, job.albumId);
      const png = await this.generator.generateShot({
        anchorPng,
        subject: album.subject,
        direction: shot.direction,
        variation: shot.variation,
        widthPx: album.width_px,
        heightPx: album.height_px,
      });
      await checkPng(png, album.width_px, album.height_px, shotImageBytesMax);
      hash = await this.blobs.put(png, 'image/png');
    } catch (error) {
      const { reason, retryable } = failureOf(error);
      const final = !retryable || attempt.last;
      const failed = await this.updater.update(ref, (current) => failShot(current, job, reason, final, this.now()));
      if (failed?.result.kind === 'retrying') {
        await this.events.publish(job.userId, 'shot.retrying', {
          albumId: album.id,
          index: job.index,
          attempt: attempt.number,
          error: reason,
          at: this.now(),
        });
        throw error;
      }
      if (failed?.result.kind === 'failed') {
        await this.announceShotEnd(failed.album, job);
        return { kind: 'failed', reason };
      }
      if (failed?.result.kind === 'finished') await this.alsoAnnounce(job, failed.album);
      return { kind: failed ? failed.result.kind : 'album-gone' };
    }
    // As for the anchor: a failure recording or announcing the shot fails this run, and the next run finds the
    // shot generating (and makes it again) or ended (and announces it, once).
    const done = await this.updater.update(ref, (current) => completeShot(current, job, hash, this.now()));
    if (!done) return { kind: 'album-gone' };
    if (done.result.kind === 'finished') await this.alsoAnnounce(job, done.album);
    if (done.result.kind !== 'completed') return { kind: done.result.kind };
    await this.announceShotEnd(done.album, job);
    return { kind: 'completed' };
  }

  /**
   * abandon records the end of a job the queue gave up on without the job recording one (album-state.ts
   * abandonShot), and announces it; a job that did record its end changes nothing here.
   */
  async abandon(job: AlbumJob, reason: string): Promise<void> {
    const ref = { userId: job.userId, albumId: job.albumId };
    if (job.kind === 'anchor') {
      const ended = await this.updater.update(ref, (album) =>
        abandonAnchor(album, job.anchorGeneration, reason, this.now()),
      );
      if (ended && ended.result.kind !== 'superseded') await this.reannounce(job, ended.album);
    } else {
      const ended = await this.updater.update(ref, (album) => abandonShot(album, job, reason, this.now()));
      if (ended && ended.result.kind !== 'superseded') await this.reannounce(job, ended.album);
    }
  }
}

export function albumJobProcessor(options: AlbumJobProcessorOptions) {
  const processor = new AlbumJobProcessor(options);
  const run = (job: AlbumJob, attempt: JobAttempt): Promise<JobOutcome> => processor.run(job, attempt);
  return Object.assign(run, { abandon: (job: AlbumJob, reason: string) => processor.abandon(job, reason) });
}
