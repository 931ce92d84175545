// ShipSegmentRequest.leader_last_seq = 0 (a leader from before the field): the spec has the receiver use
// the batch boundaries it decodes (docs/spec/replication-grpc.md, ShipSegmentRequest; docs/protocol.md,
// "Segment frame"). Its lag gauge (Readiness rules, 1) and its pull target (the leader's frontier in its
// term) advance by the decoded end, as they would by a real leader_last_seq.
import assert from 'node:assert/strict';
import {
  Engine,
  emptyRestoredState,
  encodeSegmentFrame,
  type Effect,
  type Entry,
  type ShipSegmentRequest,
} from '../../engine/index.js';
import { founderConfig } from './founders.js';

const batch = (seq: number, term = 1): Entry => ({
  seq,
  term,
  kind: 1,
  data: new TextEncoder().encode(`v${seq}`),
});

/** ship: leader 1's ShipSegment at term 1 carrying `entries` after `prevSeq`, leader_last_seq as given. */
function ship(prevSeq: number, prevTerm: number, entries: Entry[], leaderLastSeq: number): ShipSegmentRequest {
  return {
    id: { regionId: 1, shardId: 1, seqno: prevSeq + 1 },
    payload: encodeSegmentFrame({ prevSeq, prevTerm, commitSeq: 0, entries }),
    eventCount: entries.length,
    leaderLastSeq,
    streamBaseline: 0,
    term: 1,
    leaderRegion: 1,
  };
}

function follower(): Engine {
  return new Engine(founderConfig('b', ['a', 'b', 'c']), emptyRestoredState());
}

describe('engine: a segment with leader_last_seq = 0 falls back to its decoded batch boundaries', () => {
  it('folds the decoded end into the lag gauge (0 before the fallback: nothing was folded)', () => {
    const e = follower();
    e.step({ type: 'start' });
    e.step({
      type: 'request',
      callId: 1,
      request: { method: 'ShipSegment', body: ship(0, 0, [batch(1), batch(2), batch(3)], 0) },
    });
    assert.equal(e.status().lastSeq, 3);
    assert.equal(e.status().lagGaugeByShard[1], 3);
    // An empty segment at prevSeq 3 (a commit notice from an old leader) keeps the gauge at its end.
    e.step({ type: 'request', callId: 2, request: { method: 'ShipSegment', body: ship(3, 1, [], 0) } });
    assert.equal(e.status().lagGaugeByShard[1], 3);
  });

  it('a real leader_last_seq is taken as sent, and the gauge never goes down', () => {
    const e = follower();
    e.step({ type: 'start' });
    e.step({ type: 'request', callId: 1, request: { method: 'ShipSegment', body: ship(0, 0, [batch(1)], 9) } });
    assert.equal(e.status().lagGaugeByShard[1], 9);
    e.step({ type: 'request', callId: 2, request: { method: 'ShipSegment', body: ship(1, 1, [batch(2)], 0) } });
    assert.equal(e.status().lagGaugeByShard[1], 9);
  });

  it('the decoded end is the pull target: a bounded stream that ends short of it is pulled on', () => {
    const e = follower();
    e.step({ type: 'start' });
    // A segment from seq 5..6 with leader_last_seq 0 does not fit (we hold nothing): refused, and we pull.
    const first = e.step({
      type: 'request',
      callId: 1,
      request: { method: 'ShipSegment', body: ship(4, 1, [batch(5), batch(6)], 0) },
    });
    const pull = first.find(
      (x): x is Extract<Effect, { type: 'send' }> => x.type === 'send' && x.request.method === 'StreamSegments',
    );
    assert.ok(pull, 'the refused segment starts a pull');
    assert.equal(e.status().lagGaugeByShard[1], 6);
    // The stream serves 1..2 and ends (bounded): 2 < 6, the decoded end, so the follower pulls again.
    e.step({
      type: 'streamChunk',
      requestId: pull.requestId,
      chunk: { ...ship(0, 0, [batch(1), batch(2)], 2), streamBaseline: 0 },
    });
    const after = e.step({ type: 'streamEnded', requestId: pull.requestId });
    const again = after.find((x) => x.type === 'send' && x.request.method === 'StreamSegments');
    assert.ok(again, 'pulls on toward the decoded end of the segment (seq 6)');
    assert.ok(again.type === 'send' && again.request.method === 'StreamSegments' && again.request.body.fromSeqno === 3);
  });
});
