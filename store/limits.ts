// Every limit of the replicated store has a name and a default here; a node overrides them by name.
//
// These bound what a proposer accepts and how long a caller waits. They are never consulted when a
// committed command is applied: apply must give the same result on every node whatever its
// configuration, so apply-time checks use only the fixed rules in command.ts.

export interface StoreLimits {
  /** keyBytesMax bounds a key's UTF-8 size (checked when proposing). */
  keyBytesMax: number;
  /** commandBytesMax bounds one encoded command, and so a value's size (checked when proposing). */
  commandBytesMax: number;
  /** listLimitMax caps one list page; callers page with `after`. */
  listLimitMax: number;
  /** writeTimeoutMs bounds a put or delete: finding the leader, retries, commit and the local apply. */
  writeTimeoutMs: number;
  /** readTimeoutMs bounds a read's barrier: the leader's read index, then the local apply reaching it. */
  readTimeoutMs: number;
  /**
   * catchUpWaitMs bounds how long this node's own apply may hold a caller once the leader has answered: a read
   * whose read index this node has not applied by then is refused as catching up (StoreCatchingUpError: the
   * API's prompt 503 with Retry-After), and a write the leader committed is answered with the leader's outcome
   * without waiting for the local apply (later reads here still wait for it). A restarted member catching up
   * thus answers within it instead of holding every request until it has caught up. Keep it under the
   * election timeout, so it never holds a client longer than a leader change would (a node derives it so).
   */
  catchUpWaitMs: number;
  /** retryBackoffMs is the pause between attempts while the leader is unknown or changing. */
  retryBackoffMs: number;
  /** callDeadlineMs bounds one Propose or ReadIndex call to the leader. */
  callDeadlineMs: number;
  /**
   * proposeBatchCountMax bounds the commands of one ProposeBatch call: a caller coalesces at most
   * this many forwarded writes into one call, and a server refuses a larger batch.
   */
  proposeBatchCountMax: number;
  /** streamOpenRequestCountMax bounds the requests open on one ReadIndexStream or ProposeStream call (server side). */
  streamOpenRequestCountMax: number;
  /** streamIdleMs: a member ends its ReadIndexStream or ProposeStream call to an address after this long with no request open. */
  streamIdleMs: number;
  /**
   * readIndexCallsInFlightMax bounds a follower's read-index calls to the leader in flight at once (each carries
   * one loop turn's reads, store/read-index-batch.ts); 1 (the default) makes every turn's reads wait for the call
   * before. The leader's own calls are not bounded by it (its engine batches them).
   */
  readIndexCallsInFlightMax: number;
  /**
   * snapshotLayerCountMax bounds the layers of a staged snapshot (store/snapshot-layers.ts): store.json and the
   * delta files over it. A staging that would exceed it writes the whole state again, as does one where
   * snapshotLayerRowsPercentMax would be passed; 1 = every snapshot whole.
   */
  snapshotLayerCountMax: number;
  /**
   * snapshotLayerRowsPercentMax: a snapshot's layers together hold at most this percent of its documents in rows
   * (a key rewritten since the layer below is a row in both); past it the next staging writes the whole state
   * again, which bounds the disk a stack takes and a reader's extra work to this ratio.
   */
  snapshotLayerRowsPercentMax: number;
}

export const DEFAULT_STORE_LIMITS: Readonly<StoreLimits> = Object.freeze({
  keyBytesMax: 1024,
  // Well under the engine's segmentPayloadBytesMax (4 MiB), so one command always fits one segment.
  commandBytesMax: 1024 * 1024,
  listLimitMax: 1000,
  writeTimeoutMs: 10_000,
  readTimeoutMs: 5_000,
  // Half the engine's default election timeout (electionTimeoutTicks 10 of tickMs 100).
  catchUpWaitMs: 500,
  retryBackoffMs: 50,
  callDeadlineMs: 3_000,
  proposeBatchCountMax: 256,
  // A follower keeps a few read-index requests in flight at most (ReadIndexBatch) and one write batch per loop turn while
  // earlier ones wait for their commit: a few dozen under load. Above this the member is misbehaving.
  streamOpenRequestCountMax: 1024,
  streamIdleMs: 30_000,
  // One: each turn's reads wait for the call in flight, as before the bound existed. Overlap (say 4) cut a
  // follower's wait for its call to start about in half on a loaded machine, but its throughput showed no gain
  // there in alternating runs; the quiet-machine comparison (bench/api-cluster.ts --read-index-calls-in-flight)
  // decides the default.
  readIndexCallsInFlightMax: 1,
  // A stack of deltas makes a staging cost what was written since the last one; the whole state is written again
  // when rewritten keys make the stack twice the store's rows, or after 32 layers (a growing store's new keys never
  // make a row stale, so without the count its stack would grow for ever).
  snapshotLayerCountMax: 32,
  snapshotLayerRowsPercentMax: 200,
});

/**
 * DEDUP_ENTRY_COUNT_MAX bounds the request ids the state machine remembers so a retried command
 * applies once. It is a constant, not a limit: every node must evict the same ids at the same seq.
 */
export const DEDUP_ENTRY_COUNT_MAX = 10_000;

export function storeLimits(overrides: Partial<StoreLimits> = {}): StoreLimits {
  const limits = { ...DEFAULT_STORE_LIMITS, ...overrides };
  for (const [name, value] of Object.entries(limits)) {
    if (!Number.isSafeInteger(value) || value < 1)
      throw new RangeError(`store limit ${name} must be a positive integer, got ${String(value)}`);
  }
  if (limits.snapshotLayerRowsPercentMax < 100)
    throw new RangeError(
      `store limit snapshotLayerRowsPercentMax must be at least 100 (every document is a row), got ${limits.snapshotLayerRowsPercentMax}`,
    );
  return limits;
}
