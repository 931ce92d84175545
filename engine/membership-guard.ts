// MembershipGuard: who may change this node's state. A WalShipping message names its
// sender (leader_region, reporter_shard, candidate_region); a sender that is not a
// member changes nothing here and is refused. A node whose roster lags (it has not yet
// got the kind-4 record that added a newer member) learns about that member from a
// member it already knows: a roster probe, which is a JoinCluster call under its own
// name. docs/protocol.md, "Identity and trust — engine rules", gives the safety argument.
import { MemberRole, type Roster } from './types.js';
import type { JoinResponse, MemberInfo, RpcRequest } from './rpc.js';

/** SenderStanding: member = may act under the protocol's rules; removed / stranger = refused. */
export type SenderStanding = 'member' | 'removed' | 'stranger';

/** RosterViews are the rosters a node knows: the newest in its log, its committed one, and a vouched one. */
export interface RosterViews {
  current: Roster;
  committed: Roster;
  /** vouched is a newer roster a member told us about in a probe answer (null = none newer than the log's). */
  vouched: Roster | null;
}

function active(roster: Roster | null, id: number): boolean {
  const member = roster?.members.find((m) => m.id === id);
  return member !== undefined && member.role !== MemberRole.Removed;
}

function removed(roster: Roster | null, id: number): boolean {
  return roster?.members.find((m) => m.id === id)?.role === MemberRole.Removed;
}

/**
 * standingOf classifies a sender id. Active in any view counts as a member: an uncommitted
 * removal may still be truncated, and a node must keep following a leader its newest record
 * has not made final. Removed is judged on the committed roster (as the spec's `removed`
 * flag is) or on a vouched newer one. Anything else (id 0, an id no view lists) is a stranger.
 */
export function standingOf(id: number, views: RosterViews): SenderStanding {
  if (id === 0) return 'stranger';
  if (active(views.current, id) || active(views.committed, id) || active(views.vouched, id)) return 'member';
  if (removed(views.committed, id) || removed(views.vouched, id) || removed(views.current, id)) return 'removed';
  return 'stranger';
}

/**
 * senderOf is the member id a request claims to come from, or null when the message names
 * none (StreamSegments and FetchSnapshot carry no sender; JoinCluster is the admission path).
 */
export function senderOf(request: RpcRequest): number | null {
  switch (request.method) {
    case 'ShipSegment':
      return request.body.leaderRegion;
    case 'Heartbeat':
      return request.body.leaderRegion !== 0 ? request.body.leaderRegion : request.body.regionId;
    case 'ReportApplied':
      return request.body.reporterShard;
    case 'RequestVote':
      return request.body.candidateRegion;
    case 'TimeoutNow':
      return request.body.leaderRegion;
    case 'StreamSegments':
    case 'FetchSnapshot':
    case 'JoinCluster':
      return null;
  }
}

/**
 * vouchedRosterFrom reads a member's probe answer: the roster it knows, if it is newer than
 * ours and well formed (unique non-zero ids, at most memberCountMax entries), else null.
 */
export function vouchedRosterFrom(answer: JoinResponse, ownVersion: number, memberCountMax: number): Roster | null {
  if (answer.membershipVersion <= ownVersion || answer.members.length === 0) return null;
  if (answer.members.length > memberCountMax * 4) return null;
  const ids = new Set<number>();
  const members: MemberInfo[] = [];
  for (const m of answer.members) {
    if (m.id === 0 || ids.has(m.id) || m.role > MemberRole.Removed) return null;
    ids.add(m.id);
    members.push({ id: m.id, name: m.name, grpcAddr: m.grpcAddr, httpAddr: m.httpAddr, role: m.role });
  }
  members.sort((a, b) => a.id - b.id);
  return { membershipVersion: answer.membershipVersion, nextMemberId: Math.max(...ids) + 1, members };
}

/**
 * RosterProbe paces roster probes: at most one in flight, at most one per interval, each to
 * the next known member in turn. A stranger's message can make us ask (cheaply, bounded); only
 * a member's answer can change what we believe.
 */
export class RosterProbe {
  /** vouchedRoster is the newest roster a member vouched for (see RosterViews.vouched). */
  private vouchedRoster: Roster | null = null;
  private inflightRequestId: number | null = null;
  private lastProbeTick = Number.NEGATIVE_INFINITY;
  private turn = 0;

  get vouched(): Roster | null {
    return this.vouchedRoster;
  }

  /** vouch takes a newer roster a member's answer vouched for (vouchedRosterFrom). */
  vouch(roster: Roster): void {
    this.vouchedRoster = roster;
  }

  /** due: no probe in flight and none started within intervalTicks. */
  due(nowTick: number, intervalTicks: number): boolean {
    return this.inflightRequestId === null && nowTick - this.lastProbeTick >= intervalTicks;
  }

  /** nextTarget picks the next member (not ourselves, not removed) to ask, round robin. */
  nextTarget(roster: Roster, selfId: number): MemberInfo | undefined {
    const candidates = roster.members.filter(
      (m) => m.id !== selfId && m.role !== MemberRole.Removed && m.grpcAddr !== '',
    );
    if (candidates.length === 0) return undefined;
    return candidates[this.turn++ % candidates.length];
  }

  started(requestId: number, nowTick: number): void {
    this.inflightRequestId = requestId;
    this.lastProbeTick = nowTick;
  }

  settled(requestId: number): boolean {
    if (this.inflightRequestId !== requestId) return false;
    this.inflightRequestId = null;
    return true;
  }

  /** forgetIfStale drops the vouched roster once the log's own roster is as new. */
  forgetIfStale(logVersion: number): void {
    if (this.vouchedRoster && this.vouchedRoster.membershipVersion <= logVersion) this.vouchedRoster = null;
  }
}
