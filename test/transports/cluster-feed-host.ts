// A stand-in for the node under a ClusterFeed (ClusterFeedHost): member b of a, b, c, whose /status answers
// are whatever a test sets; a member without one is unreachable, as a refused connection.
import type { ClusterFeedHost } from '../../transports/node/cluster-feed.js';
import type { NodeStatusDocument } from '../../transports/node/node-status.js';
import type { StatusAnswer } from '../../transports/node/status-poll.js';

export const names: Record<number, string> = { 1: 'a', 2: 'b', 3: 'c' };
export const three = [
  { id: 1, name: 'a', role: 'voter' },
  { id: 2, name: 'b', role: 'voter' },
  { id: 3, name: 'c', role: 'voter' },
];

export function ownStatus(fields: Partial<NodeStatusDocument> = {}): NodeStatusDocument {
  return {
    id: 2,
    name: 'b',
    role: 'follower',
    term: 3,
    leaderId: 1,
    leaderGrpcAddr: '',
    leaderHttpAddr: '',
    durableLastSeq: 10,
    lastSeq: 10,
    commitSeq: 10,
    appliedSeq: 9,
    snapshotSeq: 0,
    compactedSeq: 0,
    ready: true,
    healthy: true,
    halted: '',
    reseed: false,
    removed: false,
    failed: '',
    buildVersion: '0.2.0',
    membershipVersion: 1,
    members: three.map((m) => ({ ...m, grpcAddr: `g-${m.name}`, httpAddr: `https://h-${m.name}` })),
    lagGaugeByShard: {},
    versionsSeen: { '1': '0.2.0', '3': '0.1.9' },
    entityCount: 0,
    ...fields,
  };
}

export class FakeHost implements ClusterFeedHost {
  fetches = 0;
  answers = new Map<string, StatusAnswer>();
  own: NodeStatusDocument | null = ownStatus();
  clock = 1_000;
  status(): NodeStatusDocument | null {
    return this.own;
  }
  matchSeqs(): Record<number, number> {
    return {};
  }
  fetchStatus(httpAddr: string): Promise<StatusAnswer> {
    this.fetches++;
    return Promise.resolve(this.answers.get(httpAddr) ?? { ok: false, error: 'unreachable: ECONNREFUSED' });
  }
  now(): number {
    return this.clock++;
  }
}
