// The real driver's half of Raft's snapshot rule (engine/types.ts, fetchSnapshot): a fetched snapshot
// whose seq the state machine has applied by the time of the swap is not swapped in; the engine hears
// snapshotFailed `stale: …`. Found by the simulator (seed 689: a follower caught up by ships while its
// fetch ran, installed the older snapshot and lost synced entries it had reported; match-honesty).
import assert from 'node:assert/strict';
import type { Input, SnapshotMeta } from '../../engine/types.js';
import type { PeerPool } from '../../transports/grpc/client.js';
import type { Driver, FetchSnapshotEffect } from '../../transports/node/driver.js';
import {
  SnapshotTransfer,
  type SnapshotState,
  type SnapshotTransferEvents,
} from '../../transports/node/snapshot-transfer.js';
import type { Artifact, SnapshotStore } from '../../transports/storage/snapshots.js';

const META: SnapshotMeta = { seq: 351, entryTerm: 9, roster: { membershipVersion: 1, nextMemberId: 2, members: [] } };
const HEADER = { needed: true, snapshotSeq: 351, term: 10, leaderRegion: 7, files: [] };

/** transferWith runs one fetch against fakes, with the state machine at `appliedSeq` when the swap would run. */
async function transferWith(appliedSeq: number): Promise<{ stepped: Input[]; swapped: number; events: string[] }> {
  const stepped: Input[] = [];
  const events: string[] = [];
  let swapped = 0;
  let queued: Promise<void> = Promise.resolve();
  const driver = {
    submit: (input: Input, before?: () => Input | void) => {
      queued = queued.then(() => {
        stepped.push(before?.() ?? input);
      });
    },
    liveStatus: () => ({ term: 10, id: 6 }),
    snapshotExpectation: () => ({ filtered: false }),
  } as unknown as Driver;
  const artifact = { name: 'a', dir: '/nowhere', meta: META, manifest: {}, header: HEADER } as unknown as Artifact;
  const pool = {
    openSnapshot: () =>
      Promise.resolve({
        header: HEADER,
        files: (async function* () {
          /* no files */
        })(),
      }),
  } as unknown as PeerPool;
  const store = { install: () => Promise.resolve(artifact) } as unknown as SnapshotStore;
  const state: SnapshotState = {
    appliedSeq,
    capture: () => {
      throw new Error('not staged here');
    },
    load: () =>
      Promise.resolve(() => {
        swapped++;
      }),
  };
  const report: SnapshotTransferEvents = {
    staged: () => {},
    stageFailed: () => {},
    installed: () => {
      events.push('installed');
    },
    installFailed: (reason) => {
      events.push(`failed ${reason}`);
    },
  };
  const transfer = new SnapshotTransfer(store, pool, state, driver, report);
  const effect: FetchSnapshotEffect = {
    type: 'fetchSnapshot',
    requestId: 5,
    to: 'n7:7000',
    toId: 7,
    request: { shardId: 7, fromSeqno: 322, term: 10 },
  };
  transfer.fetch(effect);
  // Wait (bounded) until the fetch has handed its input to the driver, then for the driver's queue.
  for (let turn = 0; turn < 10_000 && stepped.length === 0; turn++) {
    await queued;
    await new Promise((resolve) => setImmediate(resolve));
  }
  await transfer.stop();
  return { stepped, swapped, events };
}

describe("transports/node snapshot transfer: Raft's rule at the swap", () => {
  it('swaps in a snapshot past the applied seqno and tells the engine it is installed', async () => {
    const { stepped, swapped, events } = await transferWith(340);
    assert.equal(swapped, 1);
    assert.deepEqual(
      stepped.map((i) => i.type),
      ['snapshotInstalled'],
    );
    assert.deepEqual(events, ['installed']);
  });

  it('does not swap in a snapshot the state machine has passed; the engine hears snapshotFailed stale', async () => {
    const { stepped, swapped, events } = await transferWith(378);
    assert.equal(swapped, 0);
    assert.equal(stepped.length, 1);
    const input = stepped[0]!;
    assert.equal(input.type, 'snapshotFailed');
    assert.equal(input.type === 'snapshotFailed' ? input.code : '', 'stale');
    assert.match(
      input.type === 'snapshotFailed' ? input.reason : '',
      /^stale: the state machine is at 378, the snapshot at 351$/,
    );
    assert.equal(events.length, 1);
  });
});
