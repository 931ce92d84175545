// A read replica of one community on real nodes (docs/operations.md, "A read replica of one tenant"): three
// voters and a fourth member in child processes, mutual TLS on gRPC and HTTPS, real fsync, one real
// redis-server. The fourth joins through a follower (its seeds name only that follower), is filtered at once
// with the admin certificate (svc.admin.v1 ChangeMember FILTER, as `svc members filter` sends it) to the
// projects plus the prefixes the API's own lookups read (API keys, users), and then: its /health turns 200
// with nobody writing to its community (the leader's heartbeats alone carry its frontier), it serves a
// project written before the filter, and it refuses a read outside its communities with 421
// OUTSIDE_COMMUNITIES. It stays a learner: the roster never counts it. Records outside its communities, written
// before it joined, while it was full (on a live stream by then) and after the filter, are never in its store
// once it is filtered (it dropped what it held and took the log again, filtered, by ShipSegment only).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { ApiCluster } from './api-cluster.js';
import { waitFor } from '../node/harness.js';
import * as adminPb from '../../proto/gen/svc/admin/v1/admin.js';
import { AdminCallError, AdminClientPool } from '../../transports/admin/admin-client.js';
import { clientCredentials } from '../../transports/grpc/tls.js';
import { encodeCommand } from '../../store/command.js';

/** The test CA's certificates name localhost; the nodes listen on 127.0.0.1. */
const NAME_OVERRIDE = { 'grpc.ssl_target_name_override': 'localhost', 'grpc.default_authority': 'localhost' };
/** FILTER_PREFIXES: the community (projects) and what the API's authentication reads at the member. */
const FILTER_PREFIXES = ['projects/', 'keys/', 'keys-by-hash/', 'users/'];
/** CONVERGE_TIMEOUT_MS bounds each wait for the replica (join, filter, refill). */
const CONVERGE_TIMEOUT_MS = 60_000;
/** LEADER_HOPS_MAX bounds following a leader hint (a busy machine may hold an election meanwhile). */
const LEADER_HOPS_MAX = 10;

describe('cluster-api: a filtered learner on real nodes (a read replica of one community)', function () {
  this.timeout(600_000);
  const cluster = new ApiCluster();

  before(async () => {
    await cluster.start({ joiners: ['d'] });
  });
  after(async () => {
    await cluster.stop();
  });

  it('joins through a follower, turns healthy with no writes to its community, serves it and refuses the rest', async () => {
    const leader = (await cluster.leaderName())!;
    const follower = ['a', 'b', 'c'].find((name) => name !== leader)!;
    const project = await cluster.client(leader).createProject({
      body: { name: 'replicated', workspace: cluster.workspace, command: ['./agent.sh'] },
    });

    const tls = cluster.adminTls();
    if (tls.mode !== 'mtls') throw new Error('the cluster runs mutual TLS');
    const material = { ca: readFileSync(tls.caFile), cert: readFileSync(tls.certFile), key: readFileSync(tls.keyFile) };
    const admin = new AdminClientPool({ credentials: clientCredentials(material), channelOptions: NAME_OVERRIDE });
    let leaderAddr = cluster.node(leader).config.grpcListen;
    /** atLeader runs an admin call at the leader, following its hint when leadership moved. */
    const atLeader = async <T>(call: (to: string) => Promise<T>): Promise<T> => {
      for (let hop = 0; ; hop++) {
        try {
          return await call(leaderAddr);
        } catch (err) {
          const hint = err instanceof AdminCallError ? err.leaderHint : '';
          if (hop >= LEADER_HOPS_MAX || !hint) throw err;
          leaderAddr = hint;
        }
      }
    };
    /** writeOutside puts a record no filter of d takes (Admin.Propose, through the leader). */
    let outsideCount = 0;
    const writeOutside = async (): Promise<void> => {
      const command = encodeCommand({
        op: 'put',
        key: `secret/${outsideCount}`,
        value: { n: outsideCount },
        requestId: `filtered-learner-${outsideCount++}`,
      });
      await atLeader((to) => admin.propose(to, command, Date.now() + 10_000));
    };
    try {
      await writeOutside();
      await cluster.startJoiner('d', [follower]);
      const roleOfD = async (): Promise<string | undefined> =>
        (await cluster.statusOf(leader))?.members.find((m) => m.name === 'd')?.role;
      await waitFor(async () => (await roleOfD()) !== undefined, 'd in the roster', CONVERGE_TIMEOUT_MS);
      // d takes the full log first (a joiner is unfiltered): it holds the outside record, then one more.
      await writeOutside();
      await waitFor(
        async () => (await cluster.node('d').localKeys('secret/')).length === outsideCount,
        'd to hold the records written so far (full)',
        CONVERGE_TIMEOUT_MS,
      );
      const answer = await atLeader((to) =>
        admin.changeMember(
          to,
          {
            change: adminPb.MemberChange.MEMBER_CHANGE_FILTER,
            name: 'd',
            hops: 0,
            prefixes: FILTER_PREFIXES,
            tenants: [],
            clear: false,
          },
          Date.now() + 10_000,
        ),
      );
      assert.ok(answer.memberId > 0);
      for (let i = 0; i < 3; i++) await writeOutside();
    } finally {
      admin.close();
    }

    // Nobody writes from here on: d converges on the heartbeats' frontier, with empty filtered payloads.
    const d = cluster.node('d');
    await waitFor(
      async () => {
        const response = await cluster.fetch(`${d.httpUrl}/health`, { signal: AbortSignal.timeout(2_000) });
        const status = await cluster.statusOf('d');
        const now = await cluster.leaderName();
        return (
          response.status === 200 && now !== null && status?.appliedSeq === (await cluster.statusOf(now))?.commitSeq
        );
      },
      "d's /health 200 at the leader's commit",
      CONVERGE_TIMEOUT_MS,
    );
    const roleAtLeader = (await cluster.statusOf((await cluster.leaderName())!))?.members.find(
      (m) => m.name === 'd',
    )?.role;
    assert.equal(roleAtLeader, 'learner', 'a filtered member is never promoted');
    assert.deepEqual(await d.localKeys('secret/'), [], 'no record outside its communities is held');
    assert.deepEqual(await d.localKeys('projects/'), [`projects/${project.id}`]);

    const served = await cluster.client('d').getProject({ path: { id: project.id } });
    assert.equal(served.name, 'replicated');

    const outside = await cluster.fetch(`${d.httpUrl}/credentials`, {
      headers: { 'x-api-key': cluster.admin.key },
      signal: AbortSignal.timeout(10_000),
    });
    assert.equal(outside.status, 421);
    assert.equal(((await outside.json()) as { code?: string }).code, 'OUTSIDE_COMMUNITIES');
    // The same read at a full member is served.
    const full = await cluster.fetch(`${cluster.node(follower).httpUrl}/credentials`, {
      headers: { 'x-api-key': cluster.admin.key },
      signal: AbortSignal.timeout(10_000),
    });
    assert.equal(full.status, 200);
  });
});
