// Autopilot: the leader's membership housekeeping without an operator, after hashicorp/raft-autopilot
// (its ideas, none of its code): a learner that is caught up (within autopilotLagSeqMax entries of the
// leader's log) and heard from, for autopilotStableTicks leader ticks in a row, is promoted to voter.
// A voter is never removed by it: a voter that is gone stays until an operator removes it or it leaves
// by itself (`svc members leave`), and a leave is refused when it would leave fewer voters than
// autopilotFailureTolerance needs (2f + 1, raft-autopilot's MinQuorum). handoffTarget picks whom a
// stopping leader hands over to.
//
// Pure: ticks, not clocks. The engine holds the memory between its leader ticks and carries a promotion
// out as an admin `promote` (so every check a promotion passes still applies); the simulator runs the
// same engine, so the same rule runs in both.
import { MemberRole, type EngineLimits, type Roster } from './types.js';

export type AutopilotLimits = Pick<
  EngineLimits,
  | 'autopilotEnabled'
  | 'autopilotLagSeqMax'
  | 'autopilotStableTicks'
  | 'autopilotFailureTolerance'
  | 'electionTimeoutTicks'
>;

/** AUTOPILOT_ADMIN_ID is the admin id of the promotions autopilot asks for (drivers number theirs from 1). */
export const AUTOPILOT_ADMIN_ID = 0;

/**
 * AutopilotMemory: per learner, how many leader ticks in a row it has been healthy and how long it has
 * been silent, counted within one term (a new leader, or a new term, starts over).
 */
export interface AutopilotMemory {
  readonly term: number;
  readonly learners: ReadonlyMap<number, { readonly healthyTicks: number; readonly silentTicks: number }>;
}

export const EMPTY_AUTOPILOT_MEMORY: AutopilotMemory = { term: 0, learners: new Map() };

/** AutopilotView is what the leader knows at a tick. */
export interface AutopilotView {
  term: number;
  roster: Roster;
  /** lastSeq is the leader's log end. */
  lastSeq: number;
  /** matchOf is a follower's matched frontier as the leader last heard it. */
  matchOf(id: number): number;
  /** heard: the follower answered the leader since the last check-quorum count began. */
  heard(id: number): boolean;
}

/**
 * autopilotTick advances the memory by one leader tick and names the learner to promote now (the
 * longest-stable one, lowest id on a tie), or null. Off (autopilotEnabled 0): never promotes.
 */
export function autopilotTick(
  memory: AutopilotMemory,
  view: AutopilotView,
  limits: AutopilotLimits,
): { memory: AutopilotMemory; promote: number | null } {
  if (limits.autopilotEnabled === 0) return { memory: EMPTY_AUTOPILOT_MEMORY, promote: null };
  const before = memory.term === view.term ? memory.learners : new Map<number, never>();
  const learners = new Map<number, { healthyTicks: number; silentTicks: number }>();
  let promote: number | null = null;
  let best = 0;
  for (const m of view.roster.members) {
    // A filtered learner holds some communities only: never a voter while filtered (docs/protocol.md).
    if (m.role !== MemberRole.Learner || view.roster.filters?.[m.id]) continue;
    // A learner not heard yet in this term counts as silent (capped: the count only needs to pass the bound).
    const silentCap = limits.electionTimeoutTicks + 1;
    const prev = before.get(m.id) ?? { healthyTicks: 0, silentTicks: silentCap };
    const silentTicks = view.heard(m.id) ? 0 : Math.min(prev.silentTicks + 1, silentCap);
    // Heard within an election timeout (a dead learner's match stands still, and on an idle cluster that
    // still looks caught up) and within the lag bound.
    const healthy =
      silentTicks <= limits.electionTimeoutTicks && view.lastSeq - view.matchOf(m.id) <= limits.autopilotLagSeqMax;
    const healthyTicks = healthy ? prev.healthyTicks + 1 : 0;
    learners.set(m.id, { healthyTicks, silentTicks });
    if (healthyTicks >= limits.autopilotStableTicks && healthyTicks > best) {
      best = healthyTicks;
      promote = m.id;
    }
  }
  return { memory: { term: view.term, learners }, promote };
}

/** votersNeeded is how many voters tolerate autopilotFailureTolerance failures: 2f + 1. */
export function votersNeeded(limits: Pick<EngineLimits, 'autopilotFailureTolerance'>): number {
  return 2 * limits.autopilotFailureTolerance + 1;
}

/**
 * leaveRefusal: why member `memberId` may not leave `roster` by itself (null: it may). A learner may
 * always leave; a voter only while the voters left behind still tolerate autopilotFailureTolerance failures.
 */
export function leaveRefusal(
  roster: Roster,
  memberId: number,
  limits: Pick<EngineLimits, 'autopilotFailureTolerance'>,
): string | null {
  const member = roster.members.find((m) => m.id === memberId);
  if (member?.role !== MemberRole.Voter) return null;
  const voters = roster.members.filter((m) => m.role === MemberRole.Voter).length;
  const needed = votersNeeded(limits);
  if (voters - 1 >= needed) return null;
  return (
    `${member.name} leaving would leave ${voters - 1} voters, fewer than the ${needed} that tolerate ` +
    `${limits.autopilotFailureTolerance} failure(s) (autopilotFailureTolerance); remove it explicitly if that is meant`
  );
}

/**
 * handoffTarget is the voter other than `selfId` that holds the most of the leader's log (lowest id on a
 * tie), or null when there is none: whom a stopping leader hands leadership to.
 */
export function handoffTarget(roster: Roster, selfId: number, matchOf: (id: number) => number): number | null {
  let target: number | null = null;
  for (const m of [...roster.members].sort((a, b) => a.id - b.id)) {
    if (m.role !== MemberRole.Voter || m.id === selfId) continue;
    if (target === null || matchOf(m.id) > matchOf(target)) target = m.id;
  }
  return target;
}
