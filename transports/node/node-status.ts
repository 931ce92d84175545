// The document GET /status serves: what a peer's status-poll readiness path reads
// (durableLastSeq), and what an operator reads. README.md lists every field.
import { MemberRole, type EngineStatus } from '../../engine/types.js';
import { memberById } from '../../engine/roster.js';
import type { StatusResponse } from '../../proto/gen/svc/admin/v1/admin.js';

const ROLE_NAMES: Record<number, string> = {
  [MemberRole.Voter]: 'voter',
  [MemberRole.Learner]: 'learner',
  [MemberRole.Removed]: 'removed',
};

/**
 * AdminOnlyStatusField names the StatusResponse fields /status leaves out: the node's own heartbeat
 * measurements and addresses, the last heartbeat, and the two maps whose keys proto holds as numbers.
 */
type AdminOnlyStatusField =
  | 'versionMajorSpread'
  | 'signalThroughputEps'
  | 'diskBytes'
  | 'lastHeartbeat'
  | 'grpcAddr'
  | 'httpAddr'
  | 'metricsAddr'
  | 'versionsSeen'
  | 'lagHighWaterSeq';

/**
 * NodeStatusDocument is Admin.Status's StatusResponse (the one list of the fields, in admin.proto) less
 * AdminOnlyStatusField, with JSON's string-keyed maps. durableLastSeq is the last seqno synced to this
 * node's WAL (the status-poll readiness target); compactedSeq the last seqno its log no longer holds;
 * healthy what /health answers: ready, and not removed, halted, reseeding or failed.
 */
export type NodeStatusDocument = Omit<StatusResponse, AdminOnlyStatusField> & {
  /** lagGaugeByShard is StatusResponse.lagHighWaterSeq keyed by the shard as a string. */
  lagGaugeByShard: Record<string, number>;
  /** versionsSeen is StatusResponse.versionsSeen keyed by the member id as a string. */
  versionsSeen: Record<string, string>;
};

export function statusDocument(
  s: EngineStatus,
  extra: { failed: string; buildVersion: string; entityCount: number; compactedSeq: number },
): NodeStatusDocument {
  const leader = s.leaderId === 0 ? undefined : memberById(s.roster, s.leaderId);
  return {
    id: s.id,
    name: s.name,
    role: s.role,
    term: s.term,
    leaderId: s.leaderId,
    leaderGrpcAddr: leader?.grpcAddr ?? '',
    leaderHttpAddr: leader?.httpAddr ?? '',
    durableLastSeq: s.durableSeq,
    lastSeq: s.lastSeq,
    commitSeq: s.commitSeq,
    appliedSeq: s.appliedSeq,
    snapshotSeq: s.snapshotSeq,
    compactedSeq: extra.compactedSeq,
    ready: s.ready,
    healthy: isHealthy(s, extra.failed),
    halted: s.halted,
    reseed: s.reseed,
    removed: s.removed,
    failed: extra.failed,
    buildVersion: extra.buildVersion,
    membershipVersion: s.roster.membershipVersion,
    members: s.roster.members.map((m) => ({
      id: m.id,
      name: m.name,
      grpcAddr: m.grpcAddr,
      httpAddr: m.httpAddr,
      role: ROLE_NAMES[m.role] ?? String(m.role),
    })),
    lagGaugeByShard: Object.fromEntries(Object.entries(s.lagGaugeByShard).map(([k, v]) => [k, v])),
    versionsSeen: Object.fromEntries(Object.entries(s.versionsSeen).map(([k, v]) => [k, v])),
    entityCount: extra.entityCount,
  };
}

/** isHealthy is /health's answer: the readiness latch converged and nothing has taken the node out. */
export function isHealthy(s: EngineStatus, failed: string): boolean {
  return s.ready && !s.removed && s.halted === '' && !s.reseed && failed === '';
}

/** unhealthyReason names why /health answers 503. */
export function unhealthyReason(s: EngineStatus, failed: string): string {
  if (failed !== '') return `failed: ${failed}`;
  if (s.removed) return 'removed from the cluster';
  if (s.halted !== '') return `segment receiver halted: ${s.halted}`;
  if (s.reseed) return 'reseeding after storage corruption';
  if (!s.ready) return s.role === 'joiner' ? 'joining the cluster' : 'catching up with the leader';
  return '';
}
