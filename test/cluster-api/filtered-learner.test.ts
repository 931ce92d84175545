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
import { ApiCluster } from './api-cluster.js';
import { waitFor } from '../node/harness.js';
import { joinThroughFollower, LeaderAdmin, leaderAndFollower } from './filtered-learner-setup.js';

/** FILTER_PREFIXES: the community (projects) and what the API's authentication reads at the member. */
const FILTER_PREFIXES = ['projects/', 'keys/', 'keys-by-hash/', 'users/'];
/** CONVERGE_TIMEOUT_MS bounds each wait for the replica (join, filter, refill). */
const CONVERGE_TIMEOUT_MS = 60_000;

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
    const { leader, follower } = await leaderAndFollower(cluster);
    const project = await cluster.client(leader).createProject({
      body: { name: 'replicated', workspace: cluster.workspace, command: ['./agent.sh'] },
    });

    const admin = LeaderAdmin.open(cluster, leader);
    /** writeOutside puts a record no filter of d takes (Admin.Propose, through the leader). */
    let outsideCount = 0;
    const writeOutside = async (): Promise<void> => {
      const n = outsideCount++;
      await admin.put(`secret/${n}`, { n }, `filtered-learner-${n}`);
    };
    try {
      await writeOutside();
      await joinThroughFollower(cluster, 'd', { leader, follower }, CONVERGE_TIMEOUT_MS);
      // d takes the full log first (a joiner is unfiltered): it holds the outside record, then one more.
      await writeOutside();
      await waitFor(
        async () => (await cluster.node('d').localKeys('secret/')).length === outsideCount,
        'd to hold the records written so far (full)',
        CONVERGE_TIMEOUT_MS,
      );
      const answer = await admin.filter('d', FILTER_PREFIXES);
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
