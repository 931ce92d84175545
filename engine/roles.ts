// RoleHandlers: what a node does differently by role, chosen once when its role changes
// (EngineCore.setRole), as etcd's raft sets `r.step = stepLeader | stepCandidate | stepFollower` in
// becomeX. The core runs what every role shares (admission, the term rule, removal) and hands the
// rest to the set in force: role-leader.ts, role-candidate.ts, role-follower.ts, role-joiner.ts.
import type { CallContext } from './calls.js';
import type { EngineCore } from './core.js';
import type { HeartbeatResponse, JoinResponse, ShipSegmentResponse, VoteResponse } from './rpc.js';
import type { Role } from './types.js';

export interface RoleHandlers {
  readonly role: Role;
  /** tick: one tick's work (the election clock, heartbeats, ship retries, dialling a join …). */
  tick(c: EngineCore): void;
  /** onShipAnswer: a follower answered our ShipSegment (only a leader acts on it). */
  onShipAnswer(
    c: EngineCore,
    requestId: number,
    ctx: Extract<CallContext, { method: 'ShipSegment' }>,
    body: ShipSegmentResponse,
  ): void;
  /** onHeartbeatAnswer: a member accepted or refused our heartbeat (only a leader acts on it). */
  onHeartbeatAnswer(c: EngineCore, ctx: Extract<CallContext, { method: 'Heartbeat' }>, body: HeartbeatResponse): void;
  /** onVoteAnswer: a voter answered our (pre-)vote request (only the campaign that asked counts it). */
  onVoteAnswer(c: EngineCore, ctx: Extract<CallContext, { method: 'RequestVote' }>, body: VoteResponse): void;
  /** onJoinAnswer: the cluster answered our JoinCluster (only a joiner acts on it). */
  onJoinAnswer(c: EngineCore, body: JoinResponse): void;
}

/** PASSIVE is the set of a role that acts on none of these: a removed node (and the base of the others). */
export const PASSIVE: Omit<RoleHandlers, 'role'> = {
  tick: () => {},
  onShipAnswer: () => {},
  onHeartbeatAnswer: () => {},
  onVoteAnswer: () => {},
  onJoinAnswer: () => {},
};

export const REMOVED: RoleHandlers = { ...PASSIVE, role: 'removed' };
