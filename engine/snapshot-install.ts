// The driver's half of a fetchSnapshot effect (engine/types.ts), written once for every driver: the
// simulator (sim/rpc-router.ts) and the node (transports/node/snapshot-transfer.ts). Fetching and
// verifying the files is each driver's own I/O (in memory, or streamed to disk); what the engine
// hears, and Raft's rule on a stale snapshot, are decided here.
import type { SnapshotHeader } from './rpc.js';
import type { Input, SnapshotMeta } from './types.js';

/** SNAPSHOT_NOT_NEEDED is the snapshotFailed reason (code not-needed) when the server answered that no snapshot is needed. */
export const SNAPSHOT_NOT_NEEDED = 'not-needed';

/** snapshotMetaProblem: an artifact's meta.json must name the seq its header offered; null when it does. */
export function snapshotMetaProblem(meta: SnapshotMeta, header: SnapshotHeader): string | null {
  return meta.seq === header.snapshotSeq
    ? null
    : `meta.json says seq ${meta.seq}, the header says ${header.snapshotSeq}`;
}

/**
 * staleSnapshotReason is Raft's rule for a snapshot arriving at a follower: one not past what the state
 * machine has applied is not installed (the follower caught up by ships while the fetch ran; going back
 * to it would lose entries it has reported). Null when the snapshot may be installed.
 */
export function staleSnapshotReason(snapshotSeq: number, appliedSeq: number): string | null {
  return snapshotSeq <= appliedSeq
    ? `stale: the state machine is at ${appliedSeq}, the snapshot at ${snapshotSeq}`
    : null;
}

/**
 * adoptSnapshot is the last step of an install, run right before the engine hears of it, so that no
 * apply falls between the check and the swap: a stale snapshot is refused; otherwise `swapIn` puts the
 * verified artifact's state in place (or says why it cannot) and the engine hears snapshotInstalled.
 * It returns the input for the engine.
 */
export function adoptSnapshot(
  requestId: number,
  meta: SnapshotMeta,
  header: SnapshotHeader,
  appliedSeq: number,
  swapIn: () => string | null,
): Extract<Input, { type: 'snapshotInstalled' | 'snapshotFailed' }> {
  const stale = staleSnapshotReason(meta.seq, appliedSeq);
  if (stale !== null) return { type: 'snapshotFailed', requestId, code: 'stale', reason: stale };
  const refusal = swapIn();
  if (refusal !== null) return { type: 'snapshotFailed', requestId, code: 'failed', reason: refusal };
  return { type: 'snapshotInstalled', requestId, meta, header };
}
