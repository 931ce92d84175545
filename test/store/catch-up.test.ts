// ReplicatedStore on a node that is catching up (its apply behind the leader's commit), over a fake host whose
// applied seqno the test moves, with the real Waiters: no caller is held longer than catchUpWaitMs for the local
// apply. A read the node has not applied is refused with StoreCatchingUpError (Retry-After for the API); a write
// the leader committed is answered with the leader's outcome, and a read here after it waits for that write
// (refused until it is applied, never answered without it).
import assert from 'node:assert/strict';
import { StoreCatchingUpError, StoreUnavailableError } from '../../store/errors.js';
import type { StoreHost } from '../../store/host.js';
import { ReplicatedStore } from '../../store/replicated-store.js';
import type { StoreStateMachine } from '../../store/state-machine.js';
import { Waiters } from '../../store/waiters.js';
import type { CommandResult } from '../../store/command.js';

/** CATCH_UP_WAIT_MS is the tests' catchUpWaitMs: short, as the tests wait it out. */
const CATCH_UP_WAIT_MS = 60;

interface FakeNode {
  host: StoreHost;
  /** apply moves this node's applied seqno (and releases its waiters). */
  apply(seq: number): void;
  /** leaderCommit is the read index the leader answers, and the seq its next commit gets. */
  leaderCommit: number;
}

function fakeNode(appliedSeq: number): FakeNode {
  const waiters = new Waiters(1000);
  const values = new Map([['k/a', { value: { n: 1 }, version: 1 }]]);
  const state = { appliedSeq };
  const stateMachine = {
    get appliedSeq() {
      return state.appliedSeq;
    },
    get: (key: string) => values.get(key) ?? null,
    list: () => ({ entries: [...values].map(([key, entry]) => ({ key, ...entry })), nextAfter: null }),
  } as unknown as StoreStateMachine;
  const node: FakeNode = {
    leaderCommit: 100,
    apply(seq) {
      state.appliedSeq = seq;
      waiters.check();
    },
    host: {
      stateMachine,
      commit: () => {
        const seq = ++node.leaderCommit;
        const result: CommandResult = { outcome: 'applied', version: seq, existed: false };
        return Promise.resolve({ seq, result });
      },
      readIndex: () => Promise.resolve(node.leaderCommit),
      waitApplied: (seq, deadlineAt) =>
        waiters.untilReached(() => state.appliedSeq, seq, deadlineAt, `this node to apply seq ${seq}`),
    },
  };
  return node;
}

describe('store: a node catching up holds no caller longer than catchUpWaitMs', () => {
  it('refuses a read it has not applied with StoreCatchingUpError, then serves it once applied', async () => {
    const node = fakeNode(10);
    const store = new ReplicatedStore(node.host, { catchUpWaitMs: CATCH_UP_WAIT_MS });
    const startedAt = Date.now();
    const refusal = await store.get('k/a').then(
      () => assert.fail('a read ahead of the local apply was answered'),
      (err: unknown) => err,
    );
    assert.ok(refusal instanceof StoreCatchingUpError, `refused with ${String(refusal)}`);
    assert.ok(refusal instanceof StoreUnavailableError, 'still STORE_UNAVAILABLE to callers that know only that');
    assert.equal(refusal.readIndex, 100);
    assert.equal(refusal.appliedSeq, 10);
    assert.equal(refusal.retryAfterSeconds, 1);
    // Bounded by the limit, not by readTimeoutMs (5 s): a generous margin for a loaded machine.
    assert.ok(Date.now() - startedAt < 5_000 - 1_000, 'the refusal came before the read timeout');
    node.apply(100);
    assert.deepEqual((await store.get('k/a'))?.value, { n: 1 });
  });

  it('serves a read that the node applies within the wait', async () => {
    const node = fakeNode(90);
    const store = new ReplicatedStore(node.host, { catchUpWaitMs: 5_000 });
    const read = store.get('k/a');
    setImmediate(() => node.apply(100));
    assert.deepEqual((await read)?.value, { n: 1 });
  });

  it("answers a committed write with the leader's outcome, and reads here wait for that write", async () => {
    const node = fakeNode(10);
    const store = new ReplicatedStore(node.host, { catchUpWaitMs: CATCH_UP_WAIT_MS });
    const { version } = await store.put('k/b', { n: 2 });
    assert.equal(version, 101, "the leader's outcome, without the local apply");
    // The leader's commit index moves on; this node has applied up to the read index of a fresh read, but
    // not the write it answered: the read must not be served without it.
    node.leaderCommit = 5;
    node.apply(50);
    const refusal = await store
      .readSession()
      .get('k/b')
      .catch((err: unknown) => err);
    assert.ok(refusal instanceof StoreCatchingUpError, `refused with ${String(refusal)}`);
    assert.equal(refusal.readIndex, 101, 'the read waited for the write answered before it');
    node.apply(101);
    assert.equal(await store.get('k/b'), null, 'served once applied (the fake state holds no k/b)');
  });

  it('a session that passed its barrier still waits for a write answered unapplied after it', async () => {
    const node = fakeNode(100);
    const store = new ReplicatedStore(node.host, { catchUpWaitMs: CATCH_UP_WAIT_MS });
    const session = store.readSession();
    assert.deepEqual((await session.get('k/a'))?.value, { n: 1 }, 'the barrier passed at the read index, 100');
    // A write on this node commits at 101 and is answered without its local apply (the node is behind).
    await store.put('k/b', { n: 2 });
    const refusal = await session.list('k/').catch((err: unknown) => err);
    assert.ok(refusal instanceof StoreCatchingUpError, `the session's next read was refused with ${String(refusal)}`);
    assert.equal(refusal.readIndex, 101, 'it waited for the write answered after its barrier');
    node.apply(101);
    assert.equal((await session.list('k/')).entries.length, 1, 'served once applied');
  });

  it('reads a key at the leader instead, and the next reads go there at once until it has caught up', async () => {
    const node = fakeNode(10);
    const atLeader: string[] = [];
    let waits = 0;
    const host: StoreHost = {
      ...node.host,
      waitApplied: (seq, deadlineAt) => {
        waits++;
        return node.host.waitApplied(seq, deadlineAt);
      },
      getAtLeader: (key) => {
        atLeader.push(key);
        return Promise.resolve({ value: { at: 'leader' }, version: 99 });
      },
    };
    const store = new ReplicatedStore(host, { catchUpWaitMs: CATCH_UP_WAIT_MS });
    assert.deepEqual(await store.get('k/a'), { value: { at: 'leader' }, version: 99 });
    assert.equal(waits, 1, 'it waited catchUpWaitMs once');
    const session = store.readSession();
    assert.deepEqual((await session.get('k/b'))?.value, { at: 'leader' });
    assert.deepEqual((await store.get('k/c'))?.value, { at: 'leader' });
    assert.equal(waits, 1, 'then went to the leader at once');
    assert.deepEqual(atLeader, ['k/a', 'k/b', 'k/c']);
    // A list cannot go to the leader: it is refused as catching up.
    await assert.rejects(store.list('k/'), StoreCatchingUpError);
    node.apply(100);
    assert.deepEqual((await store.get('k/a'))?.value, { n: 1 }, 'caught up: read here again');
    assert.equal(atLeader.length, 3);
  });

  it('passes on a failure other than the wait running out', async () => {
    const node = fakeNode(10);
    const failing: StoreHost = { ...node.host, waitApplied: () => Promise.reject(new Error('node stopped')) };
    const store = new ReplicatedStore(failing, { catchUpWaitMs: CATCH_UP_WAIT_MS });
    await assert.rejects(store.get('k/a'), /node stopped/);
  });
});
