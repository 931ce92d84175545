// Asserts for the invariants that must never break. A broken one means the engine's own state is
// wrong, so it crashes loudly (TigerBeetle's way) rather than carry on and persist or send it.
// No node modules: the engine stays pure (a plain throw works in every host).

/** EngineInvariantError is thrown by assert; nothing in the engine catches it. */
export class EngineInvariantError extends Error {
  override readonly name = 'EngineInvariantError';
}

/** assert throws EngineInvariantError with `message` when `condition` is false. */
export function assert(condition: boolean, message: string | (() => string)): asserts condition {
  if (!condition)
    throw new EngineInvariantError(`engine invariant: ${typeof message === 'string' ? message : message()}`);
}

/** assertNever marks a switch's unreachable default: a value of no known case is an engine bug. */
export function assertNever(value: never): never {
  throw new EngineInvariantError(`engine invariant: unhandled case ${JSON.stringify(value)}`);
}

/** Frontiers are the seqnos whose order the engine guarantees after every step. */
export interface Frontiers {
  appliedSeq: number;
  commitSeq: number;
  /** matchedSeq: the frontier known to match the leader (a leader: its own log end). */
  matchedSeq: number;
  durableSeq: number;
  lastSeq: number;
}

/**
 * assertFrontiers: applied ≤ commit (only committed entries are applied); commit ≤ matched (a
 * follower takes commit = min(leader's commit, matched frontier); a leader commits only what a
 * quorum of durable frontiers holds, within its own log); durable ≤ log end (the disk never holds
 * what the log dropped: truncation lowers durable with it).
 */
export function assertFrontiers(f: Frontiers): void {
  assert(f.appliedSeq <= f.commitSeq, () => `applied seqno ${f.appliedSeq} is above the commit seqno ${f.commitSeq}`);
  assert(
    f.commitSeq <= f.matchedSeq,
    () => `commit seqno ${f.commitSeq} is above the matched frontier ${f.matchedSeq}`,
  );
  assert(f.durableSeq <= f.lastSeq, () => `durable seqno ${f.durableSeq} is above the log end ${f.lastSeq}`);
}
