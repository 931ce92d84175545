// A leader commits what a quorum of followers synced even before its own WAL sync completes (its
// own durable frontier is one vote of three). The engine's frontier asserts (engine/assert.ts) must
// allow that: a real node crashed on it when its followers' fsyncs beat its own. So must the leader's
// matched frontier after a demotion in its own term: it once stayed behind a membership record the
// leader had appended (only proposals and the term barrier moved it), and check-quorum then broke
// commit <= matched as the leader turned follower.
import assert from 'node:assert/strict';
import { Engine, emptyRestoredState, DEFAULT_LIMITS, type Effect } from '../../engine/index.js';
import { founderConfig } from './founders.js';

const config = founderConfig('n1', ['n1', 'n2', 'n3']);

type Send = Extract<Effect, { type: 'send' }>;
const sends = (effects: Effect[]): Send[] => effects.filter((e): e is Send => e.type === 'send');

/** n1 elected leader of term 1 by n2's and n3's votes; returns the engine and the effects of its election. */
/**
 * Answers what `engine` sends, as two followers would that synced everything shipped to them: votes
 * granted, ships accepted with their last entry as the synced frontier. Heartbeats go unanswered.
 */
function pump(engine: Engine, effects: Effect[]): void {
  const pending = sends(effects);
  while (pending.length > 0) {
    const send = pending.shift()!;
    const term = engine.status().term;
    if (send.request.method === 'RequestVote') {
      const body = { term, granted: true, removed: false };
      pending.push(
        ...sends(
          engine.step({ type: 'response', requestId: send.requestId, response: { method: 'RequestVote', body } }),
        ),
      );
    } else if (send.request.method === 'ShipSegment') {
      const appliedSeqno = (send.request.body.id?.seqno ?? 0) + send.request.body.eventCount - 1;
      const body = { accepted: true, appliedSeqno, term };
      pending.push(
        ...sends(
          engine.step({ type: 'response', requestId: send.requestId, response: { method: 'ShipSegment', body } }),
        ),
      );
    }
  }
}

/** n1 elected leader of term 1 by n2's and n3's votes, its own WAL never synced (no entriesPersisted). */
function electedLeader(): Engine {
  const engine = new Engine(config, emptyRestoredState());
  engine.step({ type: 'start' });
  for (let tick = 0; tick < 10 * DEFAULT_LIMITS.electionTimeoutTicks && engine.status().role !== 'leader'; tick++) {
    pump(engine, engine.step({ type: 'tick' }));
  }
  assert.equal(engine.status().role, 'leader');
  return engine;
}

describe('engine: a leader commits on its followers before its own sync', () => {
  it('advances commit past its own durable frontier without breaking a frontier assert', () => {
    const engine = electedLeader();
    pump(engine, engine.step({ type: 'propose', proposalId: 1, data: new TextEncoder().encode('{"k":1}') }));
    for (let tick = 0; tick < 4 * DEFAULT_LIMITS.heartbeatIntervalTicks; tick++)
      pump(engine, engine.step({ type: 'tick' }));
    const status = engine.status();
    assert.ok(status.lastSeq >= 2, 'the term barrier and the proposal are in the log');
    assert.equal(status.commitSeq, status.lastSeq, 'two followers synced: a quorum of three');
    assert.equal(status.durableSeq, 0, 'the leader has synced nothing itself');
  });

  function leaderWithCommittedJoin(): Engine {
    const engine = electedLeader();
    const { term, lastSeq } = engine.status();
    // Both followers report capability bit 0, so membership changes are allowed.
    for (const reporterShard of [2, 3]) {
      const body = { reporterShard, sourceShard: 1, appliedSeqno: lastSeq, reporterTerm: term, capabilities: 1 };
      pump(engine, engine.step({ type: 'request', callId: reporterShard, request: { method: 'ReportApplied', body } }));
    }
    const join = { name: 'n4', grpcAddr: 'n4:7000', httpAddr: 'http://n4:8080', capabilities: 1 };
    pump(engine, engine.step({ type: 'request', callId: 9, request: { method: 'JoinCluster', body: join } }));
    for (let tick = 0; tick < 4 * DEFAULT_LIMITS.heartbeatIntervalTicks; tick++)
      pump(engine, engine.step({ type: 'tick' }));
    const status = engine.status();
    assert.ok(
      status.roster.members.some((m) => m.name === 'n4'),
      'the join is in the roster',
    );
    assert.equal(status.commitSeq, status.lastSeq, 'the membership record is committed');
    assert.equal(status.durableSeq, 0, 'the leader has synced nothing itself');
    return engine;
  }

  it('does so for a membership record too (a join appended by the leader itself)', () => {
    leaderWithCommittedJoin();
  });

  it('steps down by check-quorum in its term, its own sync still pending, without breaking commit <= matched', () => {
    const engine = leaderWithCommittedJoin();
    // The followers go silent (cut off) and the leader's disk never syncs: check-quorum demotes it
    // in the same term. Its matched frontier must still cover the membership record it committed.
    for (let tick = 0; tick < 4 * DEFAULT_LIMITS.electionTimeoutTicks && engine.status().role === 'leader'; tick++)
      engine.step({ type: 'tick' });
    const status = engine.status();
    assert.equal(status.role, 'follower');
    assert.ok(status.matchedSeq >= status.commitSeq, `matched ${status.matchedSeq} < commit ${status.commitSeq}`);
  });
});
