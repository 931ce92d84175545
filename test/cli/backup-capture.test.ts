// What a node answers Admin.Backup with (cli/node/backup-capture.ts), on a real StoreStateMachine behind a router
// the test drives: the capture waits for the read index to be applied (so a lagging member still copies every write
// acknowledged before the backup began), is taken at the applied seqno, and encodes to the store.json a snapshot
// holds; a barrier that cannot be taken is UNAVAILABLE with the leader hint, which the CLI retries.
import assert from 'node:assert/strict';
import { status as grpcStatus } from '@grpc/grpc-js';
import { EntryKind } from '../../engine/types.js';
import { captureForBackup } from '../../cli/node/backup-capture.js';
import { AdminCallError } from '../../transports/admin/admin-client.js';
import type { NodeStatusDocument } from '../../transports/node/node-status.js';
import { encodeCommand } from '../../store/command.js';
import { StoreRefusal } from '../../store/errors.js';
import { decodeStoreSnapshot, StoreStateMachine, STORE_SNAPSHOT_FILE } from '../../store/state-machine.js';
import type { StoreRouter } from '../../store/store-router.js';

function put(machine: StoreStateMachine, key: string): void {
  const seq = machine.appliedSeq + 1;
  const data = encodeCommand({ op: 'put', key, value: { seq }, requestId: `r-${seq}` });
  machine.apply({ seq, term: 1, kind: EntryKind.EventBatch, data });
}

const status = {
  name: 'n2',
  term: 4,
  membershipVersion: 3,
  buildVersion: '1.2.3',
  members: [{ id: 2, name: 'n2', grpcAddr: 'a:1', httpAddr: 'http://a:2', role: 'voter' }],
} as unknown as NodeStatusDocument;

describe('cli/node: the state a backup captures', function () {
  it('waits until the read index is applied, then captures at the applied seqno: a lagging member misses nothing acknowledged', async function () {
    const machine = new StoreStateMachine();
    put(machine, 'a');
    const waited: number[] = [];
    // The leader's commit index is 3; this member has applied 1. The wait is released by applying the rest.
    const router = {
      readIndex: async () => 3,
      waitApplied: async (seq: number) => {
        waited.push(seq);
        put(machine, 'b');
        put(machine, 'c');
        put(machine, 'd'); // applied past the read index by the time the capture runs: the capture says so
      },
    } as unknown as StoreRouter;
    const capture = await captureForBackup(
      { router: () => router, stateMachine: machine, status: () => status, clusterId: 'c1' },
      Date.now() + 1000,
    );
    assert.deepEqual(waited, [3]);
    assert.equal(capture.index, 4);
    assert.equal(capture.term, 4);
    assert.equal(capture.servedBy, 'n2');
    assert.deepEqual(
      capture.files.map((f) => f.path),
      [STORE_SNAPSHOT_FILE],
    );
    const decoded = decodeStoreSnapshot(capture.files[0]!.bytes);
    assert.ok(decoded.ok);
    assert.equal(decoded.state.appliedSeq, 4);
    // Later applies do not leak into a capture already taken.
    put(machine, 'e');
    const again = decodeStoreSnapshot(capture.files[0]!.bytes);
    assert.ok(again.ok && again.state.appliedSeq === 4);
  });

  it('a barrier that cannot be taken is UNAVAILABLE, with the leader hint a refusal named', async function () {
    const router = {
      readIndex: async () => {
        throw new StoreRefusal('not-leader', 'not the leader; the leader is n1', '10.0.0.1:7000');
      },
    } as unknown as StoreRouter;
    await assert.rejects(
      captureForBackup(
        { router: () => router, stateMachine: new StoreStateMachine(), status: () => status, clusterId: 'c1' },
        Date.now() + 1000,
      ),
      (err: AdminCallError) => {
        assert.ok(err instanceof AdminCallError);
        assert.equal(err.code, grpcStatus.UNAVAILABLE);
        assert.equal(err.leaderHint, '10.0.0.1:7000');
        return true;
      },
    );
  });
});
