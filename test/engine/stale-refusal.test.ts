// A ship refusal the follower has since superseded (sim seed 209520): with one-entry segments arriving out of
// order, a follower refuses a ship past a gap, pulls the gap (StreamSegments) and reports past it; the refusal,
// answered before the pull, may reach the leader after that report. The leader must not pause on it: the
// follower's pull is done, so no report would come to resume shipping until pullTimeoutTicks (3 s). etcd's raft
// ignores such a rejection too (Progress.MaybeDecrTo: a rejected index at or below Match is stale).
import assert from 'node:assert/strict';
import { Engine, emptyRestoredState, CAPABILITY_KIND4, DEFAULT_LIMITS, type Effect } from '../../engine/index.js';
import { founderConfig } from './founders.js';

type Send = Extract<Effect, { type: 'send' }>;
const sends = (effects: Effect[]): Send[] => effects.filter((e): e is Send => e.type === 'send');
const shipsTo = (effects: Effect[], toId: number): Send[] =>
  sends(effects).filter((e) => e.request.method === 'ShipSegment' && e.toId === toId);
/** prevSeqOf: the seq a ShipSegment's segment follows (its id's seqno is the first seq it covers). */
const prevSeqOf = (send: Send): number =>
  send.request.method === 'ShipSegment' ? (send.request.body.id?.seqno ?? 1) - 1 : -1;
const encoder = new TextEncoder();
const ENTRY_COUNT = 12;

/**
 * leaderWithHeldShips: n1, leader of term 1 for n2 and n3 with one-entry segments; then ENTRY_COUNT proposals.
 * Every call is answered at once except the ShipSegments to n2 after the election, returned in order (the
 * window's worth: inflightSegmentCountMax of them).
 */
function leaderWithHeldShips(): { engine: Engine; held: Send[]; baseSeq: number } {
  const limits = { ...DEFAULT_LIMITS, segmentEntryCountMax: 1 };
  const engine = new Engine({ ...founderConfig('n1', ['n1', 'n2', 'n3']), limits }, emptyRestoredState());
  engine.step({ type: 'start' });
  let holding = false;
  const held: Send[] = [];
  const answer = (effects: Effect[]): void => {
    const pending = sends(effects);
    while (pending.length > 0) {
      const send = pending.shift()!;
      const term = engine.status().term;
      let out: Effect[] = [];
      if (send.request.method === 'RequestVote')
        out = engine.step({
          type: 'response',
          requestId: send.requestId,
          response: { method: 'RequestVote', body: { term, granted: true, removed: false } },
        });
      else if (send.request.method === 'Heartbeat')
        out = engine.step({
          type: 'response',
          requestId: send.requestId,
          response: {
            method: 'Heartbeat',
            body: { acknowledged: true, term, accepted: true, capabilities: CAPABILITY_KIND4, removed: false },
          },
        });
      else if (send.request.method === 'ShipSegment') {
        if (holding && send.toId === 2) {
          held.push(send);
          continue;
        }
        const appliedSeqno = prevSeqOf(send) + send.request.body.eventCount;
        out = engine.step({
          type: 'response',
          requestId: send.requestId,
          response: { method: 'ShipSegment', body: { accepted: true, appliedSeqno, term } },
        });
      }
      pending.push(...sends(out));
    }
  };
  for (let tick = 0; tick < 10 * limits.electionTimeoutTicks && engine.status().role !== 'leader'; tick++)
    answer(engine.step({ type: 'tick' }));
  for (let tick = 0; tick < 2 * limits.heartbeatIntervalTicks; tick++) answer(engine.step({ type: 'tick' }));
  assert.equal(engine.status().role, 'leader');
  const baseSeq = engine.status().lastSeq;
  holding = true;
  for (let i = 1; i <= ENTRY_COUNT; i++)
    answer(engine.step({ type: 'propose', proposalId: i, data: encoder.encode(`{"k":${i}}`) }));
  assert.equal(held.length, limits.inflightSegmentCountMax, 'a full window of ships to n2 is in flight');
  assert.deepEqual(
    held.map(prevSeqOf),
    held.map((_, i) => baseSeq + i),
    'one entry each, in order',
  );
  return { engine, held, baseSeq };
}

function report(engine: Engine, callId: number, appliedSeqno: number): Effect[] {
  const body = {
    reporterShard: 2,
    sourceShard: 1,
    appliedSeqno,
    reporterTerm: engine.status().term,
    capabilities: CAPABILITY_KIND4,
  };
  return engine.step({ type: 'request', callId, request: { method: 'ReportApplied', body } });
}

function refuse(engine: Engine, ship: Send, appliedSeqno: number): Effect[] {
  const term = engine.status().term;
  return engine.step({
    type: 'response',
    requestId: ship.requestId,
    response: { method: 'ShipSegment', body: { accepted: false, appliedSeqno, term } },
  });
}

describe('engine: a ship refusal superseded by a later report does not pause the follower', () => {
  it('keeps shipping after a refusal that arrives behind a report past its prevSeq', () => {
    const { engine, held, baseSeq } = leaderWithHeldShips();
    // n2 took the first ship, refused the second (the third had overtaken it: a gap), pulled, and reported
    // everything the window carried. Its report reaches n1 first; every ship is still in flight.
    const windowEnd = baseSeq + held.length;
    assert.deepEqual(shipsTo(report(engine, 500, windowEnd), 2), [], 'the window is full: nothing more yet');
    const afterRefusal = refuse(engine, held[1]!, baseSeq + 1);
    assert.deepEqual(
      shipsTo(afterRefusal, 2).map(prevSeqOf),
      [windowEnd],
      'the stale refusal frees its slot, and the next entry leaves at once (before the fix: paused until pullTimeoutTicks)',
    );
  });

  it('still pauses on a refusal the follower has not superseded (it pulls what it misses)', () => {
    const { engine, held, baseSeq } = leaderWithHeldShips();
    // n2 refused the second ship holding only what it had before the window; no report has come since.
    assert.deepEqual(shipsTo(refuse(engine, held[1]!, baseSeq), 2), [], 'paused: n2 pulls');
    // Another refusal at or above the frontier n2 reported keeps it paused.
    assert.deepEqual(shipsTo(refuse(engine, held[2]!, baseSeq), 2), []);
    // Its pull's report past the gap resumes shipping.
    assert.ok(shipsTo(report(engine, 501, baseSeq + 5), 2).length > 0, 'news from n2 resumes shipping');
  });
});
