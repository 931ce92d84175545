// The checkers for the rules the faults of issue 12 aim at: each fires on a hand-made break and stays
// quiet on the honest version, and each catches a deliberately broken engine (buggy-engines-power.ts)
// in a few default seeds, by its own name.
import assert from 'node:assert/strict';
import { encodeRoster } from '../../engine/roster.js';
import { EntryKind, type Effect, type HardState } from '../../engine/types.js';
import type { HeartbeatRequest, RpcRequest } from '../../engine/rpc.js';
import { BarrierChecker } from '../../sim/checkers/barrier.js';
import { CheckerSuite } from '../../sim/checkers/suite.js';
import type { StepRecord } from '../../sim/checkers/checker.js';
import { LeaderStepDownChecker } from '../../sim/checkers/leader-step-down.js';
import { MatchHonestyChecker } from '../../sim/checkers/match-honesty.js';
import { ReportHonestyChecker } from '../../sim/checkers/report-honesty.js';
import { RosterReplayChecker } from '../../sim/checkers/roster-replay.js';
import { Coverage, CoverageTally } from '../../sim/coverage.js';
import { CrashPoints } from '../../sim/crash-points.js';
import { lateArrivalUs, slowSnapshotArrivalUs } from '../../sim/late-answers.js';
import type { EngineFactory } from '../../sim/node.js';
import { optionsFor } from '../../sim/options.js';
import { Prng } from '../../sim/prng.js';
import { runSim } from '../../sim/run.js';
import type { SimNode } from '../../sim/node.js';
import { InvariantViolation } from '../../sim/violation.js';
import {
  countsUnackedShips,
  forgetsCompactedRoster,
  neverStepsDown,
  reportsUnmatched,
  savesHardStateLast,
} from './buggy-engines-power.js';
import { entry, makeNode, roster, status, world } from './fixtures.js';

function violates(invariant: string, run: () => void): void {
  assert.throws(run, (error: unknown) => error instanceof InvariantViolation && error.invariant === invariant);
}

function step(over: Partial<StepRecord> & Pick<StepRecord, 'node' | 'after'>): StepRecord {
  return { input: { type: 'tick' }, effects: [], before: null, nowUs: 0, ...over };
}

function hardState(over: Partial<HardState>): HardState {
  return {
    term: 0,
    votedFor: 0,
    selfId: 1,
    commitSeq: 0,
    rosterBase: null,
    halted: '',
    reseed: false,
    removed: false,
    ...over,
  };
}

/** synced writes entries to a node's WAL and syncs them. */
function synced(node: SimNode, entries: ReturnType<typeof entry>[]): void {
  node.storage.append(entries[0]!.seq, entries, 0, 0);
  node.storage.syncDue(1);
}

const voteRequest = (term: number, candidate: number, prevote = false): RpcRequest => ({
  method: 'RequestVote',
  body: { term, candidateRegion: candidate, lastLogTerm: 0, lastLogSeq: 0, prevote, transfer: false },
});
const voteReply = (term: number, granted: boolean): Effect => ({
  type: 'reply',
  callId: 1,
  response: { method: 'RequestVote', body: { term, granted, removed: false } },
});
const report = (seq: number, term: number, leader: number): Effect => ({
  type: 'send',
  requestId: 1,
  to: `n${leader}:7000`,
  toId: leader,
  request: {
    method: 'ReportApplied',
    body: { reporterShard: 2, sourceShard: leader, appliedSeqno: seq, reporterTerm: term, capabilities: 1 },
  },
});

function heartbeat(term: number, toId: number, lag: Record<number, number>): Effect {
  const body: HeartbeatRequest = {
    shardId: 1,
    regionId: 1,
    entityCount: 0,
    signalThroughputEps: 0,
    diskBytes: 0,
    replicationLag: lag,
    lastHeartbeatNs: '0',
    term,
    leaderRegion: 1,
    streamBaseline: 0,
    prevLogTerm: 0,
    prevLogSeq: 0,
    buildVersion: '',
    leaderLastSeq: 0,
  };
  return { type: 'send', requestId: 7, to: `n${toId}:7000`, toId, request: { method: 'Heartbeat', body } };
}

describe('sim/checkers for barriers, reports, step-down, rosters and matches (hand-made states)', () => {
  it('barrier: a vote, a term or a report that leaves before it is durable fails', () => {
    const checker = new BarrierChecker();
    const node = makeNode(1);
    node.storage.saveHardState(hardState({ term: 3, votedFor: 0, selfId: 2 }));
    violates('barrier', () => checker.beforeEffect(node, voteReply(3, true), voteRequest(3, 1)));
    checker.beforeEffect(node, voteReply(3, true), voteRequest(4, 1, true)); // a pre-vote saves nothing
    node.storage.saveHardState(hardState({ term: 3, votedFor: 1, selfId: 2 }));
    checker.beforeEffect(node, voteReply(3, true), voteRequest(3, 1));
    violates('barrier', () => checker.beforeEffect(node, voteReply(4, false), voteRequest(4, 5)));
    synced(node, [entry(1, 3), entry(2, 3)]);
    node.storage.append(3, [entry(3, 3)], 0, 1_000);
    checker.beforeEffect(node, report(2, 3, 1), null);
    violates('barrier', () => checker.beforeEffect(node, report(3, 3, 1), null));
  });

  it('the suite hands an effect only to the checkers whose beforeEffect acts on its type, and through it the barrier still fails a report that leaves before it is durable', () => {
    const suite = new CheckerSuite({ nodes: [], nodeByMemberId: () => undefined });
    const names = (type: Effect['type']): string[] => suite.beforeEffectCheckers(type).map((c) => c.name);
    assert.deepEqual(names('send'), ['barrier', 'report-honesty', 'overlay']);
    assert.deepEqual(names('reply'), ['barrier', 'report-honesty']);
    assert.deepEqual(names('streamChunk'), ['barrier']);
    assert.deepEqual(names('resetStateMachine'), ['applied-monotonic', 'roster-replay']);
    assert.deepEqual(names('proposalResult'), []);
    assert.deepEqual(names('apply'), []);
    // A checker that declares no types hears every effect.
    const seen: string[] = [];
    const all = new CheckerSuite({ nodes: [], nodeByMemberId: () => undefined }, [
      { name: 'every-effect', beforeEffect: (_node, effect) => void seen.push(effect.type) },
    ]);
    all.beforeEffect(makeNode(1), { type: 'resetStateMachine' }, null);
    all.beforeEffect(makeNode(1), { type: 'compact', throughSeq: 1 }, null);
    assert.deepEqual(seen, ['resetStateMachine', 'compact']);
    const node = makeNode(1);
    node.storage.saveHardState(hardState({ term: 3, votedFor: 1, selfId: 2 }));
    synced(node, [entry(1, 3), entry(2, 3)]);
    node.storage.append(3, [entry(3, 3)], 0, 1_000);
    suite.beforeEffect(node, report(2, 3, 1), null);
    violates('barrier', () => suite.beforeEffect(node, report(3, 3, 1), null));
  });

  it('report honesty: applied_seqno beyond the prefix that matches the leader fails', () => {
    const [leader, follower] = [makeNode(0), makeNode(1)];
    const checker = new ReportHonestyChecker(world([leader, follower]));
    leader.state = 'up';
    leader.status = status({ id: 1, role: 'leader', term: 4 });
    leader.storage.written.resetTo(0, 0, [entry(1, 1), entry(2, 1), entry(3, 4)]);
    synced(follower, [entry(1, 1), entry(2, 1), entry(3, 2)]);
    checker.beforeEffect(follower, report(2, 4, 1), null);
    violates('report-honesty', () => checker.beforeEffect(follower, report(3, 4, 1), null));
    checker.beforeEffect(follower, report(3, 3, 1), null); // a report of another term is not judged against this leader
  });

  it('leader step-down: a leader that heard from no quorum for two election timeouts fails', () => {
    const [n1, n2, n3] = [makeNode(0), makeNode(1), makeNode(2)];
    const coverage = new Coverage();
    const checker = new LeaderStepDownChecker({ ...world([n1, n2, n3]), coverage });
    const leaderStatus = status({ id: 1, role: 'leader', term: 2, roster: roster([1, 2, 3]) });
    checker.afterStep(
      step({
        node: n1,
        after: leaderStatus,
        input: { type: 'response', requestId: 0, response: { method: 'TimeoutNow', body: { accepted: true } } },
      }),
    );
    // Heard from n2 every 5 ticks: never silent.
    for (let tick = 1; tick <= 40; tick++) {
      const effects: Effect[] = tick % 5 === 0 ? [heartbeat(2, 2, {})] : [];
      checker.afterStep(step({ node: n1, after: leaderStatus, effects }));
      if (tick % 5 === 0) {
        checker.afterStep(
          step({
            node: n1,
            after: leaderStatus,
            input: {
              type: 'response',
              requestId: 7,
              response: {
                method: 'Heartbeat',
                body: { acknowledged: true, term: 2, accepted: true, capabilities: 1, removed: false },
              },
            },
          }),
        );
      }
    }
    // Then silence: 2 election timeouts + 1 tick of slack are allowed, one more is not.
    for (let tick = 1; tick <= 21; tick++) checker.afterStep(step({ node: n1, after: leaderStatus }));
    assert.equal(coverage.counts['leader-quorum-silent'], 1);
    violates('leader-step-down', () => checker.afterStep(step({ node: n1, after: leaderStatus })));
    // Stepping down on a tick in the same term counts as a check-quorum step-down.
    const fresh = new LeaderStepDownChecker({ ...world([n1, n2, n3]), coverage });
    fresh.afterStep(step({ node: n1, after: leaderStatus }));
    fresh.afterStep(step({ node: n1, before: leaderStatus, after: { ...leaderStatus, role: 'follower' } }));
    assert.equal(coverage.counts['check-quorum-step-down'], 1);
  });

  it('roster replay: a roster that differs from the newest kind-4 record in the log (or its base) fails', () => {
    const node = makeNode(0);
    const checker = new RosterReplayChecker();
    const v2 = { ...roster([1, 2], [3]), membershipVersion: 2 };
    node.config = { bootstrapRoster: roster([1, 2]) } as SimNode['config'];
    checker.onStart(node);
    const k4 = { ...entry(2, 1), kind: EntryKind.Membership, data: encodeRoster(v2) };
    node.storage.written.write(1, [entry(1, 1), k4]);
    checker.onAppend(node, 1, [entry(1, 1), k4]);
    checker.afterStep(step({ node, after: status({ roster: v2 }) }));
    violates('roster-replay', () => checker.afterStep(step({ node, after: status({ roster: roster([1, 2]) }) })));
    // The record is truncated: the founding roster is in force again.
    node.storage.written.write(2, []);
    checker.onAppend(node, 2, []);
    checker.afterStep(step({ node, after: status({ roster: roster([1, 2]) }) }));
    violates('roster-replay', () => checker.afterStep(step({ node, after: status({ roster: v2 }) })));
    // A step cut short by a boundary crash is not judged.
    checker.afterStep(step({ node, after: status({ roster: v2 }), cutShort: true }));
  });

  it('match honesty: a heartbeat counting an unsynced match, or a commit without a durable majority, fails', () => {
    const [n1, n2, n3] = [makeNode(0), makeNode(1), makeNode(2)];
    const checker = new MatchHonestyChecker(world([n1, n2, n3]));
    const log = [entry(1, 2), entry(2, 2), entry(3, 2), entry(4, 2)];
    n1.storage.written.resetTo(0, 0, log);
    synced(n1, log);
    synced(n2, log.slice(0, 2));
    for (const n of [n2, n3]) {
      n.state = 'up';
      n.status = status({ id: n.index + 1, term: 2 });
    }
    const leader = status({ id: 1, role: 'leader', term: 2, lastSeq: 4, commitSeq: 1, roster: roster([1, 2, 3]) });
    checker.afterStep(step({ node: n1, after: leader, effects: [heartbeat(2, 2, { 2: 2 })] }));
    violates('match-honesty', () =>
      checker.afterStep(step({ node: n1, after: leader, effects: [heartbeat(2, 2, { 2: 1 })] })),
    );
    checker.afterStep(step({ node: n1, before: leader, after: { ...leader, commitSeq: 2 } }));
    violates('match-honesty', () =>
      checker.afterStep(step({ node: n1, before: leader, after: { ...leader, commitSeq: 3 } })),
    );
  });
});

describe('sim fault parts: crash points, late answers, coverage tally', () => {
  it('a crash trap springs at its boundary on its node, once, and expires', () => {
    const points = new CrashPoints();
    const hs: Effect = { type: 'saveHardState', hardState: hardState({ term: 2 }) };
    const append: Effect = { type: 'append', fromSeq: 1, entries: [entry(1, 2)] };
    points.arm({
      boundary: 'after-append',
      nodeIndex: 1,
      untilUs: 100,
      votesOnly: false,
      replayDelayMs: -1,
      downMs: 10,
    });
    assert.equal(points.spring(0, [hs, append], 5), null, 'another node');
    assert.equal(points.spring(1, [hs, append], 5)?.carryCount, 2, 'right after the append');
    assert.equal(points.spring(1, [hs, append], 6), null, 'used up');
    points.arm({ boundary: 'after-reply', nodeIndex: -1, untilUs: 100, votesOnly: true, replayDelayMs: 5, downMs: 10 });
    assert.equal(points.spring(2, [hs, voteReply(2, false)], 7), null, 'a refusal is not a vote');
    assert.equal(points.spring(2, [hs, voteReply(2, true), append], 8)?.carryCount, 2);
    points.arm({
      boundary: 'after-hard-state',
      nodeIndex: -1,
      untilUs: 100,
      votesOnly: false,
      replayDelayMs: -1,
      downMs: 10,
    });
    assert.equal(points.spring(0, [hs, append], 101), null, 'expired');
    assert.equal(points.armedCount, 0);
  });

  it('a late answer is held 0.5-3 election timeouts and never past its deadline', () => {
    const prng = new Prng('late');
    const electionUs = 1_000_000;
    for (let i = 0; i < 200; i++) {
      const nowUs = 10_000_000;
      const deadlineUs = nowUs + 2 * electionUs;
      const at = lateArrivalUs(prng, 1, nowUs + 5_000, nowUs, deadlineUs, electionUs);
      assert.ok(at !== null && at - nowUs >= 0.5 * electionUs && at < deadlineUs, `held to ${at}`);
    }
    assert.equal(
      lateArrivalUs(prng, 1, 1_000, 0, 0.3 * electionUs, electionUs),
      null,
      'too close to its deadline to be late',
    );
    assert.equal(lateArrivalUs(prng, 0, 1_000, 0, 2 * electionUs, electionUs), null);
  });

  it('a slow snapshot lands from half an election timeout to just before its deadline', () => {
    const prng = new Prng('slow');
    const electionUs = 1_000_000;
    const nowUs = 10_000_000;
    const deadlineUs = nowUs + 4 * electionUs;
    let pastPullTimeout = 0;
    for (let i = 0; i < 200; i++) {
      const at = slowSnapshotArrivalUs(prng, 1, nowUs + 5_000, nowUs, deadlineUs, electionUs);
      assert.ok(at !== null && at - nowUs >= 0.5 * electionUs && at < deadlineUs, `held to ${at}`);
      if (at - nowUs > 3 * electionUs) pastPullTimeout++;
    }
    assert.ok(pastPullTimeout > 20, `only ${pastPullTimeout} of 200 outlasted a 3-election-timeout pull timeout`);
    assert.equal(slowSnapshotArrivalUs(prng, 0, 1_000, 0, deadlineUs, electionUs), null);
  });

  it('a sweep tally names the situations no seed reached', () => {
    const tally = new CoverageTally();
    const a = new Coverage();
    a.add('late-answer', 3);
    tally.add(a.counts);
    tally.add(new Coverage().counts);
    const lines = tally.lines().join('\n');
    assert.match(lines, /late-answer +3 in 1 of 2 seeds/);
    assert.match(lines, /NEVER REACHED: .*kind4-truncated/);
    assert.doesNotMatch(lines.split('NEVER REACHED')[1]!, /late-answer,/);
  });
});

/** POWER_MUTANT_SEED_COUNT_MAX: each broken engine below must be caught within this many default seeds. */
const POWER_MUTANT_SEED_COUNT_MAX = 8;
/** SNAPSHOT_BEHIND_SEED_COUNT_MAX: the default seeds within which a slow snapshot must arrive behind its puller. */
const SNAPSHOT_BEHIND_SEED_COUNT_MAX = 16;

describe('sim: the newer checkers catch deliberately broken engines', function () {
  this.timeout(300_000);
  for (const [name, factory, invariant] of [
    ['saves its hard state after the messages', savesHardStateLast, 'barrier'],
    ['reports its durable frontier unmatched', reportsUnmatched, 'report-honesty'],
    ['never steps down', neverStepsDown, 'leader-step-down'],
    ['forgets the roster at its log base', forgetsCompactedRoster, 'roster-replay'],
    ['counts acknowledgements a follower did not give', countsUnackedShips, 'match-honesty'],
  ] as [string, EngineFactory, string][]) {
    it(`catches an engine that ${name} (${invariant}) within ${POWER_MUTANT_SEED_COUNT_MAX} default seeds`, () => {
      for (let seed = 1; seed <= POWER_MUTANT_SEED_COUNT_MAX; seed++) {
        const result = runSim(optionsFor(seed), { engineFactory: factory });
        if (result.failure) {
          assert.equal(result.failure.invariant, invariant, `seed ${seed}: ${result.failure.message}`);
          return;
        }
      }
      assert.fail(`not caught in ${POWER_MUTANT_SEED_COUNT_MAX} seeds`);
    });
  }

  // With live streams (docs/protocol.md) the first default seed that shows it is 12 (25 of seeds 1..200 do).
  it(`slow snapshot transfers bring a snapshot to a puller that has applied past it (applied-monotonic needs it) within ${SNAPSHOT_BEHIND_SEED_COUNT_MAX} default seeds`, () => {
    for (let seed = 1; seed <= SNAPSHOT_BEHIND_SEED_COUNT_MAX; seed++) {
      const result = runSim(optionsFor(seed));
      assert.equal(result.failure, null, `seed ${seed}: ${result.failure?.message}`);
      if (result.coverage['snapshot-arrived-behind'] > 0) return;
    }
    assert.fail(`no snapshot arrived behind its puller's applied seqno in seeds 1..${SNAPSHOT_BEHIND_SEED_COUNT_MAX}`);
  });

  it('the boundary faults reach the rare situations these checkers need (coverage counts)', () => {
    const tally = new CoverageTally();
    const knobs = {
      'safety-s': 40,
      late: 0.2,
      'boundary-crash-rate': 20,
      'conf-burst-rate': 4,
      'replay-rate': 0.05,
      joiners: 2,
    };
    for (let seed = 1; seed <= 3; seed++) tally.add(runSim(optionsFor(seed, knobs)).coverage);
    for (const situation of [
      'late-answer',
      'late-answer-new-term',
      'crash-after-hard-state',
      'crash-after-reply',
      'crash-unsynced-append',
      'replay-after-crash',
      'conf-change-in-election',
      'leader-quorum-silent',
      'check-quorum-step-down',
    ] as const) {
      assert.ok(
        tally.totals[situation] > 0,
        `${situation} never reached in seeds 1..3 with ${JSON.stringify(knobs)}:\n${tally.lines().join('\n')}`,
      );
    }
  });
});
