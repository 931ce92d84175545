// A removed member must learn its removal (rule 6: the leader ships to it until it was told the record that
// removed it committed, docs/protocol.md "Learning of a removal"), and a failed heartbeat makes the leader count
// the commit news it gave a member as lost (Progress.commitNewsMaybeLost, sim seed 218124). Together: a removed
// member whose heartbeats fail must not lose the removal's commit news for good, and once it has learned, the
// leader must let it go (no more heartbeats or ships to it), whether it lives on or is gone for good.
import assert from 'node:assert/strict';
import { DEFAULT_LIMITS, type Effect } from '../../engine/index.js';
import { answeredLeader, reportApplied, sends, type Send } from './answered-leader.js';
import { founderConfig } from './founders.js';
import { WiredEngines, type Sent } from './wired-engines.js';

const encoder = new TextEncoder();
const FOUNDERS = ['n1', 'n2', 'n3'];
/** QUIET_TICKS: long enough for several heartbeats and ship retries (heartbeatIntervalTicks, shipRetryTicks). */
const QUIET_TICKS = 4 * DEFAULT_LIMITS.shipRetryTicks;

function cluster(): WiredEngines {
  const net = new WiredEngines(FOUNDERS.map((name) => founderConfig(name, FOUNDERS)));
  for (let t = 0; t < 10 * DEFAULT_LIMITS.electionTimeoutTicks && net.engine(1).status().role !== 'leader'; t++)
    net.input(1, { type: 'tick' });
  assert.equal(net.engine(1).status().role, 'leader');
  for (let i = 1; i <= 5; i++) net.input(1, { type: 'propose', proposalId: i, data: encoder.encode(`{"k":${i}}`) });
  net.tick(2 * DEFAULT_LIMITS.heartbeatIntervalTicks);
  return net;
}

/** removeN3: n1 removes n3; the removal commits with n2 (n3 no longer counts). */
function removeN3(net: WiredEngines): number {
  net.input(1, { type: 'admin', adminId: 1, op: { op: 'remove', memberId: 3 } });
  net.tick(2);
  const removalSeq = net.engine(1).status().lastSeq;
  assert.ok(net.engine(1).status().commitSeq >= removalSeq, 'the removal committed');
  return removalSeq;
}

/** LEADER_TRAFFIC: what a leader sends a member it still tracks (heartbeats, segments). */
const LEADER_TRAFFIC = new Set(['Heartbeat', 'ShipSegment']);

/** trafficTo: the heartbeats and segments among `sent` from n1 to member `toId`. */
function trafficTo(sent: readonly Sent[], toId: number): Sent[] {
  return sent.filter((s) => s.fromId === 1 && s.toId === toId && LEADER_TRAFFIC.has(s.method));
}

/** methodsTo: the methods of trafficTo (what an assertion prints when it fails). */
function methodsTo(sent: readonly Sent[], toId: number): string[] {
  return trafficTo(sent, toId).map((s) => s.method);
}

describe('engine: a removed member and lost commit news', () => {
  it('a member down through its removal (its heartbeats failed) learns it once back', () => {
    const net = cluster();
    net.crash(3);
    removeN3(net);
    net.takeSent();
    net.tick(QUIET_TICKS);
    assert.ok(net.failedCallCount() > 0, 'heartbeats to n3 failed: the leader counts its commit news as lost');
    net.restart(3);
    net.tick(2 * DEFAULT_LIMITS.heartbeatIntervalTicks);
    assert.equal(net.engine(3).status().removed, true, 'n3 learned its removal');
    assert.equal(net.engine(3).status().role, 'removed');
    net.takeSent();
    net.tick(QUIET_TICKS);
    assert.deepEqual(methodsTo(net.takeSent(), 3), [], 'once n3 learned, n1 lets it go');
  });
});

describe('engine: the leader lets a member it removed go once the member learned (Progress.learnedRemoval)', () => {
  it('a follower removed under a stable leader learns it, then hears no more heartbeats or segments', () => {
    const net = cluster();
    net.takeSent();
    net.tick(QUIET_TICKS);
    assert.ok(trafficTo(net.takeSent(), 3).length > 0, 'n1 heartbeats n3 while it is a member');
    const removalSeq = removeN3(net);
    net.tick(2 * DEFAULT_LIMITS.heartbeatIntervalTicks);
    assert.equal(net.engine(3).status().removed, true, 'n3 learned its removal');
    assert.equal(net.engine(3).status().role, 'removed');
    assert.ok(net.engine(3).status().commitSeq >= removalSeq, 'n3 was told the removal committed');
    net.takeSent();
    net.tick(QUIET_TICKS);
    const sent = net.takeSent();
    // Before the fix n1 kept the Progress it made for n3 as a member (removalSeq 0): it heartbeat n3 forever.
    assert.deepEqual(methodsTo(sent, 3), [], 'n1 sends n3 nothing more');
    assert.ok(trafficTo(sent, 2).length > 0, 'n1 still heartbeats n2');
    assert.equal(net.engine(1).status().role, 'leader');
  });

  it('a member let go is not tracked again when a later record lists it as Removed still, even gone for good', () => {
    const founders = ['n1', 'n2', 'n3', 'n4'];
    const net = new WiredEngines(founders.map((name) => founderConfig(name, founders)));
    for (let t = 0; t < 10 * DEFAULT_LIMITS.electionTimeoutTicks && net.engine(1).status().role !== 'leader'; t++)
      net.input(1, { type: 'tick' });
    net.tick(2 * DEFAULT_LIMITS.heartbeatIntervalTicks);
    net.input(1, { type: 'admin', adminId: 1, op: { op: 'remove', memberId: 4 } });
    net.tick(2 * DEFAULT_LIMITS.heartbeatIntervalTicks);
    assert.equal(net.engine(4).status().role, 'removed', 'n4 learned its removal');
    net.crash(4);
    net.takeSent();
    net.input(1, { type: 'admin', adminId: 2, op: { op: 'remove', memberId: 3 } });
    net.tick(QUIET_TICKS);
    assert.equal(net.engine(3).status().role, 'removed', 'n3 learned its removal');
    // Before: the record removing n3 lists n4 as Removed too, and n1 made n4 a progress again, at that record.
    assert.deepEqual(methodsTo(net.takeSent(), 4), [], 'n1 sends n4, gone for good, nothing (its calls would fail)');
    net.tick(QUIET_TICKS);
    const later = net.takeSent();
    assert.deepEqual([...methodsTo(later, 3), ...methodsTo(later, 4)], [], 'n3 is let go in its turn');
  });

  it('lets go of a member told the commit whose frontier reports came too late to count (its disk lagged)', () => {
    // n3 answers each segment before its disk has synced it (applied_seqno lags), and its ReportApplied
    // after the removal committed is refused (removed-member). Its frontier never reaches the record at n1,
    // but it holds the record and was told it committed: it applied it, and saved `removed` before answering.
    let holdN3 = false;
    const heldToN3: Send[] = [];
    const { engine, answer } = answeredLeader({
      holds: (ship) => {
        if (!holdN3 || ship.toId !== 3) return false;
        heldToN3.push(ship);
        return true;
      },
    });
    const before = engine.status().lastSeq;
    holdN3 = true;
    answer(engine.step({ type: 'admin', adminId: 1, op: { op: 'remove', memberId: 3 } }));
    const { lastSeq: removalSeq, term } = engine.status();
    answer(engine.step({ type: 'entriesPersisted', lastSeq: removalSeq, lastTerm: term }));
    assert.equal(engine.status().commitSeq, removalSeq, 'the removal committed on n1 and n2');
    // n3 takes the record, then (its answer frees the window) the commit news: each answered before its disk syncs.
    assert.equal(heldToN3.length, 1, 'n3 got the record');
    answer(shipAnswer(engine, heldToN3[0]!, before));
    assert.equal(engine.matchSeqs()[3], before, "n1 counts n3's frontier below the record");
    assert.equal(heldToN3.length, 2, 'then the commit news');
    answer(shipAnswer(engine, heldToN3[1]!, before));
    const refused = reportApplied(engine, 900, 3, removalSeq);
    assert.ok(
      refused.some((e) => e.type === 'replyError'),
      "n3's report after the removal committed is refused: its frontier stays below the record at n1",
    );
    let toN3 = 0;
    for (let t = 0; t < QUIET_TICKS; t++) {
      const out = engine.step({ type: 'tick' });
      toN3 += sends(out).filter((s) => s.toId === 3).length;
      holdN3 = false;
      answer(out);
    }
    assert.equal(toN3, 0, 'n1 sends n3 nothing more (before the fix: a heartbeat every interval)');
  });
});

/** shipAnswer: n3 accepts `ship`, its durable frontier still at `durableSeq` (its disk has not synced the ship). */
function shipAnswer(engine: ReturnType<typeof answeredLeader>['engine'], ship: Send, durableSeq: number): Effect[] {
  const term = engine.status().term;
  return engine.step({
    type: 'response',
    requestId: ship.requestId,
    response: { method: 'ShipSegment', body: { accepted: true, appliedSeqno: durableSeq, term } },
  });
}
