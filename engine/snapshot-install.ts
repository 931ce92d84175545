// The driver's half of a fetchSnapshot effect (engine/types.ts), written once for every driver: the
// simulator (sim/rpc-router.ts) and the node (transports/node/snapshot-transfer.ts). Fetching and
// verifying the files is each driver's own I/O (in memory, or streamed to disk); what the engine
// hears, and Raft's rule on a stale snapshot, are decided here.
import { canonicalFilter, filterProblem } from './communities.js';
import type { SnapshotHeader } from './rpc.js';
import type { Input, MemberFilter, SnapshotExpectation, SnapshotMeta } from './types.js';

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
 * snapshotFilterProblem: a filtered snapshot (meta.filter, inside the artifact, so covered by its BLAKE3
 * manifest) is installed only by a member that expects exactly that one — filtered, of the same epoch
 * (unless it is wiping toward a filtered log and has not yet heard which), by the same filter when it
 * knows it, and not superseded by a newer filter change its log shows — and a full snapshot only by a
 * member that holds the full log. Anything else would install a wrongly filtered state (its filter changed
 * between the offer and the install, or the leader cut it for someone else): refused, the pull starts
 * again. Null when it may be installed.
 */
export function snapshotFilterProblem(meta: SnapshotMeta, expected: SnapshotExpectation): string | null {
  const cut = meta.filter;
  if (!expected.filtered)
    return cut ? `a snapshot filtered at epoch ${cut.epoch} for a member that holds the full log` : null;
  if (!cut) return 'a full snapshot for a filtered member (its leader no longer filters it: it refills by ships)';
  if (!Number.isSafeInteger(cut.epoch) || cut.epoch < 1) return `filter epoch ${cut.epoch} is not a seq`;
  const bad = filterProblem(cut.filter);
  if (bad !== null) return `the snapshot's filter: ${bad}`;
  if (expected.epoch >= 1 && cut.epoch !== expected.epoch)
    return `filtered at epoch ${cut.epoch}, the member's data is of epoch ${expected.epoch}`;
  if (expected.newerEpoch > cut.epoch)
    return `filtered at epoch ${cut.epoch}, the member's filter changed again at seq ${expected.newerEpoch}`;
  if (expected.filter !== null && !sameFilter(cut.filter, expected.filter))
    return `filtered to ${JSON.stringify(cut.filter)}, the member's filter is ${JSON.stringify(expected.filter)}`;
  return null;
}

/** sameFilter: the same communities, whatever the order. */
export function sameFilter(a: MemberFilter, b: MemberFilter): boolean {
  return JSON.stringify(canonicalFilter(a)) === JSON.stringify(canonicalFilter(b));
}

/**
 * adoptSnapshot is the last step of an install, run right before the engine hears of it, so that no
 * apply falls between the check and the swap: a stale snapshot is refused; otherwise `swapIn` puts the
 * verified artifact's state in place (or says why it cannot) and the engine hears snapshotInstalled.
 * `expected` is the engine's snapshotExpectation() read at the same moment: a snapshot filtered otherwise
 * than the member now expects is refused (snapshotFilterProblem). It returns the input for the engine.
 */
export function adoptSnapshot(
  requestId: number,
  meta: SnapshotMeta,
  header: SnapshotHeader,
  appliedSeq: number,
  swapIn: () => string | null,
  expected: SnapshotExpectation,
): Extract<Input, { type: 'snapshotInstalled' | 'snapshotFailed' }> {
  const stale = staleSnapshotReason(meta.seq, appliedSeq);
  if (stale !== null) return { type: 'snapshotFailed', requestId, code: 'stale', reason: stale };
  const wrong = snapshotFilterProblem(meta, expected);
  if (wrong !== null) return { type: 'snapshotFailed', requestId, code: 'wrong-filter', reason: wrong };
  const refusal = swapIn();
  if (refusal !== null) return { type: 'snapshotFailed', requestId, code: 'failed', reason: refusal };
  return { type: 'snapshotInstalled', requestId, meta, header };
}
