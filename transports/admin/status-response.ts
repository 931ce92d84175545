// What Admin.Status answers: the node's /status document, its own heartbeat measurements now, and
// the last heartbeat it sent (as the leader) or received (from the leader).
import type { HeartbeatRequest } from '../../proto/gen/svc/replication/v1/replication.js';
import type { HeartbeatFields, StatusResponse } from '../../proto/gen/svc/admin/v1/admin.js';
import type { NodeStatusDocument } from '../node/node-status.js';

/** SeenHeartbeat is one heartbeat as the node saw it go out or come in. */
export interface SeenHeartbeat {
  direction: 'sent' | 'received';
  /** peerId is the member it went to (sent) or came from (received). */
  peerId: number;
  body: HeartbeatRequest;
  seenAtMs: number;
}

const NO_HEARTBEAT: HeartbeatFields = {
  direction: 'none',
  peerId: 0,
  term: 0,
  entityCount: 0,
  signalThroughputEps: 0,
  diskBytes: 0,
  replicationLag: {},
  lastHeartbeatNs: '0',
  buildVersion: '',
  leaderLastSeq: 0,
  seenAtUnixMs: 0,
};

export function heartbeatFields(seen: SeenHeartbeat | null): HeartbeatFields {
  if (!seen) return NO_HEARTBEAT;
  const b = seen.body;
  return {
    direction: seen.direction,
    peerId: seen.peerId,
    term: b.term,
    entityCount: b.entityCount,
    signalThroughputEps: b.signalThroughputEps,
    diskBytes: b.diskBytes,
    replicationLag: { ...b.replicationLag },
    lastHeartbeatNs: b.lastHeartbeatNs,
    buildVersion: b.buildVersion,
    leaderLastSeq: b.leaderLastSeq,
    seenAtUnixMs: seen.seenAtMs,
  };
}

/** versionMajorSpread is the largest gap between the major versions seen, this node's own included. */
export function versionMajorSpread(ownVersion: string, versionsSeen: Record<string, string>): number {
  const majors = [ownVersion, ...Object.values(versionsSeen)]
    .map((v) => /^v?(\d+)\./.exec(v)?.[1])
    .filter((m): m is string => m !== undefined)
    .map(Number);
  return majors.length === 0 ? 0 : Math.max(...majors) - Math.min(...majors);
}

function numericKeys<T>(record: Record<string, T>): Record<number, T> {
  const out: Record<number, T> = {};
  for (const [key, value] of Object.entries(record)) out[Number(key)] = value;
  return out;
}

export function adminStatusResponse(
  doc: NodeStatusDocument,
  own: {
    entityCount: number;
    signalThroughputEps: number;
    diskBytes: number;
    grpcAddr: string;
    httpAddr: string;
    metricsAddr?: string;
  },
  seen: SeenHeartbeat | null,
): StatusResponse {
  // The shared fields pass through as they are: NodeStatusDocument is StatusResponse less these.
  const { versionsSeen, lagGaugeByShard, ...shared } = doc;
  return {
    ...shared,
    members: doc.members.map((m) => ({ ...m })),
    versionsSeen: numericKeys(versionsSeen),
    versionMajorSpread: versionMajorSpread(doc.buildVersion, versionsSeen),
    entityCount: own.entityCount,
    signalThroughputEps: own.signalThroughputEps,
    diskBytes: own.diskBytes,
    lastHeartbeat: heartbeatFields(seen),
    grpcAddr: own.grpcAddr,
    httpAddr: own.httpAddr,
    lagHighWaterSeq: numericKeys(lagGaugeByShard),
    metricsAddr: own.metricsAddr ?? '',
  };
}
