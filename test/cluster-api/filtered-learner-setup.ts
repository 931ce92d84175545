// What the filtered-learner tests share (filtered-learner.test.ts, filtered-learner-snapshot.test.ts): on an
// ApiCluster of three voters (a, b, c), the leader and a follower; Admin calls with the admin certificate at the
// leader, following its hint when leadership moves; a joiner that joins through the follower (its seeds name only
// that follower); and its filter (svc.admin.v1 ChangeMember FILTER, as `svc members filter` sends it).
import { readFileSync } from 'node:fs';
import type { ApiCluster } from './api-cluster.js';
import { waitFor } from '../node/harness.js';
import * as adminPb from '../../proto/gen/svc/admin/v1/admin.js';
import { AdminCallError, AdminClientPool } from '../../transports/admin/admin-client.js';
import { clientCredentials } from '../../transports/grpc/tls.js';
import { encodeCommand } from '../../store/command.js';
import type { JsonObject } from '../../store/document-store.js';

/** The test CA's certificates name localhost; the nodes listen on 127.0.0.1. */
const NAME_OVERRIDE = { 'grpc.ssl_target_name_override': 'localhost', 'grpc.default_authority': 'localhost' };
/** LEADER_HOPS_MAX bounds following a leader hint (a busy machine may hold an election meanwhile). */
const LEADER_HOPS_MAX = 10;
/** ADMIN_CALL_MS bounds each Admin call. */
const ADMIN_CALL_MS = 10_000;

/** leaderAndFollower names the voters' leader and one voter that is not it. */
export async function leaderAndFollower(cluster: ApiCluster): Promise<{ leader: string; follower: string }> {
  const leader = (await cluster.leaderName())!;
  const follower = ['a', 'b', 'c'].find((name) => name !== leader)!;
  return { leader, follower };
}

/** LeaderAdmin makes Admin calls at the leader with the cluster's admin certificate. */
export class LeaderAdmin {
  private constructor(
    private readonly pool: AdminClientPool,
    private leaderAddr: string,
  ) {}

  /** open starts at `leader`'s gRPC address. */
  static open(cluster: ApiCluster, leader: string): LeaderAdmin {
    const tls = cluster.adminTls();
    if (tls.mode !== 'mtls') throw new Error('the cluster runs mutual TLS');
    const material = { ca: readFileSync(tls.caFile), cert: readFileSync(tls.certFile), key: readFileSync(tls.keyFile) };
    const pool = new AdminClientPool({ credentials: clientCredentials(material), channelOptions: NAME_OVERRIDE });
    return new LeaderAdmin(pool, cluster.node(leader).config.grpcListen);
  }

  /** atLeader runs an admin call at the leader, following its hint when leadership moved. */
  async atLeader<T>(call: (to: string) => Promise<T>): Promise<T> {
    for (let hop = 0; ; hop++) {
      try {
        return await call(this.leaderAddr);
      } catch (err) {
        const hint = err instanceof AdminCallError ? err.leaderHint : '';
        if (hop >= LEADER_HOPS_MAX || !hint) throw err;
        this.leaderAddr = hint;
      }
    }
  }

  /** put writes one record through the leader (Admin.Propose). */
  async put(key: string, value: JsonObject, requestId: string): Promise<void> {
    const command = encodeCommand({ op: 'put', key, value, requestId });
    await this.atLeader((to) => this.pool.propose(to, command, Date.now() + ADMIN_CALL_MS));
  }

  /** filter sets member `name`'s filter to `prefixes`. */
  filter(name: string, prefixes: string[]): Promise<adminPb.ChangeMemberResponse> {
    return this.atLeader((to) =>
      this.pool.changeMember(
        to,
        { change: adminPb.MemberChange.MEMBER_CHANGE_FILTER, name, hops: 0, prefixes, tenants: [], clear: false },
        Date.now() + ADMIN_CALL_MS,
      ),
    );
  }

  close(): void {
    this.pool.close();
  }
}

/** joinThroughFollower starts joiner `name` with `follower` as its only seed and waits for it in `leader`'s roster. */
export async function joinThroughFollower(
  cluster: ApiCluster,
  name: string,
  at: { leader: string; follower: string },
  timeoutMs: number,
): Promise<void> {
  await cluster.startJoiner(name, [at.follower]);
  await waitFor(
    async () => (await cluster.statusOf(at.leader))?.members.some((m) => m.name === name) ?? false,
    `${name} in the roster`,
    timeoutMs,
  );
}
