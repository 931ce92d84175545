// The engine's state parts, each with its rules (engine/quorum.ts, progress.ts, readiness.ts,
// membership.ts, assert.ts): what each decides, on its own, without a cluster around it.
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { EngineInvariantError, assertFrontiers } from '../../engine/assert.js';
import { RaftLog } from '../../engine/log.js';
import {
  JoinDialer,
  PendingChanges,
  RosterCache,
  confChangeRefusal,
  type ConfChangeContext,
} from '../../engine/membership.js';
import { Progress } from '../../engine/progress.js';
import { hasQuorum, majority, quorumMatch, tallyVotes } from '../../engine/quorum.js';
import { Readiness } from '../../engine/readiness.js';
import {
  CAPABILITY_KIND4,
  EntryKind,
  MemberRole,
  bootstrapRoster,
  encodeRoster,
  withMember,
  type Effect,
  type Roster,
} from '../../engine/index.js';

const founders = (n: number): Roster =>
  bootstrapRoster(
    Array.from({ length: n }, (_, i) => ({ name: `n${i + 1}`, grpcAddr: `a${i + 1}`, httpAddr: `h${i + 1}` })),
  );
const withLearner = (roster: Roster, id: number): Roster =>
  withMember(roster, { id, name: `l${id}`, grpcAddr: `la${id}`, httpAddr: `lh${id}`, role: MemberRole.Learner });

describe('engine/quorum', () => {
  it('quorumMatch is the highest seq a majority of voters holds; learners never count', () => {
    const roster = withLearner(withLearner(founders(3), 4), 5);
    const match = new Map([
      [1, 10],
      [2, 4],
      [3, 2],
      [4, 50],
      [5, 50],
    ]);
    assert.equal(
      quorumMatch(roster, (id) => match.get(id) ?? 0),
      4,
    );
    assert.equal(
      quorumMatch({ membershipVersion: 0, nextMemberId: 1, members: [] }, () => 9),
      0,
    );
  });

  it('quorumMatch agrees with a brute-force majority for any matches', () => {
    fc.assert(
      fc.property(fc.array(fc.nat(100), { minLength: 1, maxLength: 7 }), (matches) => {
        const roster = founders(matches.length);
        const got = quorumMatch(roster, (id) => matches[id - 1]!);
        const holders = (seq: number) => matches.filter((m) => m >= seq).length;
        assert.ok(holders(got) >= majority(matches.length), 'a majority holds the quorum seq');
        assert.ok(holders(got + 1) < majority(matches.length), 'no higher seq is held by a majority');
      }),
    );
  });

  it('tallies votes and check-quorum over voters only', () => {
    const roster = withLearner(founders(3), 4);
    assert.equal(
      tallyVotes(
        roster,
        new Map([
          [1, true],
          [4, true],
        ]),
      ),
      'pending',
    );
    assert.equal(
      tallyVotes(
        roster,
        new Map([
          [1, true],
          [2, true],
        ]),
      ),
      'won',
    );
    assert.equal(
      tallyVotes(
        roster,
        new Map([
          [1, true],
          [2, false],
          [3, false],
          [4, true],
        ]),
      ),
      'lost',
    );
    assert.equal(
      hasQuorum(roster, (id) => id === 1 || id === 4),
      false,
    );
    assert.equal(
      hasQuorum(roster, (id) => id === 1 || id === 3),
      true,
    );
  });
});

describe('engine/progress', () => {
  it('probes one ship at a time, pipelines once accepted, pauses on a refusal and resumes on a report', () => {
    const pr = new Progress(5, 0);
    assert.equal(pr.window(8), 1);
    pr.shipped(1, 3, 7);
    assert.equal(pr.nextSeq, 8);
    pr.answered(1);
    pr.shipAccepted(7, 6, 0);
    assert.equal(pr.state, 'replicate');
    assert.equal(pr.window(8), 8);
    assert.equal(pr.ackedCommitSeq, 6);
    pr.shipRefused(10);
    assert.equal(pr.state, 'paused');
    assert.equal(pr.pauseTimedOut(10 + 5, 4), true);
    assert.equal(pr.foldMatch(7, 20), true);
    assert.equal(pr.state, 'replicate');
    assert.equal(pr.foldMatch(7, 20), false, 'not news');
    pr.rewind();
    assert.deepEqual([pr.state, pr.nextSeq], ['probe', 8]);
  });

  it('counts commit news as delivered only up to what the ship or the report reaches (sim seed 374)', () => {
    const pr = new Progress(1, 0);
    pr.shipAccepted(3, 9, 4);
    assert.equal(pr.ackedCommitSeq, 4);
  });

  it("caps a reported match at the leader's log end, and knows when a removed member has learned", () => {
    const pr = new Progress(1, 0, 6);
    pr.foldMatch(99, 8);
    assert.equal(pr.matchSeq, 8);
    assert.equal(pr.learnedRemoval(), false, 'not told the removal committed yet');
    pr.shipAccepted(8, 6, 8);
    assert.equal(pr.learnedRemoval(), true);
  });

  it('a member removed while tracked is marked at its removal record; told that commit, it has learned', () => {
    const pr = new Progress(1, 0);
    pr.shipAccepted(5, 5, 5);
    pr.foldMatch(5, 5);
    assert.equal(pr.learnedRemoval(), false, 'a member, not removed');
    pr.markRemoved(6);
    pr.markRemoved(9);
    assert.equal(pr.removalSeq, 6, 'the first record that removed it stands');
    assert.equal(pr.learnedRemoval(), false, 'not told the removal committed yet');
    pr.shipAccepted(6, 6, 5);
    assert.equal(pr.matchSeq, 5, 'its frontier report is still below the record (its disk had not synced it)');
    assert.equal(pr.learnedRemoval(), true, 'it held the record and was told it committed: it applied it');
  });
});

describe('engine/readiness (spec Readiness rules)', () => {
  const latch = () => {
    const effects: Effect[] = [];
    return { effects, readiness: new Readiness((e) => effects.push(e)) };
  };

  it('rule 1: the lag gauge is monotonic per shard', () => {
    const { readiness } = latch();
    readiness.foldLagGauge(1, 9);
    readiness.foldLagGauge(1, 4);
    readiness.foldLagGauge(1, 0);
    assert.equal(readiness.gauge(1), 9);
  });

  it('rules 2 and 5: only a real frontier, reached, converges', () => {
    const { readiness } = latch();
    readiness.onHeartbeatFrontier(0);
    assert.equal(readiness.convergence(100), null, 'zero never converges');
    readiness.onHeartbeatFrontier(10);
    assert.equal(readiness.convergence(9), null, 'behind the frontier');
    assert.equal(readiness.convergence(10), 'caught-up-to-heartbeat-frontier');
  });

  it('rule 3: leader_last_seq = 0 switches to the status poll, paced', () => {
    const { readiness } = latch();
    readiness.onHeartbeatFrontier(0);
    assert.deepEqual(
      [1, 2, 3].map(() => readiness.pollDue(3)),
      [false, false, true],
    );
    assert.equal(readiness.onStatusPolled(0), false);
    assert.equal(readiness.onStatusPolled(5), true);
    assert.equal(readiness.convergence(5), 'caught-up-to-polled-status');
    readiness.onHeartbeatFrontier(7);
    assert.equal(readiness.pollDue(1), false, 'a real frontier ends the poll');
  });

  it('flips emit one effect each: rule 4 (won leadership) up, rule 6 (removed) down', () => {
    const { readiness, effects } = latch();
    assert.equal(readiness.wonLeadership(), true);
    readiness.wonLeadership();
    readiness.removed();
    assert.deepEqual(effects, [
      { type: 'readiness', ready: true, reason: 'won-leadership' },
      { type: 'readiness', ready: false, reason: 'removed' },
    ]);
  });

  it('a node removed or halted for good never turns ready again, whatever it hears', () => {
    let stopped = false;
    const effects: Effect[] = [];
    const readiness = new Readiness(
      (e) => effects.push(e),
      () => stopped,
    );
    readiness.onHeartbeatFrontier(5);
    stopped = true;
    readiness.halted();
    assert.equal(readiness.tryConverge(9), false);
    assert.equal(readiness.wonLeadership(), false);
    assert.equal(readiness.ready, false);
    assert.deepEqual(effects, []);
  });
});

describe('engine/membership', () => {
  const ctx = (over: Partial<ConfChangeContext> = {}): ConfChangeContext => ({
    roster: withLearner(founders(3), 4),
    selfId: 1,
    commitSeq: 5,
    barrierSeq: 5,
    pendingConfSeq: 0,
    transferring: false,
    selfCapabilities: CAPABILITY_KIND4,
    capabilitiesOf: () => CAPABILITY_KIND4,
    capabilitiesKnownOf: () => true,
    clusterMemberCountMax: 7,
    promotingId: 0,
    removingId: 0,
    ...over,
  });

  it('the conf-change gate answers with a typed code', () => {
    assert.equal(confChangeRefusal(ctx()), null);
    assert.equal(confChangeRefusal(ctx({ commitSeq: 4 }))?.code, 'term-not-committed');
    assert.equal(confChangeRefusal(ctx({ pendingConfSeq: 6 }))?.code, 'change-in-flight');
    assert.equal(confChangeRefusal(ctx({ transferring: true }))?.code, 'transfer-in-progress');
    assert.equal(confChangeRefusal(ctx({ selfCapabilities: 0 }))?.code, 'leader-lacks-kind4');
    assert.equal(
      confChangeRefusal(ctx({ capabilitiesOf: (id) => (id === 2 ? 0 : CAPABILITY_KIND4) }))?.code,
      'member-lacks-kind4',
    );
    assert.equal(confChangeRefusal(ctx({ clusterMemberCountMax: 4 }))?.code, 'member-limit');
  });

  it('the capability gate is on voters, and on a learner being promoted', () => {
    const incapableLearner = (id: number) => (id === 4 ? 0 : CAPABILITY_KIND4);
    assert.equal(confChangeRefusal(ctx({ capabilitiesOf: incapableLearner })), null);
    assert.equal(
      confChangeRefusal(ctx({ capabilitiesOf: incapableLearner, promotingId: 4 }))?.code,
      'member-lacks-kind4',
    );
  });

  it('the capability gate leaves out the voter being removed while unheard, and only that one', () => {
    const voter3 = (id: number) => (id === 3 ? 0 : CAPABILITY_KIND4);
    const unheard3 = { capabilitiesOf: voter3, capabilitiesKnownOf: (id: number) => id !== 3 };
    assert.equal(confChangeRefusal(ctx({ ...unheard3, removingId: 3 })), null);
    assert.equal(confChangeRefusal(ctx({ ...unheard3, removingId: 2 }))?.code, 'member-lacks-kind4');
    assert.equal(confChangeRefusal(ctx(unheard3))?.code, 'member-lacks-kind4');
    // A voter that reported 0 (an older binary, alive) still gates its own removal, as the spec says.
    assert.equal(confChangeRefusal(ctx({ capabilitiesOf: voter3, removingId: 3 }))?.code, 'member-lacks-kind4');
  });

  it('the roster cache serves a record only at the term it was decoded for (truncation)', () => {
    const cache = new RosterCache();
    const a = founders(3);
    const b = withLearner(a, 4);
    assert.deepEqual(cache.rosterOf({ seq: 7, term: 2, kind: EntryKind.Membership, data: encodeRoster(a) }), a);
    assert.deepEqual(cache.rosterOf({ seq: 7, term: 3, kind: EntryKind.Membership, data: encodeRoster(b) }), b);
    assert.equal(cache.rosterOf({ seq: 8, term: 3, kind: EntryKind.Membership, data: new Uint8Array([1]) }), null);
  });

  it('pending changes settle in order once committed, and abandon hands back what still waits', () => {
    const pending = new PendingChanges();
    pending.addJoin(5, 4, 'n4', 100);
    assert.equal(pending.joinAlsoAnswers('n4', 101), true);
    assert.equal(pending.joinAlsoAnswers('n5', 102), false);
    pending.addAdmin(6, 9, 'n2');
    assert.deepEqual(
      pending.settle(5).map((c) => [c.kind, c.id, c.callIds]),
      [['join', 4, [100, 101]]],
    );
    pending.addJoin(7, 5, 'n5', 103);
    assert.deepEqual(pending.abandon(), { adminIds: [9], joinCallIds: [103] });
    assert.deepEqual(pending.settle(99), []);
  });

  it('a joiner dials a named leader at once, else its seeds in turn, paced', () => {
    const dialer = new JoinDialer(['s1', 's2'], 4);
    assert.equal(dialer.due(3), 's1');
    dialer.started(1);
    assert.equal(dialer.due(3), null);
    assert.equal(dialer.settled(1), true);
    dialer.refused('leader', [{ grpcAddr: 'm1' }, { grpcAddr: 'm2' }, { grpcAddr: 'm3' }]);
    assert.equal(dialer.due(3), 'leader', 'a named leader at once');
    assert.deepEqual([dialer.due(3), dialer.due(3), dialer.due(3)], [null, null, 's2']);
    assert.deepEqual(
      [1, 2, 3].map(() => dialer.due(1)),
      ['m1', 'm2', 's1'],
      'learned members join the seeds, up to the limit',
    );
  });
});

describe('engine/assert', () => {
  it('frontiers: applied ≤ commit ≤ matched, durable ≤ log end; anything else throws EngineInvariantError', () => {
    assertFrontiers({ appliedSeq: 1, commitSeq: 2, matchedSeq: 3, durableSeq: 3, lastSeq: 3 });
    assert.throws(
      () => assertFrontiers({ appliedSeq: 3, commitSeq: 2, matchedSeq: 3, durableSeq: 3, lastSeq: 3 }),
      EngineInvariantError,
    );
    assert.throws(
      () => assertFrontiers({ appliedSeq: 1, commitSeq: 4, matchedSeq: 3, durableSeq: 3, lastSeq: 4 }),
      /commit seqno 4 is above the matched frontier 3/,
    );
    assert.throws(
      () => assertFrontiers({ appliedSeq: 1, commitSeq: 2, matchedSeq: 3, durableSeq: 5, lastSeq: 4 }),
      /durable seqno 5 is above the log end 4/,
    );
  });

  it('the log: an append out of order or a compaction past its end throws EngineInvariantError', () => {
    const log = new RaftLog(0, 0, []);
    const entry = (seq: number) => ({ seq, term: 1, kind: EntryKind.EventBatch, data: new Uint8Array(0) });
    log.append([entry(1)]);
    assert.throws(() => log.append([entry(3)]), EngineInvariantError);
    assert.throws(() => log.compactThrough(2), EngineInvariantError);
  });
});
