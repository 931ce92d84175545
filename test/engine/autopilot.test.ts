// Autopilot (engine/autopilot.ts): the pure rule (promote a learner caught up and heard for autopilotStableTicks;
// leaves refused below 2f + 1 voters; the handoff target), and the same rule run by the leader's engine in the
// lockstep world: a learner becomes a voter with no admin op when on, stays a learner when off.
import assert from 'node:assert/strict';
import { DEFAULT_LIMITS, type Effect } from '../../engine/index.js';
import {
  AUTOPILOT_ADMIN_ID,
  autopilotTick,
  EMPTY_AUTOPILOT_MEMORY,
  handoffTarget,
  leaveRefusal,
  type AutopilotMemory,
  type AutopilotView,
} from '../../engine/autopilot.js';
import { MemberRole, type Roster } from '../../engine/types.js';
import { Lockstep } from '../../sim/lockstep.js';

const LIMITS = {
  ...DEFAULT_LIMITS,
  autopilotEnabled: 1,
  autopilotStableTicks: 3,
  autopilotLagSeqMax: 2,
  electionTimeoutTicks: 4,
};

function roster(roles: MemberRole[]): Roster {
  return {
    membershipVersion: 1,
    nextMemberId: roles.length + 1,
    members: roles.map((role, i) => ({
      id: i + 1,
      name: `n${i + 1}`,
      grpcAddr: `n${i + 1}:7000`,
      httpAddr: `http://n${i + 1}:8080`,
      role,
    })),
  };
}

const V = MemberRole.Voter;
const L = MemberRole.Learner;

function run(
  ticks: number,
  view: (tick: number) => Partial<AutopilotView>,
  limits = LIMITS,
  memory: AutopilotMemory = EMPTY_AUTOPILOT_MEMORY,
): { memory: AutopilotMemory; promotedAt: number | null; promoted: number | null } {
  const base: AutopilotView = {
    term: 1,
    roster: roster([V, V, V, L]),
    lastSeq: 100,
    matchOf: () => 100,
    heard: () => true,
  };
  for (let t = 1; t <= ticks; t++) {
    const step = autopilotTick(memory, { ...base, ...view(t) }, limits);
    memory = step.memory;
    if (step.promote !== null) return { memory, promotedAt: t, promoted: step.promote };
  }
  return { memory, promotedAt: null, promoted: null };
}

describe('engine autopilot: the rule', () => {
  it('promotes a caught-up, heard learner after autopilotStableTicks leader ticks, not before', () => {
    const r = run(10, () => ({}));
    assert.equal(r.promoted, 4);
    assert.equal(r.promotedAt, LIMITS.autopilotStableTicks);
  });

  it('never promotes when off', () => {
    assert.equal(run(50, () => ({}), { ...LIMITS, autopilotEnabled: 0 }).promoted, null);
  });

  it('starts over when the learner falls behind by more than autopilotLagSeqMax', () => {
    // Behind at tick 2 (lag 3 > 2): stable again from tick 3, so promoted at tick 5.
    const r = run(10, (t) => ({ matchOf: () => (t === 2 ? 97 : 100) }));
    assert.equal(r.promotedAt, 2 + LIMITS.autopilotStableTicks);
  });

  it('does not count a learner silent for longer than an election timeout (a dead one looks caught up on an idle cluster)', () => {
    assert.equal(run(30, () => ({ heard: () => false })).promoted, null);
  });

  it('starts over in a new term', () => {
    const first = run(LIMITS.autopilotStableTicks - 1, () => ({}));
    assert.equal(first.promoted, null);
    const next = run(LIMITS.autopilotStableTicks - 1, () => ({ term: 2 }), LIMITS, first.memory);
    assert.equal(next.promoted, null, 'the ticks of term 1 do not count in term 2');
  });

  it('refuses a leave below 2f + 1 voters, never a learner leave', () => {
    const f1 = { autopilotFailureTolerance: 1 };
    assert.match(leaveRefusal(roster([V, V, V]), 3, f1) ?? '', /leave 2 voters, fewer than the 3/);
    assert.equal(leaveRefusal(roster([V, V, V, V]), 4, f1), null);
    assert.equal(leaveRefusal(roster([V, V, V, L]), 4, f1), null);
    assert.equal(leaveRefusal(roster([V, V, V]), 3, { autopilotFailureTolerance: 0 }), null);
  });

  it('hands off to the voter holding the most of the log, lowest id on a tie, never a learner or itself', () => {
    const r = roster([V, V, V, L]);
    const match: Record<number, number> = { 1: 50, 2: 40, 3: 45, 4: 99 };
    assert.equal(
      handoffTarget(r, 1, (id) => match[id] ?? 0),
      3,
    );
    assert.equal(
      handoffTarget(r, 3, () => 7),
      1,
    );
    assert.equal(
      handoffTarget(roster([V, L]), 1, () => 7),
      null,
    );
  });
});

describe('engine autopilot: run by the leader', () => {
  const promoted = (c: Lockstep, name: string): boolean =>
    c
      .node('a')
      .status()
      .roster.members.find((m) => m.name === name)?.role === MemberRole.Voter;

  it('promotes a founding learner with no admin op, answering adminResult for AUTOPILOT_ADMIN_ID', () => {
    const c = new Lockstep();
    c.limits = { ...c.limits, autopilotEnabled: 1, autopilotStableTicks: 5 };
    c.bootstrap(['a', 'b', 'c'], ['d']);
    assert.ok(c.elect('a'));
    c.propose('x');
    assert.ok(
      c.tickUntil(() => promoted(c, 'd')),
      'd became a voter',
    );
    const result = c
      .node('a')
      .effects.find(
        (e): e is Extract<Effect, { type: 'adminResult' }> =>
          e.type === 'adminResult' && e.adminId === AUTOPILOT_ADMIN_ID,
      );
    assert.equal(result?.code, 'done');
  });

  it('leaves a learner a learner when off', () => {
    const c = new Lockstep();
    c.bootstrap(['a', 'b', 'c'], ['d']);
    assert.ok(c.elect('a'));
    c.propose('x');
    c.tick(100);
    assert.equal(promoted(c, 'd'), false);
  });

  it('refuses a leave below the fault tolerance and carries one out above it', () => {
    const c = new Lockstep();
    c.limits = { ...c.limits, autopilotFailureTolerance: 1 };
    c.bootstrap(['a', 'b', 'c', 'd']);
    assert.ok(c.elect('a'));
    c.propose('x');
    const leaveResult = (id: number) =>
      c
        .node('a')
        .effects.find(
          (e): e is Extract<Effect, { type: 'adminResult' }> => e.type === 'adminResult' && e.adminId === id,
        );
    const first = c.admin('leave', 'd');
    assert.ok(c.tickUntil(() => leaveResult(first) !== undefined));
    assert.equal(leaveResult(first)?.code, 'done');
    const second = c.admin('leave', 'c');
    assert.ok(c.tickUntil(() => leaveResult(second) !== undefined));
    assert.equal(leaveResult(second)?.code, 'below-fault-tolerance');
    assert.equal(
      c
        .node('a')
        .status()
        .roster.members.find((m) => m.name === 'c')?.role,
      MemberRole.Voter,
    );
  });
});
