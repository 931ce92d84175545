// Live streams (docs/protocol.md, "Live streams"): a leader keeps a caught-up follower's StreamSegments call
// open and pushes that follower's segments onto it instead of a ShipSegment call each; the follower's
// ReportApplied is the only acknowledgement. Only for a caller the transport authenticated as a member
// (callerId) that reported capability bit 1; anything else ends the stream after its burst, as before.
import assert from 'node:assert/strict';
import {
  CAPABILITY_KIND4,
  CAPABILITY_LIVE_STREAM,
  DEFAULT_LIMITS,
  type Effect,
  type Engine,
} from '../../engine/index.js';
import { answeredLeader, reportApplied, sends } from './answered-leader.js';

const ships = (effects: Effect[]) => sends(effects).filter((e) => e.request.method === 'ShipSegment');
const chunksOn = (effects: Effect[], callId: number) =>
  effects.flatMap((e) => (e.type === 'streamChunk' && e.callId === callId ? [e.chunk] : []));
const endsOf = (effects: Effect[], callId: number) =>
  effects.filter((e) => e.type === 'streamEnd' && e.callId === callId).length;
const encoder = new TextEncoder();

/** n1, leader of term 1 for n2 and n3; every ship (and heartbeat, unless told) answered, n2 and n3 report `capabilities`. */
function leader(capabilities: number, answerHeartbeats = true): Engine {
  return answeredLeader({ capabilities, answerHeartbeats }).engine;
}

function openStream(engine: Engine, callId: number, callerId: number): Effect[] {
  const { term, lastSeq } = engine.status();
  return engine.step({
    type: 'request',
    callId,
    callerId,
    request: { method: 'StreamSegments', body: { shardId: 1, fromSeqno: lastSeq + 1, term } },
  });
}

/** report: member `reporterShard` (a live-stream follower) reports frontier `appliedSeqno`. */
function report(engine: Engine, callId: number, reporterShard: number, appliedSeqno: number): Effect[] {
  return reportApplied(engine, callId, reporterShard, appliedSeqno, CAPABILITY_KIND4 | CAPABILITY_LIVE_STREAM);
}

describe('engine: live streams', () => {
  const both = CAPABILITY_KIND4 | CAPABILITY_LIVE_STREAM;

  it("keeps a caught-up, capable member's stream open and pushes its segments onto it, not as ShipSegment", () => {
    const engine = leader(both);
    const opened = openStream(engine, 100, 2);
    assert.equal(endsOf(opened, 100), 0, 'the stream stays open past its burst');
    const proposed = engine.step({ type: 'propose', proposalId: 1, data: encoder.encode('{"k":1}') });
    const seq = engine.status().lastSeq;
    const pushed = chunksOn(proposed, 100);
    assert.equal(pushed.length, 1);
    assert.equal(pushed[0]!.leaderLastSeq, seq);
    assert.equal(pushed[0]!.eventCount, 1);
    assert.deepEqual(
      ships(proposed).map((s) => s.toId),
      [3],
      'n2 gets the entry on its stream; n3, with no stream, by ShipSegment',
    );
    // n2's report is the acknowledgement: with n1's own sync it commits the entry.
    engine.step({ type: 'entriesPersisted', lastSeq: seq, lastTerm: engine.status().term });
    const reported = report(engine, 101, 2, seq);
    assert.ok(
      reported.some((e) => e.type === 'proposalResult' && e.ok),
      'committed on n2 report',
    );
    assert.equal(engine.status().commitSeq, seq);
  });

  it('ends the stream after its burst for a caller not known as a member, or one without capability bit 1', () => {
    const anonymous = leader(both);
    assert.equal(endsOf(openStream(anonymous, 100, 0), 100), 1, 'no callerId: the burst, then the end');
    const older = leader(CAPABILITY_KIND4);
    assert.equal(endsOf(openStream(older, 100, 2), 100), 1, 'no bit 1 reported: the burst, then the end');
    const proposed = older.step({ type: 'propose', proposalId: 1, data: encoder.encode('{"k":1}') });
    assert.deepEqual(
      ships(proposed)
        .map((s) => s.toId)
        .sort(),
      [2, 3],
    );
  });

  it('keeps the stream of a member that has reported no capabilities yet (a leader new in office)', () => {
    const engine = leader(both, false);
    assert.equal(endsOf(openStream(engine, 100, 2), 100), 0, 'n2 has not answered a heartbeat: kept');
    assert.equal(endsOf(openStream(engine, 101, 4), 101), 1, 'a caller with no Progress (not a member) is not');
  });

  it('falls back to ShipSegment when what it pushed goes unreported for shipRetryTicks, and ends the stream', () => {
    const engine = leader(both);
    openStream(engine, 100, 2);
    engine.step({ type: 'propose', proposalId: 1, data: encoder.encode('{"k":1}') });
    const later: Effect[] = [];
    for (let tick = 0; tick <= DEFAULT_LIMITS.shipRetryTicks + 1; tick++) later.push(...engine.step({ type: 'tick' }));
    assert.equal(endsOf(later, 100), 1, 'the stalled stream is ended');
    assert.ok(
      ships(later).some((s) => s.toId === 2 && s.request.method === 'ShipSegment' && s.request.body.eventCount === 1),
      'the unreported entry is shipped again by ShipSegment',
    );
  });

  it('ends a live stream after liveStreamTicksMax, and every one when it steps down', () => {
    const engine = leader(both);
    openStream(engine, 100, 2);
    let ended = 0;
    const seq = engine.status().lastSeq;
    for (let tick = 0; tick < DEFAULT_LIMITS.liveStreamTicksMax && ended === 0; tick++) {
      // n2 and n3 report each tick, so check-quorum keeps n1 leading.
      report(engine, 1000 + 2 * tick, 2, seq);
      report(engine, 1001 + 2 * tick, 3, seq);
      ended = endsOf(engine.step({ type: 'tick' }), 100);
    }
    assert.equal(ended, 1, 'ended within liveStreamTicksMax');
    openStream(engine, 200, 2);
    openStream(engine, 300, 3);
    const term = engine.status().term;
    const deposed = engine.step({
      type: 'request',
      callId: 400,
      request: {
        method: 'RequestVote',
        body: { term: term + 1, candidateRegion: 2, lastLogTerm: term, lastLogSeq: 99, prevote: false, transfer: true },
      },
    });
    assert.equal(engine.status().role, 'follower', JSON.stringify(deposed.map((e) => e.type)));
    assert.equal(endsOf(deposed, 200) + endsOf(deposed, 300), 2, 'both live streams ended on stepping down');
  });

  it('a second stream from the same member replaces the first, which is ended', () => {
    const engine = leader(both);
    openStream(engine, 100, 2);
    const second = openStream(engine, 101, 2);
    assert.equal(endsOf(second, 100), 1);
    assert.equal(endsOf(second, 101), 0);
    const proposed = engine.step({ type: 'propose', proposalId: 1, data: encoder.encode('{"k":1}') });
    assert.equal(chunksOn(proposed, 100).length, 0);
    assert.equal(chunksOn(proposed, 101).length, 1);
  });
});
