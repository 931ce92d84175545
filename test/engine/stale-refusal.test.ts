// A ship refusal the follower has since superseded (sim seed 209520): with one-entry segments arriving out of
// order, a follower refuses a ship past a gap, pulls the gap (StreamSegments) and reports past it; the refusal,
// answered before the pull, may reach the leader after that report. The leader must not pause on it: the
// follower's pull is done, so no report would come to resume shipping until pullTimeoutTicks (3 s). etcd's raft
// ignores such a rejection too (Progress.MaybeDecrTo: a rejected index at or below Match is stale).
import assert from 'node:assert/strict';
import { DEFAULT_LIMITS, type Effect, type Engine } from '../../engine/index.js';
import { answeredLeader, prevSeqOf, reportApplied, shipsTo, type Send } from './answered-leader.js';

const encoder = new TextEncoder();
const ENTRY_COUNT = 12;

/**
 * leaderWithHeldShips: n1, leader of term 1 for n2 and n3 with one-entry segments; then ENTRY_COUNT proposals.
 * Every call is answered at once except the ShipSegments to n2 after the election, returned in order (the
 * window's worth: inflightSegmentCountMax of them).
 */
function leaderWithHeldShips(): { engine: Engine; held: Send[]; baseSeq: number } {
  const limits = { ...DEFAULT_LIMITS, segmentEntryCountMax: 1 };
  let holding = false;
  const held: Send[] = [];
  const holds = (ship: Send): boolean => {
    if (!holding || ship.toId !== 2) return false;
    held.push(ship);
    return true;
  };
  const { engine, answer } = answeredLeader({ limits, holds });
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

/** report: n2 reports frontier `appliedSeqno`. */
function report(engine: Engine, callId: number, appliedSeqno: number): Effect[] {
  return reportApplied(engine, callId, 2, appliedSeqno);
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
