// Vote handling on a single engine, driven by hand: what a voter does with pre-votes and votes.
import assert from 'node:assert/strict';
import { Engine, encodeSegmentFrame, emptyRestoredState, type Effect, type RpcResponse } from '../../engine/index.js';
import { founderConfig } from './founders.js';

function voter(): Engine {
  return new Engine(founderConfig('b', ['a', 'b', 'c']), emptyRestoredState());
}

function answer(effects: Effect[]): RpcResponse {
  const reply = effects.find((e) => e.type === 'reply');
  assert.ok(reply && reply.type === 'reply');
  return reply.response;
}

describe('engine votes', () => {
  it('grants a pre-vote without changing its term or vote, and saves nothing', () => {
    const e = voter();
    e.step({ type: 'tick' }); // the first step persists the id taken from the bootstrap roster
    const effects = e.step({
      type: 'request',
      callId: 1,
      request: {
        method: 'RequestVote',
        body: { term: 1, candidateRegion: 1, lastLogTerm: 0, lastLogSeq: 0, prevote: true, transfer: false },
      },
    });
    const r = answer(effects);
    assert.equal(r.method, 'RequestVote');
    assert.equal(r.method === 'RequestVote' && r.body.granted, true);
    assert.equal(e.status().term, 0);
    assert.equal(
      effects.some((x) => x.type === 'saveHardState'),
      false,
    );
    // A real vote for another candidate is still possible: the pre-vote bound nothing.
    const vote = answer(
      e.step({
        type: 'request',
        callId: 2,
        request: {
          method: 'RequestVote',
          body: { term: 1, candidateRegion: 3, lastLogTerm: 0, lastLogSeq: 0, prevote: false, transfer: false },
        },
      }),
    );
    assert.equal(vote.method === 'RequestVote' && vote.body.granted, true);
    assert.equal(e.status().term, 1);
  });

  it('saves its vote before answering, and votes once per term', () => {
    const e = voter();
    const effects = e.step({
      type: 'request',
      callId: 1,
      request: {
        method: 'RequestVote',
        body: { term: 3, candidateRegion: 1, lastLogTerm: 0, lastLogSeq: 0, prevote: false, transfer: false },
      },
    });
    assert.equal(effects[0]!.type, 'saveHardState');
    assert.equal(effects[0]!.type === 'saveHardState' && effects[0]!.hardState.votedFor, 1);
    const second = answer(
      e.step({
        type: 'request',
        callId: 2,
        request: {
          method: 'RequestVote',
          body: { term: 3, candidateRegion: 3, lastLogTerm: 5, lastLogSeq: 50, prevote: false, transfer: false },
        },
      }),
    );
    assert.equal(second.method === 'RequestVote' && second.body.granted, false);
  });

  it('refuses a candidate whose log is behind, comparing (term, seq) lexicographically', () => {
    const e = voter();
    // Leader 1 at term 2 ships the voter one entry: its log position becomes (2, 1).
    const payload = encodeSegmentFrame({
      prevSeq: 0,
      prevTerm: 0,
      commitSeq: 0,
      entries: [{ seq: 1, term: 2, kind: 2, data: new Uint8Array(0) }],
    });
    e.step({
      type: 'request',
      callId: 1,
      request: {
        method: 'ShipSegment',
        body: {
          id: { regionId: 1, shardId: 1, seqno: 1 },
          payload,
          eventCount: 1,
          leaderLastSeq: 1,
          streamBaseline: 0,
          term: 2,
          leaderRegion: 1,
        },
      },
    });
    assert.equal(e.status().lastTerm, 2);
    const ask = (lastLogTerm: number, lastLogSeq: number, callId: number) => {
      const r = answer(
        e.step({
          type: 'request',
          callId,
          request: {
            method: 'RequestVote',
            body: { term: 9, candidateRegion: 3, lastLogTerm, lastLogSeq, prevote: false, transfer: true },
          },
        }),
      );
      return r.method === 'RequestVote' && r.body.granted;
    };
    assert.equal(ask(1, 50, 2), false); // a longer log of an older term loses
    assert.equal(ask(2, 0, 3), false); // same term, shorter
    assert.equal(ask(2, 1, 4), true); // equal is enough
  });
});
