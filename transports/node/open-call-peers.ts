// Which members this node's open peer calls (transports/grpc/open-call-carrier.ts) still serve. A leader sends
// Heartbeats to every other member, a follower ReportApplied to its leader alone; a call to anyone else can
// carry nothing useful, and left alone it would stay open until its idle timeout (OPEN_CALL_IDLE_MS). The node
// asks this when its engine's leadership or roster changes and ends the calls to the others.
import { MemberRole, type EngineLeadership, type Roster } from '../../engine/types.js';

/** OpenCallPeers: the addresses each carried method may still have a call open to. */
export interface OpenCallPeers {
  heartbeat: ReadonlySet<string>;
  report: ReadonlySet<string>;
}

/**
 * openCallPeers: for a leader every other member's address; for a follower with a known leader, its leader's.
 * A member the roster lists as Removed has left: a call to it ends too (the engine's next send to it, if any,
 * opens a new one).
 */
export function openCallPeers(leadership: EngineLeadership, selfId: number, roster: Roster): OpenCallPeers {
  const others = roster.members.filter((m) => m.id !== selfId && m.role !== MemberRole.Removed);
  if (leadership.role === 'leader') return { heartbeat: new Set(others.map((m) => m.grpcAddr)), report: new Set() };
  const leader = others.find((m) => m.id === leadership.leaderId);
  return { heartbeat: new Set(), report: new Set(leader ? [leader.grpcAddr] : []) };
}

/** sameLeadership: nothing openCallPeers reads changed (the term alone does not move a call's peer). */
export function sameLeadership(a: EngineLeadership, b: EngineLeadership): boolean {
  return a.role === b.role && a.leaderId === b.leaderId && a.membershipVersion === b.membershipVersion;
}
