// StoreRouter on a member that knows no leader yet (a restarted member hears of it only with the leader's next
// heartbeat, which may wait on the leader's reconnect to it): it asks a peer, follows the leader the peer's
// refusal names, and so forwards writes and takes read indexes at once instead of waiting for a heartbeat.
import assert from 'node:assert/strict';
import { encodeCommand } from '../../store/command.js';
import { StoreRefusal, StoreUnavailableError } from '../../store/errors.js';
import { DEFAULT_STORE_LIMITS } from '../../store/limits.js';
import { StoreStateMachine } from '../../store/state-machine.js';
import { StoreRouter } from '../../store/store-router.js';
import type { EngineReads } from '../../store/engine-reads.js';
import type { LeaderLink, StoreEngine } from '../../store/host.js';
import type { Proposals } from '../../store/proposals.js';
import type { Waiters } from '../../store/waiters.js';
import { MemberRole } from '../../engine/types.js';

const member = (id: number, name: string) => ({
  id,
  name,
  grpcAddr: `${name}:1`,
  httpAddr: `http://${name}:2`,
  role: MemberRole.Voter,
});

/** followerRouter: member a, following no known leader; peers b (a follower that knows c leads) and c (the leader). */
function followerRouter(peersKnowLeader: boolean): { router: StoreRouter; calls: string[] } {
  const calls: string[] = [];
  const engine = {
    status: () => ({
      id: 1,
      role: 'follower',
      term: 3,
      leaderId: 0,
      roster: { membershipVersion: 1, nextMemberId: 4, members: [member(1, 'a'), member(2, 'b'), member(3, 'c')] },
      commitSeq: 0,
      removed: false,
    }),
    failure: null,
    overloaded: () => false,
    submit: () => undefined,
  } as unknown as StoreEngine;
  const answer = <T>(at: string, what: string, value: T): Promise<T> => {
    calls.push(`${what}@${at}`);
    if (at === 'c:1' && peersKnowLeader) return Promise.resolve(value);
    return Promise.reject(
      new StoreRefusal('not-leader', 'not the leader', peersKnowLeader && at === 'b:1' ? 'c:1' : ''),
    );
  };
  const link: LeaderLink = {
    propose: (at) =>
      answer(at, 'propose', {
        seq: 7,
        result: { outcome: 1, version: 7, actualVersion: 0, existed: false, reason: '' },
      } as never),
    readIndex: (at) => answer(at, 'readIndex', { commitSeq: 9, term: 3 }),
  };
  const limits = { ...DEFAULT_STORE_LIMITS, retryBackoffMs: 10 };
  const router = new StoreRouter(
    engine,
    new StoreStateMachine(),
    {} as Proposals,
    {} as EngineReads,
    link,
    {} as Waiters,
    limits,
  );
  return { router, calls };
}

describe('store: a member that knows no leader asks a peer', function () {
  it('takes a read index at the leader a peer names, without waiting for a heartbeat', async function () {
    const { router, calls } = followerRouter(true);
    assert.equal(await router.readIndex(Date.now() + 60_000), 9);
    assert.deepEqual(calls, ['readIndex@b:1', 'readIndex@c:1'], 'asked b, followed its hint to c');
  });

  it('forwards a write to the leader a peer names', async function () {
    const { router, calls } = followerRouter(true);
    const bytes = encodeCommand({ op: 'put', key: 'k', value: { n: 1 }, requestId: 'r1' });
    const { seq } = await router.commit({ requestId: 'r1', bytes }, Date.now() + 60_000);
    assert.equal(seq, 7);
    assert.equal(calls.at(-1), 'propose@c:1');
  });

  it('asks the peers in turn while none knows a leader (an election), until the deadline', async function () {
    const { router, calls } = followerRouter(false);
    await assert.rejects(router.readIndex(Date.now() + 200), StoreUnavailableError);
    assert.ok(calls.includes('readIndex@b:1') && calls.includes('readIndex@c:1'), calls.join(' '));
    assert.ok(!calls.includes('readIndex@a:1'), 'never itself');
  });
});
