// Fixtures for staging store snapshots outside a cluster (test/store/snapshot-layers.test.ts, bench/snapshot-delta.ts).
import type { SnapshotMeta } from '../../engine/types.js';

/** singleMemberSnapshotMeta is a snapshot's meta at `seq` for a one-member cluster in term 1. */
export function singleMemberSnapshotMeta(seq: number): SnapshotMeta {
  return {
    seq,
    entryTerm: 1,
    roster: {
      membershipVersion: 1,
      nextMemberId: 2,
      members: [{ id: 1, name: 'n1', grpcAddr: 'n1:7000', httpAddr: 'n1:8000', role: 0 }],
    },
  };
}
