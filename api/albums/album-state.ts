// The album state machine, pure: every function takes an album and returns the next one (or null: no
// write) with a result. No I/O, no clock (the time comes in as `now`), so each rule is tested alone and the
// routes and the worker share them through the updater.
//
// Anchor: none → pending → generating → ready | failed; generating → pending on a retryable failure while
// attempts remain. requestAnchor from any state starts a new generation, except that repeating the request
// that is already pending or generating (same seed) changes nothing. A new generation resets every shot to
// `pending` without an image and supersedes their jobs: shots are always of the current anchor.
//
// Shot: pending → generating → complete | failed; generating → pending on a retryable failure. Requests
// (requestShots, requestShot) need the anchor `ready` (ANCHOR_REQUIRED otherwise) and put a shot back to
// `pending` with a new request number, which names its job. deleteShots returns every shot to `pending`,
// unqueued and without an image. When a shot reaches complete or failed and no shot is pending or
// generating any more, the album is complete: the write that makes it so reports it, once.
import { ApiError } from '../errors.js';
import { AlbumError } from './album-errors.js';
import type { AnchorJob, ShotJob } from './album-jobs.js';
import type { AlbumRecord, ShotCounts, ShotRecord } from './album-records.js';
import { imagePath, shotCounts } from './album-records.js';

export interface AlbumStep<R> {
  /** album is the record to write, or null when nothing changes. */
  album: AlbumRecord | null;
  result: R;
}

const unchanged = <R>(result: R): AlbumStep<R> => ({ album: null, result });

function touched(album: AlbumRecord, now: string): AlbumRecord {
  return { ...album, anchor: { ...album.anchor }, shots: album.shots.map((shot) => ({ ...shot })), updated_at: now };
}

function resetShot(shot: ShotRecord): void {
  shot.status = 'pending';
  shot.queued = false;
  shot.request += 1;
  shot.image_url = null;
  shot.image_hash = null;
  shot.error = null;
  shot.attempts = 0;
  shot.requested_at = null;
  shot.started_at = null;
  shot.completed_at = null;
}

export function anchorJobOf(album: AlbumRecord): AnchorJob {
  return { kind: 'anchor', userId: album.user_id, albumId: album.id, anchorGeneration: album.anchor.generation };
}

export function shotJobOf(album: AlbumRecord, shot: ShotRecord): ShotJob {
  if (album.anchor.state !== 'ready' || album.anchor.url === null) throw new Error('a shot job needs a ready anchor');
  return {
    kind: 'shot',
    userId: album.user_id,
    albumId: album.id,
    index: shot.index,
    request: shot.request,
    anchorGeneration: album.anchor.generation,
    anchorUrl: album.anchor.url,
  };
}

// ---- requests (routes) ----

/** requestAnchor starts a new anchor generation, or repeats the job of an identical one in flight. */
export function requestAnchor(
  album: AlbumRecord,
  seed: number,
  now: string,
): AlbumStep<{ job: AnchorJob; fresh: boolean }> {
  const inFlight = album.anchor.state === 'pending' || album.anchor.state === 'generating';
  if (inFlight && album.anchor.seed === seed) return unchanged({ job: anchorJobOf(album), fresh: false });
  const next = touched(album, now);
  next.anchor = {
    state: 'pending',
    generation: album.anchor.generation + 1,
    seed,
    url: null,
    hash: null,
    error: null,
    attempts: 0,
    requested_at: now,
    started_at: null,
    completed_at: null,
  };
  for (const shot of next.shots) resetShot(shot);
  return { album: next, result: { job: anchorJobOf(next), fresh: true } };
}

function requireReadyAnchor(album: AlbumRecord): void {
  if (album.anchor.state !== 'ready') {
    throw new AlbumError(
      'ANCHOR_REQUIRED',
      `shots need a ready anchor first; the anchor is ${album.anchor.state}: ` +
        `POST /albums/${album.id}/anchor and wait for anchor.completed`,
      { anchorState: album.anchor.state },
    );
  }
}

function queueShot(shot: ShotRecord, variation: number, now: string): void {
  resetShot(shot);
  shot.queued = true;
  shot.variation = variation;
  shot.requested_at = now;
}

/**
 * requestShots queues every shot that is not complete and has no job (failed ones included), and repeats
 * the jobs of queued ones still pending (their ids are unchanged, so the queue keeps one of each).
 */
export function requestShots(album: AlbumRecord, now: string): AlbumStep<{ jobs: ShotJob[]; queued: number[] }> {
  requireReadyAnchor(album);
  const next = touched(album, now);
  const jobs: ShotJob[] = [];
  const queued: number[] = [];
  let changed = false;
  for (const shot of next.shots) {
    if (shot.status === 'complete' || shot.status === 'generating') continue;
    if (shot.status === 'failed' || !shot.queued) {
      queueShot(shot, shot.variation, now);
      changed = true;
    }
    jobs.push(shotJobOf(next, shot));
    queued.push(shot.index);
  }
  return { album: changed ? next : null, result: { jobs, queued } };
}

/**
 * requestShot (re)generates one shot with the given variation. Repeating a request that is queued or
 * generating with the same variation changes nothing and repeats its job.
 */
export function requestShot(
  album: AlbumRecord,
  index: number,
  variation: number,
  now: string,
): AlbumStep<{ job: ShotJob; fresh: boolean }> {
  const current = album.shots[index];
  if (!current) throw new ApiError('NOT_FOUND', `album ${album.id} has shots 0..${album.shots.length - 1}`);
  requireReadyAnchor(album);
  const inFlight = current.status === 'generating' || (current.status === 'pending' && current.queued);
  if (inFlight && current.variation === variation) return unchanged({ job: shotJobOf(album, current), fresh: false });
  const next = touched(album, now);
  const shot = next.shots[index]!;
  queueShot(shot, variation, now);
  return { album: next, result: { job: shotJobOf(next, shot), fresh: true } };
}

/** deleteShots discards every shot's image and result; jobs still out are superseded and will do nothing. */
export function deleteShots(album: AlbumRecord, now: string): AlbumStep<{ discarded: number }> {
  const next = touched(album, now);
  let discarded = 0;
  for (const shot of next.shots) {
    if (shot.status !== 'pending' || shot.queued) discarded++;
    resetShot(shot);
  }
  return { album: next, result: { discarded } };
}

// ---- job progress (worker) ----

/** JobProgress is what a worker's update did: the job is stale, already finished, or this step happened. */
export type JobProgress<T extends string> = { kind: 'superseded' } | { kind: 'finished' } | { kind: T };

export function startAnchor(album: AlbumRecord, generation: number, now: string): AlbumStep<JobProgress<'started'>> {
  if (album.anchor.generation !== generation) return unchanged({ kind: 'superseded' });
  if (album.anchor.state === 'ready' || album.anchor.state === 'failed') return unchanged({ kind: 'finished' });
  const next = touched(album, now);
  next.anchor.state = 'generating';
  next.anchor.attempts += 1;
  next.anchor.started_at = now;
  return { album: next, result: { kind: 'started' } };
}

export function completeAnchor(
  album: AlbumRecord,
  generation: number,
  hash: string,
  now: string,
): AlbumStep<JobProgress<'completed'>> {
  if (album.anchor.generation !== generation) return unchanged({ kind: 'superseded' });
  if (album.anchor.state !== 'generating') return unchanged({ kind: 'finished' });
  const next = touched(album, now);
  Object.assign(next.anchor, { state: 'ready', url: imagePath(album.id, hash), hash, error: null, completed_at: now });
  return { album: next, result: { kind: 'completed' } };
}

/** failAnchor ends the generation as failed (final) or puts it back to pending for the queue's retry. */
export function failAnchor(
  album: AlbumRecord,
  generation: number,
  error: string,
  final: boolean,
  now: string,
): AlbumStep<JobProgress<'failed' | 'retrying'>> {
  if (album.anchor.generation !== generation) return unchanged({ kind: 'superseded' });
  if (album.anchor.state !== 'generating') return unchanged({ kind: 'finished' });
  const next = touched(album, now);
  Object.assign(next.anchor, final ? { state: 'failed', error, completed_at: now } : { state: 'pending', error });
  return { album: next, result: { kind: final ? 'failed' : 'retrying' } };
}

function currentShot(
  album: AlbumRecord,
  job: Pick<ShotJob, 'index' | 'request' | 'anchorGeneration'>,
): ShotRecord | null {
  const shot = album.shots[job.index];
  if (!shot || shot.request !== job.request || album.anchor.generation !== job.anchorGeneration) return null;
  return shot;
}

export function startShot(
  album: AlbumRecord,
  job: Pick<ShotJob, 'index' | 'request' | 'anchorGeneration'>,
  now: string,
): AlbumStep<JobProgress<'started'>> {
  const shot = currentShot(album, job);
  if (!shot || !shot.queued) return unchanged({ kind: shot ? 'finished' : 'superseded' });
  const next = touched(album, now);
  const nextShot = next.shots[job.index]!;
  nextShot.status = 'generating';
  nextShot.attempts += 1;
  nextShot.started_at = now;
  return { album: next, result: { kind: 'started' } };
}

/** albumDone reports the shot counts when no shot is pending or generating any more. */
function albumDone(album: AlbumRecord): ShotCounts | null {
  const counts = shotCounts(album);
  return counts.pending === 0 && counts.generating === 0 ? counts : null;
}

export interface ShotEnd {
  /** albumComplete holds the counts when this step finished the album's last outstanding shot. */
  albumComplete: ShotCounts | null;
}

export function completeShot(
  album: AlbumRecord,
  job: Pick<ShotJob, 'index' | 'request' | 'anchorGeneration'>,
  hash: string,
  now: string,
): AlbumStep<JobProgress<'completed'> & ShotEnd> {
  const shot = currentShot(album, job);
  if (!shot || shot.status !== 'generating')
    return unchanged({ kind: shot ? 'finished' : 'superseded', albumComplete: null });
  const next = touched(album, now);
  Object.assign(next.shots[job.index]!, {
    status: 'complete',
    queued: false,
    image_url: imagePath(album.id, hash),
    image_hash: hash,
    error: null,
    completed_at: now,
  });
  return { album: next, result: { kind: 'completed', albumComplete: albumDone(next) } };
}

/**
 * FinishedShot is how a shot job that found its shot already ended should re-announce that end (its worker
 * may have died between the state write and the events): the shot, and the album counts if it is complete.
 */
export interface FinishedShot extends ShotEnd {
  shot: ShotRecord;
}

/** finishedShot is the shot of job when that request ended (complete or failed), else null. */
export function finishedShot(
  album: AlbumRecord,
  job: Pick<ShotJob, 'index' | 'request' | 'anchorGeneration'>,
): FinishedShot | null {
  const shot = currentShot(album, job);
  if (!shot || (shot.status !== 'complete' && shot.status !== 'failed')) return null;
  return { shot, albumComplete: albumDone(album) };
}

/**
 * Once-keys name each end event (user-events.ts publishes an event once per key): a shot request's end, an
 * anchor generation's end, and an album round's completion. A round is named by every shot's request
 * number, which changes whenever any shot is asked for again, so each completed round has its own key.
 */
export const endEventKeys = {
  shot: (albumId: string, index: number, request: number) => `shot.${albumId}.${index}.${request}.end`,
  anchor: (albumId: string, generation: number) => `anchor.${albumId}.${generation}.end`,
  round: (album: AlbumRecord) =>
    `album.${album.id}.${album.anchor.generation}.${album.shots.map((shot) => shot.request).join('-')}.completed`,
} as const;

export function failShot(
  album: AlbumRecord,
  job: Pick<ShotJob, 'index' | 'request' | 'anchorGeneration'>,
  error: string,
  final: boolean,
  now: string,
): AlbumStep<JobProgress<'failed' | 'retrying'> & ShotEnd> {
  const shot = currentShot(album, job);
  if (!shot || shot.status !== 'generating')
    return unchanged({ kind: shot ? 'finished' : 'superseded', albumComplete: null });
  const next = touched(album, now);
  const nextShot = next.shots[job.index]!;
  nextShot.error = error;
  if (!final) {
    nextShot.status = 'pending';
    return { album: next, result: { kind: 'retrying', albumComplete: null } };
  }
  Object.assign(nextShot, { status: 'failed', queued: false, completed_at: now });
  return { album: next, result: { kind: 'failed', albumComplete: albumDone(next) } };
}

/**
 * abandonShot ends a shot as failed when the queue gave up on its job without the job recording an end (its
 * worker died too often, or every attempt failed before it could write): the shot, still `generating` or
 * queued for that request, would otherwise wait for ever. A shot that ended, or a newer request, is left alone.
 */
export function abandonShot(
  album: AlbumRecord,
  job: Pick<ShotJob, 'index' | 'request' | 'anchorGeneration'>,
  error: string,
  now: string,
): AlbumStep<JobProgress<'failed'> & ShotEnd> {
  const shot = currentShot(album, job);
  if (!shot || !shot.queued) return unchanged({ kind: shot ? 'finished' : 'superseded', albumComplete: null });
  const next = touched(album, now);
  Object.assign(next.shots[job.index]!, { status: 'failed', queued: false, error, completed_at: now });
  return { album: next, result: { kind: 'failed', albumComplete: albumDone(next) } };
}

/** abandonAnchor is abandonShot for the anchor: a generation still pending or generating ends failed. */
export function abandonAnchor(
  album: AlbumRecord,
  generation: number,
  error: string,
  now: string,
): AlbumStep<JobProgress<'failed'>> {
  if (album.anchor.generation !== generation) return unchanged({ kind: 'superseded' });
  if (album.anchor.state !== 'pending' && album.anchor.state !== 'generating') return unchanged({ kind: 'finished' });
  const next = touched(album, now);
  Object.assign(next.anchor, { state: 'failed', error, completed_at: now });
  return { album: next, result: { kind: 'failed' } };
}
