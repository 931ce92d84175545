// ReplicatedStore.readSession over a fake host (no cluster): the session's reads share one read index, a failed
// one is not kept (the next read asks afresh), and every read waits until this node applied the index.
import assert from 'node:assert/strict';
import { StoreUnavailableError } from '../../store/errors.js';
import type { StoreHost } from '../../store/host.js';
import { ReplicatedStore } from '../../store/replicated-store.js';
import type { StoreStateMachine } from '../../store/state-machine.js';

function fakeHost(answers: Array<number | Error>): {
  host: StoreHost;
  readIndexCalls: () => number;
  waitedFor: number[];
  gatheredFlags: Array<boolean | undefined>;
} {
  let calls = 0;
  const gatheredFlags: Array<boolean | undefined> = [];
  const waitedFor: number[] = [];
  const values = new Map([['k/a', { value: { n: 1 }, version: 1 }]]);
  const stateMachine = {
    get: (key: string) => values.get(key) ?? null,
    list: () => ({ entries: [...values].map(([key, entry]) => ({ key, ...entry })), nextAfter: null }),
  } as unknown as StoreStateMachine;
  const host: StoreHost = {
    stateMachine,
    commit: () => Promise.reject(new Error('no writes here')),
    readIndex: (_deadlineAt, gathered) => {
      gatheredFlags.push(gathered);
      const answer = answers[calls++] ?? new Error('no more answers');
      return answer instanceof Error ? Promise.reject(answer) : Promise.resolve(answer);
    },
    waitApplied: (seq) => {
      waitedFor.push(seq);
      return Promise.resolve();
    },
  };
  return { host, readIndexCalls: () => calls, waitedFor, gatheredFlags };
}

describe('store: read sessions', () => {
  it('share one read index among the reads of a session, even reads issued together', async () => {
    const { host, readIndexCalls, waitedFor } = fakeHost([7, 9]);
    const store = new ReplicatedStore(host);
    const session = store.readSession();
    const [one, two, page] = await Promise.all([session.get('k/a'), session.get('k/b'), session.list('k/')]);
    assert.deepEqual(one?.value, { n: 1 });
    assert.equal(two, null);
    assert.deepEqual(
      page.entries.map((entry) => entry.key),
      ['k/a'],
    );
    await session.barrier!();
    assert.equal(readIndexCalls(), 1);
    assert.deepEqual(waitedFor, [7, 7, 7, 7], 'every read waited for the apply of the one index');
    await store.readSession().get('k/a');
    assert.equal(readIndexCalls(), 2, 'another session asks again');
  });

  it("tells the host its read-index calls carry a loop turn's readers gathered already (a leader asks its engine at once)", async () => {
    const { host, gatheredFlags } = fakeHost([3]);
    const store = new ReplicatedStore(host);
    await Promise.all([store.readSession().get('k/a'), store.readSession().get('k/a')]);
    assert.deepEqual(gatheredFlags, [true], 'one call for both sessions, flagged as gathered');
  });

  it('drops a failed read index, so the next read of the session asks afresh', async () => {
    const { host, readIndexCalls, waitedFor } = fakeHost([new StoreUnavailableError('no leader'), 4]);
    const session = new ReplicatedStore(host).readSession();
    await assert.rejects(session.get('k/a'), StoreUnavailableError);
    assert.deepEqual((await session.get('k/a'))?.value, { n: 1 });
    assert.equal(readIndexCalls(), 2);
    assert.deepEqual(waitedFor, [4]);
  });

  it('refuses a bad key before taking any barrier', async () => {
    const { host, readIndexCalls } = fakeHost([1]);
    const session = new ReplicatedStore(host).readSession();
    await assert.rejects(session.get(''), RangeError);
    assert.equal(readIndexCalls(), 0);
  });

  it('lists at once (listNow) only behind a barrier that still holds, else answers null for list to wait', async () => {
    const values = new Map([['k/a', { value: { n: 1 }, version: 1 }]]);
    const stateMachine = {
      appliedSeq: 5,
      get: (key: string) => values.get(key) ?? null,
      list: () => ({ entries: [...values].map(([key, entry]) => ({ key, ...entry })), nextAfter: null }),
    };
    let index = 5;
    const host: StoreHost = {
      stateMachine: stateMachine as unknown as StoreStateMachine,
      commit: () => Promise.reject(new Error('no writes here')),
      readIndex: () => Promise.resolve(index),
      waitApplied: () => Promise.resolve(),
    };
    const session = new ReplicatedStore(host).readSession();
    assert.equal(session.listNow!('k/'), null, 'no barrier yet: list must take one');
    await session.barrier!();
    assert.deepEqual(
      session.listNow!('k/')?.entries.map((entry) => entry.key),
      ['k/a'],
    );
    // The local state cannot go back, but a fresh session must not inherit another's barrier.
    index = 9;
    const later = new ReplicatedStore(host).readSession();
    assert.equal(later.listNow!('k/'), null);
  });
});
