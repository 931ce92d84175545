import assert from 'node:assert/strict';
import { CURRENT_COMPAT } from '../../engine/limits.js';
import { encodeSegmentFrame } from '../../engine/segment-frame.js';
import { EntryKind, type Effect, type Input } from '../../engine/types.js';
import { encodeRoster } from '../../engine/roster.js';
import { captureArtifact } from '../../sim/artifacts.js';
import { AppliedMonotonicChecker } from '../../sim/checkers/applied-monotonic.js';
import { CanonicalLog } from '../../sim/checkers/canonical-log.js';
import type { StepRecord } from '../../sim/checkers/checker.js';
import { DurabilityChecker } from '../../sim/checkers/durability.js';
import { ElectionChecker } from '../../sim/checkers/election.js';
import { LagGaugeChecker } from '../../sim/checkers/lag-gauge.js';
import { livenessGap } from '../../sim/checkers/liveness.js';
import { LogMatchingChecker } from '../../sim/checkers/log-matching.js';
import { MembershipChecker } from '../../sim/checkers/membership.js';
import { ReadinessChecker } from '../../sim/checkers/readiness.js';
import { RemovedChecker } from '../../sim/checkers/removed.js';
import { SnapshotIntegrityChecker } from '../../sim/checkers/snapshot-integrity.js';
import { StateMachineSafetyChecker } from '../../sim/checkers/state-machine-safety.js';
import { TermFencingChecker } from '../../sim/checkers/term-fencing.js';
import { VoterFloorChecker } from '../../sim/checkers/voter-floor.js';
import { KvStateMachine, encodeCommand } from '../../sim/state-machine.js';
import { InvariantViolation } from '../../sim/violation.js';
import { entry, makeNode, roster, status, world } from './fixtures.js';

const TICK: Input = { type: 'tick' };

function step(over: Partial<StepRecord> & Pick<StepRecord, 'node' | 'after'>): StepRecord {
  return { input: TICK, effects: [], before: null, nowUs: 0, ...over };
}

function violates(invariant: string, run: () => void, message?: string): void {
  assert.throws(run, (error: unknown) => error instanceof InvariantViolation && error.invariant === invariant, message);
}

function put(seq: number, term: number, key: string, value: string) {
  return { seq, term, kind: EntryKind.EventBatch, data: encodeCommand({ op: 'put', key, value, writeId: seq }) };
}

describe('sim/checkers (hand-made states)', () => {
  const [n1, n2, n3] = [makeNode(0), makeNode(1), makeNode(2)];

  it('election safety: a second leader in one term fails', () => {
    const checker = new ElectionChecker();
    const voteRequest = { term: 2, candidateRegion: 1, lastLogTerm: 1, lastLogSeq: 3, prevote: false, transfer: false };
    checker.onVote(n2, status({ id: 2 }), voteRequest, { term: 2, granted: true, removed: false });
    checker.afterStep(step({ node: n1, after: status({ id: 1, role: 'leader', term: 2 }) }));
    checker.onVote(
      n3,
      status({ id: 3 }),
      { ...voteRequest, candidateRegion: 2 },
      { term: 2, granted: true, removed: false },
    );
    violates('election-safety', () =>
      checker.afterStep(step({ node: n2, after: status({ id: 2, role: 'leader', term: 2 }) })),
    );
  });

  it('quorum: a leader without majority grants from voters fails (a learner grant does not count)', () => {
    const checker = new ElectionChecker();
    const r = roster([1, 2, 3], [4]);
    checker.onVote(
      makeNode(3),
      status({ id: 4, roster: r }),
      { term: 5, candidateRegion: 1, lastLogTerm: 1, lastLogSeq: 1, prevote: false, transfer: false },
      { term: 5, granted: true, removed: false },
    );
    violates('quorum', () =>
      checker.afterStep(step({ node: n1, after: status({ id: 1, role: 'leader', term: 5, roster: r }) })),
    );
  });

  it('log matching: the same (seq, term) with other bytes, or after another term, fails', () => {
    const checker = new LogMatchingChecker();
    checker.onAppend(n1, 1, [entry(1, 1), entry(2, 1), entry(3, 2)], 0);
    checker.onAppend(n2, 1, [entry(1, 1), entry(2, 1)], 0);
    violates('log-matching', () => checker.onAppend(n3, 3, [entry(3, 2, 'other')], 1));
    violates('log-matching', () => checker.onAppend(n3, 3, [entry(3, 2)], 3));
  });

  it('state-machine safety: two different entries applied at one seq fail', () => {
    const checker = new StateMachineSafetyChecker(new CanonicalLog());
    checker.onApply(n1, [entry(1, 1), entry(2, 1)]);
    checker.onApply(n2, [entry(1, 1)]);
    violates('state-machine-safety', () => checker.onApply(n3, [entry(1, 1), entry(2, 2)]));
  });

  it('durability: an acknowledged write later applied as other bytes, or missing from a leader of a later term, fails', () => {
    const canonical = new CanonicalLog();
    const checker = new DurabilityChecker(canonical);
    const acked = entry(2, 1, 'write-A');
    n1.storage.written.resetTo(0, 0, [entry(1, 1), acked]);
    checker.onProposalResult(n1, 7, true, 2, acked.data, 2);
    assert.equal(checker.maxAckedSeq, 2);
    violates('durability', () => checker.onApply(n2, [entry(2, 1, 'write-B')]));
    n2.storage.written.resetTo(0, 0, [entry(1, 1)]);
    violates('durability', () =>
      checker.afterStep(
        step({ node: n2, before: status({ id: 2 }), after: status({ id: 2, role: 'leader', term: 3 }) }),
      ),
    );
    // Acknowledged in term 2: a stale candidate winning term 2 (or 1) late is fenced and may lack it (seed 500381).
    checker.afterStep(step({ node: n2, before: status({ id: 2 }), after: status({ id: 2, role: 'leader', term: 2 }) }));
    violates('durability', () => checker.onProposalResult(n3, 8, true, 2, new TextEncoder().encode('write-C'), 2));
  });

  it('term fencing: appending or accepting a ship from a lower term fails', () => {
    const checker = new TermFencingChecker();
    const payload = encodeSegmentFrame({ prevSeq: 0, prevTerm: 0, commitSeq: 0, entries: [entry(1, 1)] });
    const body = {
      id: { regionId: 1, shardId: 1, seqno: 1 },
      payload: Buffer.from(payload),
      eventCount: 1,
      leaderLastSeq: 1,
      streamBaseline: 0,
      term: 1,
      leaderRegion: 1,
    };
    const input: Input = { type: 'request', callId: 9, request: { method: 'ShipSegment', body } };
    const rejected: Effect[] = [{ type: 'replyError', callId: 9, status: { code: 9, details: 'stale', trailers: {} } }];
    checker.afterStep(
      step({ node: n2, input, before: status({ term: 3 }), after: status({ term: 3 }), effects: rejected }),
    );
    violates('term-fencing', () =>
      checker.afterStep(
        step({
          node: n2,
          input,
          before: status({ term: 3 }),
          after: status({ term: 3 }),
          effects: [{ type: 'append', fromSeq: 1, entries: [entry(1, 1)] }],
        }),
      ),
    );
    violates('term-fencing', () =>
      checker.afterStep(
        step({
          node: n2,
          input,
          before: status({ term: 3 }),
          after: status({ term: 3 }),
          effects: [
            {
              type: 'reply',
              callId: 9,
              response: { method: 'ShipSegment', body: { accepted: true, appliedSeqno: 1, term: 3 } },
            },
          ],
        }),
      ),
    );
  });

  it('readiness honesty: converging on leader_last_seq 0, or short of the frontier, fails', () => {
    const nodes = [makeNode(0), makeNode(1)];
    const checker = new ReadinessChecker(world(nodes));
    const ready: Effect[] = [{ type: 'readiness', ready: true, reason: 'caught-up-to-heartbeat-frontier' }];
    const hb = (leaderLastSeq: number): Input => ({
      type: 'request',
      callId: 1,
      request: {
        method: 'Heartbeat',
        body: {
          shardId: 1,
          regionId: 1,
          entityCount: 0,
          signalThroughputEps: 0,
          diskBytes: 0,
          replicationLag: {},
          lastHeartbeatNs: '0',
          term: 2,
          leaderRegion: 1,
          streamBaseline: 0,
          prevLogTerm: 0,
          prevLogSeq: 0,
          buildVersion: '',
          leaderLastSeq,
        },
      },
    });
    const joiner = nodes[1]!;
    violates('readiness-honesty', () =>
      checker.afterStep(
        step({ node: joiner, input: hb(0), effects: ready, after: status({ id: 2, term: 2, leaderId: 1 }) }),
      ),
    );
    nodes[0]!.storage.written.resetTo(0, 0, [entry(1, 2), entry(2, 2), entry(3, 2)]);
    joiner.storage.durable.resetTo(0, 0, [entry(1, 2)]);
    violates('readiness-honesty', () =>
      checker.afterStep(
        step({
          node: joiner,
          input: hb(3),
          effects: ready,
          after: status({ id: 2, term: 2, leaderId: 1, matchedSeq: 1, durableSeq: 1 }),
        }),
      ),
    );
    joiner.storage.durable.resetTo(0, 0, [entry(1, 2), entry(2, 1), entry(3, 2)]);
    violates('readiness-honesty', () =>
      checker.afterStep(
        step({
          node: joiner,
          input: hb(3),
          effects: ready,
          after: status({ id: 2, term: 2, leaderId: 1, matchedSeq: 3, durableSeq: 3 }),
        }),
      ),
    );
    joiner.storage.durable.resetTo(0, 0, [entry(1, 2), entry(2, 2), entry(3, 2)]);
    checker.afterStep(
      step({
        node: joiner,
        input: hb(3),
        effects: ready,
        after: status({ id: 2, term: 2, leaderId: 1, matchedSeq: 3, durableSeq: 3 }),
      }),
    );
  });

  it('readiness honesty: the latch is sticky unless the node is removed, halted or reseeding', () => {
    const checker = new ReadinessChecker(world([makeNode(0), makeNode(1)]));
    const drop: Effect[] = [{ type: 'readiness', ready: false, reason: 'caught-up-to-heartbeat-frontier' }];
    violates('readiness-honesty', () =>
      checker.afterStep(
        step({ node: n2, effects: drop, before: status({ ready: true }), after: status({ ready: false }) }),
      ),
    );
    checker.afterStep(
      step({
        node: n2,
        effects: drop,
        before: status({ ready: true }),
        after: status({ ready: false, removed: true }),
      }),
    );
    checker.afterStep(
      step({
        node: n2,
        effects: drop,
        before: status({ ready: true }),
        after: status({ ready: false, halted: 'unknown kind 3' }),
      }),
    );
  });

  it('readiness honesty: a stale entry the engine has truncated but the disk not yet synced is not held against it', () => {
    const nodes = [makeNode(0), makeNode(1)];
    const checker = new ReadinessChecker(world(nodes));
    nodes[0]!.storage.written.resetTo(0, 0, [entry(1, 2), entry(2, 2), entry(3, 2)]);
    nodes[1]!.storage.durable.resetTo(0, 0, [entry(1, 2), entry(2, 2), entry(3, 1)]);
    const input: Input = { type: 'statusPolled', leaderLastSeq: 2 };
    checker.afterStep(
      step({ node: nodes[1]!, input, after: status({ id: 2, term: 2, leaderId: 1, matchedSeq: 3, durableSeq: 2 }) }),
    );
    const chunk = {
      id: undefined,
      payload: Buffer.alloc(0),
      eventCount: 0,
      leaderLastSeq: 3,
      streamBaseline: 0,
      term: 2,
      leaderRegion: 1,
    };
    checker.afterStep(
      step({
        node: nodes[1]!,
        input: { type: 'streamChunk', requestId: 1, chunk },
        effects: [{ type: 'readiness', ready: true, reason: 'caught-up-to-heartbeat-frontier' }],
        after: status({ id: 2, term: 2, leaderId: 1, matchedSeq: 3, durableSeq: 2 }),
      }),
    );
  });

  it('lag gauges: a shard value going down within one life fails, a restart resets', () => {
    const checker = new LagGaugeChecker();
    const polled: Input = { type: 'statusPolled', leaderLastSeq: 1 };
    checker.afterStep(step({ node: n1, input: polled, after: status({ lagGaugeByShard: { 1: 5 } }) }));
    checker.afterStep(step({ node: n1, input: polled, after: status({ lagGaugeByShard: { 1: 9, 2: 1 } }) }));
    checker.afterStep(step({ node: n1, after: status({ lagGaugeByShard: { 1: 2, 2: 1 } }) }));
    violates(
      'lag-gauge-monotonic',
      () => checker.afterStep(step({ node: n1, input: polled, after: status({ lagGaugeByShard: { 1: 8, 2: 1 } }) })),
      'a drop made on a tick is caught at the next frontier-bearing step',
    );
    violates('lag-gauge-monotonic', () =>
      checker.afterStep(step({ node: n1, input: polled, after: status({ lagGaugeByShard: { 1: 9 } }) })),
    );
    checker.onStart(n1);
    checker.afterStep(step({ node: n1, input: polled, after: status({ lagGaugeByShard: { 1: 1 } }) }));
    // A frozen record (the engine's, handed out until a gauge moves) is kept as it is, not copied: still judged.
    checker.onStart(n2);
    checker.afterStep(step({ node: n2, input: polled, after: status({ lagGaugeByShard: Object.freeze({ 1: 5 }) }) }));
    checker.afterStep(step({ node: n2, input: polled, after: status({ lagGaugeByShard: Object.freeze({ 1: 6 }) }) }));
    violates('lag-gauge-monotonic', () =>
      checker.afterStep(step({ node: n2, input: polled, after: status({ lagGaugeByShard: Object.freeze({ 1: 4 }) }) })),
    );
  });

  it('voter floor: a leader whose roster drops below 2f + 1 voters within its term fails; the same roster passes', () => {
    const checker = new VoterFloorChecker({ autopilotFailureTolerance: 1 });
    const five = roster([1, 2, 3, 4, 5]);
    const leader = (r: typeof five) => status({ role: 'leader', term: 4, roster: r });
    checker.afterStep(step({ node: n1, before: leader(five), after: leader(five) }));
    checker.afterStep(step({ node: n1, before: leader(five), after: leader(roster([1, 2, 3])) }));
    violates('voter-floor', () =>
      checker.afterStep(step({ node: n1, before: leader(roster([1, 2, 3])), after: leader(roster([1, 2], [3])) })),
    );
    // A new term (a new leader) is not judged by this step.
    checker.afterStep(
      step({ node: n1, before: leader(roster([1, 2, 3])), after: { ...leader(roster([1, 2])), term: 5 } }),
    );
  });

  it("membership: two kind-4 records above the cluster commit point in a leader's log fail", () => {
    const k4 = (seq: number) => ({
      ...entry(seq, 2),
      kind: EntryKind.Membership,
      data: encodeRoster(roster([1, 2, 3])),
    });
    const fresh = new MembershipChecker(world([n1, n2, n3]));
    fresh.onAppend(n1, 1, [entry(1, 2), k4(2), k4(3)]);
    violates('membership-safety', () =>
      fresh.afterStep(step({ node: n1, after: status({ role: 'leader', term: 2, commitSeq: 1 }) })),
    );
    const checker = new MembershipChecker(world([n1, n2, n3]));
    checker.onAppend(n1, 1, [entry(1, 2), k4(2), k4(3)]);
    checker.afterStep(step({ node: n2, after: status({ id: 2, role: 'follower', term: 2, commitSeq: 2 }) }));
    // a new leader that does not know yet that seq 2 was committed holds only one record above the cluster's commit
    checker.afterStep(step({ node: n1, after: status({ role: 'leader', term: 3, commitSeq: 0 }) }));
  });

  it('membership: a learner campaigning fails (granting a vote is allowed: etcd-io/etcd#10998)', () => {
    const checker = new MembershipChecker(world([n1, n2, n3]));
    const r = roster([1, 2], [3]);
    const campaign: Effect[] = [
      {
        type: 'send',
        requestId: 1,
        to: 'n1:7000',
        toId: 1,
        request: {
          method: 'RequestVote',
          body: { term: 2, candidateRegion: 3, lastLogTerm: 0, lastLogSeq: 0, prevote: true, transfer: false },
        },
      },
    ];
    violates('membership-safety', () =>
      checker.afterStep(
        step({
          node: n3,
          effects: campaign,
          before: status({ id: 3, roster: r }),
          after: status({ id: 3, roster: r }),
        }),
      ),
    );
  });

  it('membership: kind-4 appended while a voter lacks bit 0, or delivered to such a node, fails', () => {
    const old = makeNode(1, { ...CURRENT_COMPAT, capabilities: 0 });
    const checker = new MembershipChecker(world([n1, old, n3]));
    const k4 = { ...entry(4, 2), kind: EntryKind.Membership, data: encodeRoster(roster([1, 2, 3])) };
    violates('membership-safety', () =>
      checker.afterStep(
        step({
          node: n1,
          effects: [{ type: 'append', fromSeq: 4, entries: [k4] }],
          after: status({ role: 'leader', term: 2, commitSeq: 3 }),
        }),
      ),
    );
    const payload = Buffer.from(encodeSegmentFrame({ prevSeq: 3, prevTerm: 2, commitSeq: 3, entries: [k4] }));
    const input: Input = {
      type: 'request',
      callId: 1,
      request: {
        method: 'ShipSegment',
        body: { id: undefined, payload, eventCount: 1, leaderLastSeq: 4, streamBaseline: 0, term: 2, leaderRegion: 1 },
      },
    };
    violates('membership-safety', () =>
      checker.afterStep(step({ node: old, input, after: status({ id: 2, term: 2 }) })),
    );
  });

  it('a node that knows it was removed and still campaigns fails', () => {
    const checker = new RemovedChecker();
    const campaign: Effect[] = [
      {
        type: 'send',
        requestId: 1,
        to: 'n1:7000',
        toId: 1,
        request: {
          method: 'RequestVote',
          body: { term: 4, candidateRegion: 2, lastLogTerm: 1, lastLogSeq: 1, prevote: true, transfer: false },
        },
      },
    ];
    checker.afterStep(
      step({ node: n2, effects: campaign, before: status({ removed: false }), after: status({ removed: true }) }),
    );
    violates('removed-never-campaigns', () =>
      checker.afterStep(
        step({ node: n2, effects: campaign, before: status({ removed: true }), after: status({ removed: true }) }),
      ),
    );
  });

  it('snapshot integrity: an artifact whose state differs from a replay of the committed log fails', () => {
    const canonical = new CanonicalLog();
    const checker = new SnapshotIntegrityChecker(canonical);
    const log = [put(1, 1, 'a', '1'), put(2, 1, 'b', '2'), put(3, 1, 'a', '3')];
    canonical.record(0, 'n1', log[0]!);
    canonical.record(0, 'n1', log[1]!);
    canonical.record(0, 'n1', log[2]!);
    const machine = new KvStateMachine();
    log.forEach((e) => machine.apply(e));
    const meta = { seq: 3, entryTerm: 1, roster: roster([1]) };
    checker.onArtifact(n1, captureArtifact(meta, machine.stateJson(), 1, 1), 'staged');
    const wrong = JSON.stringify({
      appliedSeq: 3,
      kv: [
        ['a', '1'],
        ['b', '2'],
      ],
    });
    violates('snapshot-integrity', () => checker.onArtifact(n2, captureArtifact(meta, wrong, 1, 1), 'installed'));
    violates('snapshot-integrity', () =>
      checker.onArtifact(n2, captureArtifact({ ...meta, entryTerm: 2 }, machine.stateJson(), 1, 1), 'installed'),
    );
    const tampered = captureArtifact(meta, machine.stateJson(), 1, 1);
    tampered.files.set('state.json', new TextEncoder().encode(wrong));
    violates('snapshot-integrity', () => checker.onArtifact(n2, tampered, 'installed'));
  });

  it('applied never goes back: a snapshot installed below what the state machine applied fails; a restart or reseed starts over', () => {
    const checker = new AppliedMonotonicChecker();
    const node = makeNode(0);
    checker.onStart(node);
    const log = [put(1, 1, 'a', '1'), put(2, 1, 'b', '2'), put(3, 1, 'a', '3')];
    for (const e of log) node.machine.apply(e);
    checker.onApply(node);
    const at = (seq: number) => captureArtifact({ seq, entryTerm: 1, roster: roster([1]) }, '{}', 1, 1);
    checker.onArtifact(node, at(2), 'staged'); // its own snapshot, behind the state it keeps: no move back
    checker.onArtifact(node, at(3), 'installed'); // equal: the state is the same
    violates('applied-monotonic', () => checker.onArtifact(node, at(2), 'installed'));
    checker.beforeEffect(node, { type: 'resetStateMachine' });
    checker.onArtifact(node, at(2), 'installed'); // a reseed wiped the state on purpose
    checker.onArtifact(node, at(5), 'installed');
    checker.onCrash(node);
    node.machine.reset();
    checker.onStart(node); // restarted from an older artifact: a new life
    checker.onArtifact(node, at(4), 'installed');
  });

  it('liveness: names what is missing until leader, commits and joiners converge', () => {
    const nodes = [makeNode(0), makeNode(1), makeNode(2, CURRENT_COMPAT, true)];
    const r = roster([1, 2], [3]);
    const input = () => ({ core: nodes, maxAckedSeq: 5, nodeByMemberId: (id: number) => nodes[id - 1] });
    nodes.forEach((n) => {
      n.state = 'up';
    });
    nodes[0]!.status = status({ id: 1, role: 'follower', term: 3, roster: r });
    nodes[1]!.status = status({ id: 2, role: 'follower', term: 3, roster: r });
    nodes[2]!.status = status({ id: 0, role: 'joiner', term: 0, roster: r });
    assert.equal(livenessGap(input()), 'no live leader');
    nodes[0]!.status = status({ id: 1, role: 'leader', term: 3, leaderId: 1, commitSeq: 5, roster: r });
    assert.match(livenessGap(input()) ?? '', /n2 is at term 3 following 0/);
    nodes[1]!.status = status({ id: 2, term: 3, leaderId: 1, commitSeq: 4, roster: r });
    assert.match(livenessGap(input()) ?? '', /n2 has committed 4 < acknowledged 5/);
    nodes[1]!.status = status({ id: 2, term: 3, leaderId: 1, commitSeq: 5, roster: r });
    nodes[2]!.status = status({ id: 3, term: 3, leaderId: 1, commitSeq: 5, roster: r, ready: false });
    assert.match(livenessGap(input()) ?? '', /joiner n3 is not ready/);
    nodes[2]!.status = status({ id: 3, term: 3, leaderId: 1, commitSeq: 5, roster: r, ready: true });
    assert.equal(livenessGap(input()), null);
    const removedByName = roster([1, 2], [], [3]);
    nodes[0]!.status = status({ id: 1, role: 'leader', term: 3, leaderId: 1, commitSeq: 5, roster: removedByName });
    nodes[1]!.status = status({ id: 2, term: 3, leaderId: 1, commitSeq: 5, roster: removedByName });
    nodes[2]!.status = status({ id: 0, role: 'joiner', term: 0, roster: removedByName });
    assert.equal(livenessGap(input()), null, 'a joiner removed before it learned its id owes nothing');
  });
});
