// The follower's handler set (roles.ts), whose tick a campaign shares: the election clock, the
// pull's timeout, the status poll (Readiness rules, 3), and a pre-vote once the clock runs out.
import type { EngineCore, RoleHandlers } from './core.js';
import { NOT_LEADING } from './role-not-leading.js';
import { memberById } from './roster.js';

/** tickFollower is the tick of a follower and of a (pre-)candidate. */
export function tickFollower(c: EngineCore): void {
  c.election.tickFollower();
  c.pull.expire(c.ticks, c.limits.pullTimeoutTicks);
  if (c.leaderId !== 0 && c.readiness.pollDue(c.limits.statusPollIntervalTicks)) {
    const leader = memberById(c.currentRoster(), c.leaderId);
    if (leader) c.fx.other({ type: 'pollStatus', leaderHttpAddr: leader.httpAddr });
  }
  if (c.election.timedOut && c.promotable()) c.startPreVote();
}

export const FOLLOWER: RoleHandlers = { ...NOT_LEADING, role: 'follower', tick: tickFollower };
