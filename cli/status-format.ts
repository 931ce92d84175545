// The text `svc status` prints: one line for the cluster as the first node sees it, then a block
// per member with its seqnos, readiness, measurements and the last heartbeat it sent or received.
import type { HeartbeatFields, StatusResponse } from '../proto/gen/svc/admin/v1/admin.js';
import { versionMajorSpread } from '../transports/admin/status-response.js';

export interface MemberStatus {
  name: string;
  status: StatusResponse | null;
  /** error says why the member did not answer (empty when it did). */
  error: string;
}

export function formatClusterStatus(first: StatusResponse, nodes: MemberStatus[], nowMs: number): string {
  const leader = first.members.find((m) => m.id === first.leaderId);
  const answered = nodes.filter((n): n is MemberStatus & { status: StatusResponse } => n.status !== null);
  const builds: Record<string, string> = {};
  for (const n of answered) builds[n.name] = n.status.buildVersion;
  const lines = [
    `cluster: leader ${leader ? `${leader.name} (id ${leader.id})` : 'unknown'}, term ${first.term}, membership version ${first.membershipVersion}, ` +
      `${first.members.filter((m) => m.role !== 'removed').length} members`,
    `builds: ${Object.entries(builds)
      .map(([name, v]) => `${name}=${v}`)
      .join(' ')}; version spread ${versionMajorSpread('', builds)} major across the answers ` +
      `(${Math.max(...answered.map((n) => n.status.versionMajorSpread))} at most as a member sees its peers)`,
  ];
  for (const node of nodes) {
    lines.push('');
    if (!node.status) {
      lines.push(`${node.name}: NO ANSWER (${node.error})`);
      continue;
    }
    lines.push(...memberBlock(node.status, nowMs));
  }
  return `${lines.join('\n')}\n`;
}

function memberBlock(s: StatusResponse, nowMs: number): string[] {
  const health = s.healthy
    ? 'healthy'
    : `UNHEALTHY${s.failed ? ` (failed: ${s.failed})` : s.removed ? ' (removed)' : s.reseed ? ' (reseeding)' : s.halted ? ` (halted: ${s.halted})` : ''}`;
  const role = s.members.find((m) => m.id === s.id)?.role ?? '';
  return [
    `${s.name} (id ${s.id}) ${s.role}${role ? ` ${role}` : ''}  term ${s.term}  leader ${s.leaderId === 0 ? 'unknown' : s.leaderId}  ${health}  ready=${s.ready}`,
    `  seqnos: durable ${s.durableLastSeq}  last ${s.lastSeq}  commit ${s.commitSeq}  applied ${s.appliedSeq}  snapshot ${s.snapshotSeq}  compacted ${s.compactedSeq}`,
    `  build ${s.buildVersion}  version spread ${s.versionMajorSpread}  grpc ${s.grpcAddr}  http ${s.httpAddr}`,
    `  now: entity_count ${s.entityCount}  signal_throughput_eps ${s.signalThroughputEps.toFixed(2)}  disk_bytes ${s.diskBytes}`,
    ...heartbeatLines(s.lastHeartbeat, nowMs),
  ];
}

function heartbeatLines(hb: HeartbeatFields | undefined, nowMs: number): string[] {
  if (!hb || hb.direction === 'none') return ['  last heartbeat: none seen since this process started'];
  const ageS = ((nowMs - hb.seenAtUnixMs) / 1000).toFixed(1);
  const lag =
    Object.entries(hb.replicationLag)
      .map(([id, v]) => `${id}:${v}`)
      .join(' ') || 'none';
  return [
    `  last heartbeat ${hb.direction} ${hb.direction === 'sent' ? 'to' : 'from'} ${hb.peerId} (term ${hb.term}, ${ageS} s ago):`,
    `    entity_count ${hb.entityCount}  signal_throughput_eps ${hb.signalThroughputEps.toFixed(2)}  disk_bytes ${hb.diskBytes}  replication_lag {${lag}}`,
    `    last_heartbeat_ns ${hb.lastHeartbeatNs}  build_version ${hb.buildVersion || '(empty)'}  leader_last_seq ${hb.leaderLastSeq}`,
  ];
}
