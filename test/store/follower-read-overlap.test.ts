// ReplicatedStore on a follower (a host that does not read locally): each loop turn's reads ask the leader for a
// read index at once, beside the calls still in flight, up to storeLimits.readIndexCallsInFlightMax (default 1:
// no overlap); beyond it a turn's reads wait for a call to settle. Each read still gets the index of a call
// started after it began.
import assert from 'node:assert/strict';
import type { StoreHost } from '../../store/host.js';
import { ReplicatedStore } from '../../store/replicated-store.js';
import type { StoreStateMachine } from '../../store/state-machine.js';

const flush = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** followerHost: read-index calls stay open until the test answers them; this node has applied everything. */
function followerHost(): { host: StoreHost; calls: Array<(seq: number) => void> } {
  const calls: Array<(seq: number) => void> = [];
  const stateMachine = {
    appliedSeq: 1_000,
    get: () => null,
    list: () => ({ entries: [], nextAfter: null }),
  } as unknown as StoreStateMachine;
  const host: StoreHost = {
    stateMachine,
    commit: () => Promise.reject(new Error('no writes here')),
    readIndex: () => new Promise<number>((resolve) => calls.push(resolve)),
    readsLocally: () => false,
    waitApplied: () => Promise.resolve(),
  };
  return { host, calls };
}

describe('store: a follower overlaps its read-index calls, up to readIndexCallsInFlightMax', () => {
  it("asks for each turn's reads while earlier calls are in flight, and no more than the bound", async () => {
    const { host, calls } = followerHost();
    const store = new ReplicatedStore(host, { readIndexCallsInFlightMax: 2 });
    const turn1 = store.readSession().barrier!();
    await flush();
    const turn2 = store.readSession().barrier!();
    await flush();
    // With one call in flight at most (before this change), the second turn waited for the first answer.
    assert.equal(calls.length, 2, "the second turn's call starts while the first is in flight");
    const turn3 = [store.readSession().barrier!(), store.readSession().barrier!()];
    await flush();
    assert.equal(calls.length, 2, 'at the bound, the third turn waits');
    calls[0]!(5);
    await turn1;
    await flush();
    assert.equal(calls.length, 3, "the first answer lets the third turn's call start");
    calls[1]!(6);
    calls[2]!(7);
    await Promise.all([turn2, ...turn3]);
    const { calls: started, readers } = store.readIndexStats;
    assert.deepEqual({ started, readers }, { started: 3, readers: 4 });
  });

  it('keeps one call in flight with readIndexCallsInFlightMax 1', async () => {
    const { host, calls } = followerHost();
    const store = new ReplicatedStore(host, { readIndexCallsInFlightMax: 1 });
    const first = store.readSession().barrier!();
    await flush();
    const second = store.readSession().barrier!();
    await flush();
    assert.equal(calls.length, 1);
    calls[0]!(5);
    await first;
    await flush();
    assert.equal(calls.length, 2);
    calls[1]!(6);
    await second;
  });

  it('defaults to one call in flight (each turn waits for the call before), and overlaps when raised to 4', async () => {
    const { host, calls } = followerHost();
    assert.equal(new ReplicatedStore(host).limits.readIndexCallsInFlightMax, 1);
    const store = new ReplicatedStore(host, { readIndexCallsInFlightMax: 4 });
    const barriers: Array<Promise<void>> = [];
    for (let turn = 0; turn < 6; turn++) {
      barriers.push(store.readSession().barrier!());
      await flush();
    }
    assert.equal(calls.length, 4, 'four turns asked at once; the fifth and sixth gather behind them');
    for (let answered = 0; answered < calls.length; answered++) {
      calls[answered]!(answered + 1);
      await flush();
    }
    await Promise.all(barriers);
    assert.equal(calls.length, 5, 'the two waiting turns shared one call');
  });
});
