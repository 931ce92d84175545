// Late answers: a unary answer held back 0.5-3 election timeouts, but never past its call's deadline
// (2 election timeouts in the simulator, like the real transport's 2 s), so it still counts: it lands
// after the caller may have moved on — a new term, a new leader, a retried call. One-way delays alone
// (at most 60 ms) never reach that far. A slow snapshot transfer is the same fault for a FetchSnapshot
// call, whose deadline is the puller's pull timeout and more (sim/limits.ts pullDeadlineExtraTicks):
// held long enough, it lands after the puller gave the fetch up and caught up some other way.
import type { Prng } from './prng.js';

/** LATE_HOLD_ELECTION_TIMEOUTS: the range an answer is held back, in election timeouts. */
export const LATE_HOLD_ELECTION_TIMEOUTS = { min: 0.5, max: 3 } as const;

/**
 * lateArrivalUs: when an answer planned to arrive at `atUs` is held back, its new arrival time;
 * null when it is not (not drawn, or its deadline leaves less than the smallest hold).
 */
export function lateArrivalUs(
  prng: Prng,
  probability: number,
  atUs: number,
  nowUs: number,
  deadlineUs: number,
  electionUs: number,
): number | null {
  if (!prng.chance(probability)) return null;
  const holdUs = prng.uniform(LATE_HOLD_ELECTION_TIMEOUTS.min, LATE_HOLD_ELECTION_TIMEOUTS.max) * electionUs;
  // One microsecond before the deadline event, which the caller would otherwise take first.
  const heldUs = Math.round(Math.min(nowUs + holdUs, deadlineUs - 1));
  if (heldUs - nowUs < LATE_HOLD_ELECTION_TIMEOUTS.min * electionUs || heldUs <= atUs) return null;
  return heldUs;
}

/**
 * slowSnapshotArrivalUs: when a snapshot answer planned to arrive at `atUs` is slow, its new arrival
 * time: uniformly from half an election timeout to just before its call's deadline, so about half the
 * slow ones outlast the puller's pull timeout. Null when it is not slow (not drawn, or no room).
 */
export function slowSnapshotArrivalUs(
  prng: Prng,
  probability: number,
  atUs: number,
  nowUs: number,
  deadlineUs: number,
  electionUs: number,
): number | null {
  if (!prng.chance(probability)) return null;
  const earliestUs = nowUs + LATE_HOLD_ELECTION_TIMEOUTS.min * electionUs;
  const heldUs = Math.round(prng.uniform(earliestUs, deadlineUs - 1));
  return heldUs > atUs && heldUs < deadlineUs ? heldUs : null;
}
