// RoleHandlers: what a node does differently by role, chosen once when its role changes
// (EngineCore.setRole), as etcd's raft sets `r.step = stepLeader | stepCandidate | stepFollower` in
// becomeX. The core runs what every role shares (admission, the term rule, removal) and hands the
// rest to the set in force: role-leader.ts, role-candidate.ts, role-follower.ts, role-joiner.ts,
// role-not-leading.ts (what every role but the leader shares, and the removed node).
import type { CallContext } from './calls.js';
import type {
  AppliedReport,
  HeartbeatResponse,
  JoinRequest,
  JoinResponse,
  ShipSegmentResponse,
  VoteResponse,
} from './rpc.js';
import type { AdminOp, Proposal, Role } from './types.js';

/**
 * RoleHandlersOf is generic in the core it acts on so that this file needs nothing of core.ts: the core
 * holds a table of these (role-table.ts, given to its constructor) and the role files name it as
 * `RoleHandlers` (core.ts), so no file of the engine imports in a circle.
 */
export interface RoleHandlersOf<EngineCore> {
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
  /** onPersisted: our disk holds more of our log (a leader counts it toward the commit; others report it). */
  onPersisted(c: EngineCore): void;
  /** foldReport: a follower's ReportApplied (only the leader it reports to folds it); true when folded. */
  foldReport(c: EngineCore, req: AppliedReport): boolean;
  /** onJoin: a well-formed JoinCluster (only a leader admits; others refuse, naming the leader). */
  onJoin(c: EngineCore, callId: number, req: JoinRequest): void;
  /** onPropose: client commands (only a leader appends them; others refuse with the leader's address). */
  onPropose(c: EngineCore, proposals: readonly Proposal[]): void;
  /** onAdmin: an operator's command (only a leader carries it out). */
  onAdmin(c: EngineCore, adminId: number, op: AdminOp): void;
}
