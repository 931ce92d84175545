// engine/snapshot-install.ts: the last step of installing a fetched snapshot, shared by the simulator and the node.
import assert from 'node:assert/strict';
import { bootstrapRoster } from '../../engine/roster.js';
import type { SnapshotHeader } from '../../engine/rpc.js';
import {
  adoptSnapshot,
  snapshotFilterProblem,
  snapshotMetaProblem,
  staleSnapshotReason,
} from '../../engine/snapshot-install.js';
import type { SnapshotExpectation, SnapshotMeta } from '../../engine/types.js';

const meta: SnapshotMeta = {
  seq: 20,
  entryTerm: 2,
  roster: bootstrapRoster([{ name: 'a', grpcAddr: 'a:7000', httpAddr: 'http://a:8080' }]),
};
const header: SnapshotHeader = { needed: true, snapshotSeq: 20, term: 2, leaderRegion: 1, files: [] };
const FULL: SnapshotExpectation = { filtered: false };

describe('engine: adopting a fetched snapshot', () => {
  it('swaps the state in and tells the engine snapshotInstalled when the snapshot is past what was applied', () => {
    let swapped = 0;
    const input = adoptSnapshot(
      7,
      meta,
      header,
      19,
      () => {
        swapped++;
        return null;
      },
      FULL,
    );
    assert.deepEqual(input, { type: 'snapshotInstalled', requestId: 7, meta, header });
    assert.equal(swapped, 1);
  });

  it("refuses a snapshot not past the applied seqno (Raft's rule), without touching the state", () => {
    for (const appliedSeq of [20, 25]) {
      let swapped = 0;
      const input = adoptSnapshot(
        7,
        meta,
        header,
        appliedSeq,
        () => {
          swapped++;
          return null;
        },
        FULL,
      );
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
      adoptSnapshot(3, meta, header, 0, () => 'bad artifact: state.json is not JSON', FULL),
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

  describe('a filtered snapshot (docs/protocol.md, "Filtered members")', () => {
    const cut = { epoch: 12, filter: { prefixes: ['k1'], tenants: [] } };
    const filtered: SnapshotMeta = { ...meta, filter: cut };
    const expecting = (over: Partial<Extract<SnapshotExpectation, { filtered: true }>> = {}): SnapshotExpectation => ({
      filtered: true,
      epoch: 12,
      filter: { prefixes: ['k1'], tenants: [] },
      newerEpoch: 12,
      ...over,
    });

    it('is installed by the member it was cut for, and a wiping member (epoch 0) takes any epoch', () => {
      assert.equal(snapshotFilterProblem(filtered, expecting()), null);
      assert.equal(snapshotFilterProblem(filtered, expecting({ epoch: 0, filter: null, newerEpoch: 0 })), null);
      let swapped = 0;
      const input = adoptSnapshot(5, filtered, header, 3, () => (swapped++, null), expecting());
      assert.equal(input.type, 'snapshotInstalled');
      assert.equal(swapped, 1);
    });

    it('is never installed by a member that holds the full log, nor a full one by a filtered member', () => {
      let swapped = 0;
      const input = adoptSnapshot(5, filtered, header, 3, () => (swapped++, null), FULL);
      assert.equal(input.type, 'snapshotFailed');
      assert.equal(input.type === 'snapshotFailed' && input.code, 'wrong-filter');
      assert.equal(swapped, 0);
      assert.match(snapshotFilterProblem(meta, expecting()) ?? '', /full snapshot for a filtered member/);
    });

    it("is refused when the filter changed between the offer and the install, or is another member's", () => {
      assert.match(snapshotFilterProblem(filtered, expecting({ epoch: 30 })) ?? '', /epoch 12.*epoch 30/);
      assert.match(snapshotFilterProblem(filtered, expecting({ newerEpoch: 30 })) ?? '', /changed again at seq 30/);
      assert.match(
        snapshotFilterProblem(filtered, expecting({ filter: { prefixes: ['k2'], tenants: [] } })) ?? '',
        /filtered to .*k1.*the member's filter is .*k2/,
      );
      assert.match(
        snapshotFilterProblem({ ...meta, filter: { epoch: 0, filter: cut.filter } }, expecting({ epoch: 0 })) ?? '',
        /not a seq/,
      );
      assert.match(
        snapshotFilterProblem({ ...meta, filter: { epoch: 12, filter: { prefixes: [], tenants: [] } } }, expecting()) ??
          '',
        /at least one key prefix/,
      );
    });
  });
});
