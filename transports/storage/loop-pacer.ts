// A pause for long background work on the event loop (a snapshot staging's encoding, then its file's writing and
// hashing): after a piece of work that took t ms it waits t × (100 − share) / share ms, at least one loop turn, so
// the work keeps to about `sharePercent` of the loop's time instead of taking all of it for a burst. Why: at 64
// concurrent writers every member stages its snapshot within the same second (they apply the same entries), and
// three members' ~100 ms stagings at once on a machine of two cores stall a few whole rounds of writes: that burst,
// not the work itself, is what a write's p99 pays (bench/write-tail.ts, docs/operations.md "The c64 tail").
import { performance } from 'node:perf_hooks';

/** PacerClock is what a pacer reads and waits on; tests pass a fake one. */
export interface PacerClock {
  nowMs(): number;
  sleepMs(ms: number): Promise<void>;
  nextTurn(): Promise<void>;
}

/** PACED_WAIT_MS_MIN: a wait shorter than this is one loop turn instead (timers have a millisecond's grain). */
const PACED_WAIT_MS_MIN = 1;

export const REAL_PACER_CLOCK: PacerClock = {
  nowMs: () => performance.now(),
  sleepMs: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
  nextTurn: () => new Promise((resolve) => setImmediate(resolve)),
};

/**
 * pacedPause returns the pause to await between pieces of one job; the first piece is timed from this call.
 * A share of 100 (or more) is a bare loop turn between pieces, as before pacing.
 */
export function pacedPause(sharePercent: number, clock: PacerClock = REAL_PACER_CLOCK): () => Promise<void> {
  if (!(sharePercent > 0)) throw new RangeError(`pacedPause: share must be above 0 percent, got ${sharePercent}`);
  let resumedAtMs = clock.nowMs();
  return async () => {
    const ranMs = clock.nowMs() - resumedAtMs;
    const waitMs = sharePercent >= 100 ? 0 : (ranMs * (100 - sharePercent)) / sharePercent;
    await (waitMs < PACED_WAIT_MS_MIN ? clock.nextTurn() : clock.sleepMs(waitMs));
    resumedAtMs = clock.nowMs();
  };
}
