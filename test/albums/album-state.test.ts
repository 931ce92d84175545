// The pure album state machine, step by step: every anchor and shot transition, the rules that make
// repeats and stale jobs harmless, and "album complete" reported once.
import assert from 'node:assert/strict';
import fc from 'fast-check';
import type { AlbumRecord } from '../../api/albums/album-records.js';
import type { AlbumStep } from '../../api/albums/album-state.js';
import { albumFixtureTime, newAlbumRecord } from './helpers.js';
import {
  completeAnchor,
  completeShot,
  deleteShots,
  failAnchor,
  failShot,
  requestAnchor,
  requestShot,
  requestShots,
  startAnchor,
  startShot,
} from '../../api/albums/album-state.js';

const now = albumFixtureTime;
const hash = 'a'.repeat(64);
const otherHash = 'b'.repeat(64);

/** apply returns the album after a step (the same one when the step writes nothing). */
const apply = <R>(album: AlbumRecord, step: AlbumStep<R>) => step.album ?? album;

function readyAlbum(shotCount = 3): AlbumRecord {
  let album = apply(newAlbumRecord(shotCount), requestAnchor(newAlbumRecord(shotCount), 0, now));
  album = apply(album, startAnchor(album, 1, now));
  return apply(album, completeAnchor(album, 1, hash, now));
}

describe('albums: the state machine', () => {
  it('anchor: none → pending → generating → ready, with the AnchorURL; a stale generation does nothing', () => {
    const album = newAlbumRecord();
    const requested = requestAnchor(album, 0, now);
    assert.equal(requested.album!.anchor.state, 'pending');
    assert.equal(requested.album!.anchor.generation, 1);
    assert.deepEqual(requested.result.job, {
      kind: 'anchor',
      userId: album.user_id,
      albumId: album.id,
      anchorGeneration: 1,
    });
    const started = startAnchor(requested.album!, 1, now);
    assert.equal(started.album!.anchor.state, 'generating');
    assert.equal(started.album!.anchor.attempts, 1);
    assert.deepEqual(startAnchor(started.album!, 0, now), { album: null, result: { kind: 'superseded' } });
    const done = completeAnchor(started.album!, 1, hash, now);
    assert.equal(done.album!.anchor.state, 'ready');
    assert.equal(done.album!.anchor.url, `/albums/${album.id}/images/${hash}`);
    assert.deepEqual(startAnchor(done.album!, 1, now).result, { kind: 'finished' }, 'a repeated job finds it finished');
    assert.deepEqual(completeAnchor(done.album!, 1, otherHash, now).result, { kind: 'finished' });
  });

  it('anchor: a retryable failure goes back to pending, a final one to failed with its reason', () => {
    let album = apply(newAlbumRecord(), requestAnchor(newAlbumRecord(), 0, now));
    album = apply(album, startAnchor(album, 1, now));
    const retrying = failAnchor(album, 1, 'X: slow', false, now);
    assert.equal(retrying.result.kind, 'retrying');
    assert.equal(retrying.album!.anchor.state, 'pending');
    album = apply(retrying.album!, startAnchor(retrying.album!, 1, now));
    assert.equal(album.anchor.attempts, 2);
    const failed = failAnchor(album, 1, 'X: refused', true, now);
    assert.equal(failed.album!.anchor.state, 'failed');
    assert.equal(failed.album!.anchor.error, 'X: refused');
    assert.throws(() => requestShots(failed.album!, now), { code: 'ANCHOR_REQUIRED' });
    const again = requestAnchor(failed.album!, 0, now);
    assert.equal(again.album!.anchor.state, 'pending', 'a failed anchor can be asked for again');
    assert.equal(again.album!.anchor.error, null);
  });

  it('anchor: repeating the request in flight changes nothing; another seed supersedes it', () => {
    const album = apply(newAlbumRecord(), requestAnchor(newAlbumRecord(), 5, now));
    const repeat = requestAnchor(album, 5, now);
    assert.equal(repeat.album, null);
    assert.equal(repeat.result.fresh, false);
    assert.equal(repeat.result.job.anchorGeneration, 1);
    const other = requestAnchor(album, 6, now);
    assert.equal(other.album!.anchor.generation, 2);
    assert.deepEqual(startAnchor(other.album!, 1, now).result, { kind: 'superseded' });
  });

  it('shots need a ready anchor; requestShots queues the rest and repeats pending jobs without changes', () => {
    assert.throws(() => requestShots(newAlbumRecord(), now), { code: 'ANCHOR_REQUIRED', status: 422 });
    assert.throws(() => requestShot(newAlbumRecord(), 0, 0, now), { code: 'ANCHOR_REQUIRED' });
    const album = readyAlbum();
    const first = requestShots(album, now);
    assert.deepEqual(first.result.queued, [0, 1, 2]);
    assert.ok(first.album!.shots.every((shot) => shot.queued && shot.status === 'pending'));
    const jobs = first.result.jobs;
    assert.deepEqual(jobs[0], {
      kind: 'shot',
      userId: album.user_id,
      albumId: album.id,
      index: 0,
      request: first.album!.shots[0]!.request,
      anchorGeneration: 1,
      anchorUrl: album.anchor.url,
    });
    const repeat = requestShots(first.album!, now);
    assert.equal(repeat.album, null, 'nothing to change');
    assert.deepEqual(repeat.result.jobs, jobs, 'the same jobs (same ids) again');
    assert.throws(() => requestShot(album, 3, 0, now), { code: 'NOT_FOUND' });
  });

  it('shot: pending → generating → complete | failed; retries; the last end completes the album once', () => {
    let album = readyAlbum(2);
    const { jobs } = requestShots(album, now).result;
    album = apply(album, requestShots(album, now));
    const [a, b] = jobs as [(typeof jobs)[0], (typeof jobs)[0]];
    album = apply(album, startShot(album, a, now));
    album = apply(album, startShot(album, b, now));
    assert.deepEqual(
      album.shots.map((shot) => shot.status),
      ['generating', 'generating'],
    );
    const retry = failShot(album, b, 'X: busy', false, now);
    assert.equal(retry.album!.shots[1]!.status, 'pending');
    assert.equal(retry.album!.shots[1]!.queued, true, 'still queued: the queue retries it');
    album = apply(retry.album!, startShot(retry.album!, b, now));
    assert.equal(album.shots[1]!.attempts, 2);
    const firstDone = completeShot(album, a, hash, now);
    assert.equal(firstDone.result.albumComplete, null);
    album = firstDone.album!;
    const lastDone = failShot(album, b, 'X: refused', true, now);
    assert.deepEqual(lastDone.result, {
      kind: 'failed',
      albumComplete: { pending: 0, generating: 0, complete: 1, failed: 1 },
    });
    album = lastDone.album!;
    assert.equal(album.shots[1]!.error, 'X: refused');
    assert.deepEqual(completeShot(album, a, otherHash, now).result, { kind: 'finished', albumComplete: null });
    assert.deepEqual(failShot(album, b, 'again', true, now).result, { kind: 'finished', albumComplete: null });
    assert.deepEqual(startShot(album, a, now).result, { kind: 'finished' });
  });

  it('regenerating a shot supersedes its old job; the same variation in flight is one request', () => {
    let album = readyAlbum(1);
    const first = requestShot(album, 0, 0, now);
    album = first.album!;
    assert.equal(requestShot(album, 0, 0, now).album, null, 'the same request in flight');
    const second = requestShot(album, 0, 3, now);
    assert.equal(second.album!.shots[0]!.variation, 3);
    assert.notEqual(second.result.job.request, first.result.job.request);
    assert.deepEqual(startShot(second.album!, first.result.job, now).result, { kind: 'superseded' });
  });

  it('a new anchor and DELETE shots reset every shot and supersede its jobs', () => {
    let album = readyAlbum(2);
    const { jobs } = requestShots(album, now).result;
    album = apply(album, requestShots(album, now));
    album = apply(album, startShot(album, jobs[0]!, now));
    album = completeShot(album, jobs[0]!, hash, now).album!;
    const reanchored = requestAnchor(album, 1, now).album!;
    assert.ok(reanchored.shots.every((shot) => shot.status === 'pending' && !shot.queued && shot.image_url === null));
    assert.deepEqual(startShot(reanchored, jobs[1]!, now).result, { kind: 'superseded' });
    const deleted = deleteShots(album, now);
    assert.equal(deleted.result.discarded, 2);
    assert.ok(deleted.album!.shots.every((shot) => shot.status === 'pending' && !shot.queued && shot.attempts === 0));
    assert.deepEqual(startShot(deleted.album!, jobs[1]!, now).result, { kind: 'superseded' });
  });

  it('property: in any interleaving of requests and jobs, only the write that ends the last outstanding shot reports the album complete, and a shot has an image exactly when complete', () => {
    type Op =
      | { kind: 'start' | 'complete' | 'fail' | 'retry'; shot: number }
      | { kind: 'request'; shot: number }
      | { kind: 'requestAll' };
    const op = fc.oneof(
      fc.record({ kind: fc.constantFrom('start', 'complete', 'fail', 'retry'), shot: fc.integer({ min: 0, max: 2 }) }),
      fc.record({ kind: fc.constant('request'), shot: fc.integer({ min: 0, max: 2 }) }),
      fc.record({ kind: fc.constant('requestAll') }),
    ) as fc.Arbitrary<Op>;
    fc.assert(
      fc.property(fc.array(op, { maxLength: 60 }), (ops) => {
        let album = readyAlbum(3);
        const jobs = new Map<number, ReturnType<typeof requestShot>['result']['job']>();
        for (const step of ops) {
          if (step.kind === 'requestAll') {
            const result = requestShots(album, now);
            album = apply(album, result);
            for (const job of result.result.jobs) jobs.set(job.index, job);
            continue;
          }
          if (step.kind === 'request') {
            const result = requestShot(album, step.shot, 0, now);
            album = apply(album, result);
            jobs.set(step.shot, result.result.job);
            continue;
          }
          const job = jobs.get(step.shot);
          if (!job) continue;
          const before = album;
          const result: AlbumStep<{ kind: string; albumComplete?: unknown }> =
            step.kind === 'start'
              ? startShot(album, job, now)
              : step.kind === 'complete'
                ? completeShot(album, job, hash, now)
                : failShot(album, job, 'e', step.kind === 'fail', now);
          album = apply(album, result);
          const complete = result.result.albumComplete ?? null;
          if (complete) {
            // Reported only by the write that ended the last outstanding shot.
            assert.ok(result.album !== null);
            assert.ok(before.shots.some((shot) => shot.status === 'generating'));
            assert.ok(album.shots.every((shot) => shot.status === 'complete' || shot.status === 'failed'));
          }
          for (const shot of album.shots) {
            assert.equal(shot.status === 'complete', shot.image_url !== null, 'an image exactly when complete');
            if (shot.status === 'complete' || shot.status === 'failed') assert.equal(shot.queued, false);
          }
        }
      }),
    );
  });
});
