// StoreRouter's half of the asker's ack (engine/read-index.ts, docs/protocol.md "The asker's ack"): a follower's
// read-index request carries its engine's term as it goes; the leader turns the name the caller's certificate gave
// into its roster's member id and hands it to EngineReads with the request's term (an unknown name: no asker).
import assert from 'node:assert/strict';
import { MemberRole, type ReadIndexAsker } from '../../engine/types.js';
import type { EngineReads } from '../../store/engine-reads.js';
import type { LeaderLink, StoreEngine } from '../../store/host.js';
import { DEFAULT_STORE_LIMITS } from '../../store/limits.js';
import type { Proposals } from '../../store/proposals.js';
import { StoreStateMachine } from '../../store/state-machine.js';
import { StoreRouter } from '../../store/store-router.js';
import type { Waiters } from '../../store/waiters.js';

const member = (id: number, name: string, role: MemberRole = MemberRole.Voter) => ({
  id,
  name,
  grpcAddr: `${name}:1`,
  httpAddr: `http://${name}:2`,
  role,
});

function routerAs(role: 'leader' | 'follower', term: () => number) {
  const engine = {
    status: () => ({
      id: 1,
      role,
      term: term(),
      leaderId: role === 'leader' ? 1 : 2,
      roster: {
        membershipVersion: 1,
        nextMemberId: 5,
        members: [member(1, 'a'), member(2, 'b'), member(3, 'c'), member(4, 'd', MemberRole.Learner)],
      },
      commitSeq: 5,
      removed: false,
    }),
    failure: null,
    overloaded: () => false,
    submit: () => undefined,
  } as unknown as StoreEngine;
  const sentTerms: number[] = [];
  const link: LeaderLink = {
    propose: () => Promise.reject(new Error('not in this test')),
    readIndex: (_at, _deadlineAt, sent) => {
      sentTerms.push(sent);
      return Promise.resolve({ commitSeq: 9, term: sent });
    },
  };
  const askers: Array<ReadIndexAsker | undefined> = [];
  const reads = {
    take: (_deadlineAt: number, asker?: ReadIndexAsker) => {
      askers.push(asker);
      return Promise.resolve({ commitSeq: 5, term: term() });
    },
  } as unknown as EngineReads;
  const router = new StoreRouter(
    engine,
    new StoreStateMachine(),
    {} as Proposals,
    reads,
    link,
    {} as Waiters,
    DEFAULT_STORE_LIMITS,
  );
  return { router, sentTerms, askers };
}

describe("store: the router's half of the asker's ack", () => {
  it("a follower's request carries its engine's term as it goes", async () => {
    let term = 6;
    const { router, sentTerms } = routerAs('follower', () => term);
    await router.readIndex(Date.now() + 5_000);
    term = 7;
    await router.readIndex(Date.now() + 5_000);
    assert.deepEqual(sentTerms, [6, 7]);
  });

  it("the leader names the asker by the roster's id of its certificate's name, with the request's term", async () => {
    const { router, askers } = routerAs('leader', () => 6);
    await router.serveReadIndex(Date.now() + 5_000, { name: 'b', term: 6 });
    await router.serveReadIndex(Date.now() + 5_000, { name: 'd', term: 6 }); // a learner: the engine does not count it
    await router.serveReadIndex(Date.now() + 5_000, { name: 'stranger', term: 6 });
    await router.serveReadIndex(Date.now() + 5_000);
    assert.deepEqual(askers, [{ id: 2, term: 6 }, { id: 4, term: 6 }, undefined, undefined]);
  });
});
