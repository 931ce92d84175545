// engine/snapshot-install.ts: the last step of installing a fetched snapshot, shared by the simulator and the node.
import assert from 'node:assert/strict';
import { bootstrapRoster } from '../../engine/roster.js';
import type { SnapshotHeader } from '../../engine/rpc.js';
import { adoptSnapshot, snapshotMetaProblem, staleSnapshotReason } from '../../engine/snapshot-install.js';
import type { SnapshotMeta } from '../../engine/types.js';

const meta: SnapshotMeta = {
  seq: 20,
  entryTerm: 2,
  roster: bootstrapRoster([{ name: 'a', grpcAddr: 'a:7000', httpAddr: 'http://a:8080' }]),
};
const header: SnapshotHeader = { needed: true, snapshotSeq: 20, term: 2, leaderRegion: 1, files: [] };

describe('engine: adopting a fetched snapshot', () => {
  it('swaps the state in and tells the engine snapshotInstalled when the snapshot is past what was applied', () => {
    let swapped = 0;
    const input = adoptSnapshot(7, meta, header, 19, () => {
      swapped++;
      return null;
    });
    assert.deepEqual(input, { type: 'snapshotInstalled', requestId: 7, meta, header });
    assert.equal(swapped, 1);
  });

  it("refuses a snapshot not past the applied seqno (Raft's rule), without touching the state", () => {
    for (const appliedSeq of [20, 25]) {
      let swapped = 0;
      const input = adoptSnapshot(7, meta, header, appliedSeq, () => {
        swapped++;
        return null;
      });
      assert.deepEqual(input, {
        type: 'snapshotFailed',
        requestId: 7,
        code: 'stale',
        reason: `stale: the state machine is at ${appliedSeq}, the snapshot at 20`,
      });
      assert.equal(swapped, 0);
    }
    assert.equal(staleSnapshotReason(21, 20), null);
  });

  it("passes on the swap's refusal as snapshotFailed", () => {
    assert.deepEqual(
      adoptSnapshot(3, meta, header, 0, () => 'bad artifact: state.json is not JSON'),
      {
        type: 'snapshotFailed',
        requestId: 3,
        code: 'failed',
        reason: 'bad artifact: state.json is not JSON',
      },
    );
  });

  it('holds meta.json to the seq its header offered', () => {
    assert.equal(snapshotMetaProblem(meta, header), null);
    assert.equal(snapshotMetaProblem({ ...meta, seq: 19 }, header), 'meta.json says seq 19, the header says 20');
  });
});
