// Linearizable reads on real nodes (in process, mTLS, real sockets): a store read takes the engine's read
// index (engine/read-index.ts), which a leader answers only after a heartbeat round a majority of voters
// accepted. So a leader whose followers are gone answers no read even while it still believes it leads —
// the store used to answer from the leader's bare commit seqno there, for up to two election timeouts. Run twice:
// with the lean unary peer client and server (the defaults) and with both off (grpc.leanUnaryClient and
// grpc.leanUnaryServer false: grpc-js carries and serves every peer call), so a cluster either way elects,
// replicates and serves reads. Either way a leader's heartbeats go on open HeartbeatStream calls, and a
// follower's ReportApplied (the durable frontier a write's commit waits for) on an open ReportStream call to its
// leader.
import assert from 'node:assert/strict';
import { StoreUnavailableError } from '../../store/errors.js';
import type { ReplicatedStore } from '../../store/replicated-store.js';
import { metricValue, httpGet } from './harness.js';
import { InProcessCluster } from './in-process-cluster.js';

/** READ_TIMEOUT_MS: a read's whole barrier (read index and apply) in this test, short so a refusal comes soon. */
const READ_TIMEOUT_MS = 1_500;

for (const leanUnaryClient of [true, false]) {
  const client = leanUnaryClient ? 'lean' : 'grpc-js';
  describe(`node: reads take the engine's read index (unary peer calls over ${client})`, function () {
    this.timeout(60_000);
    const cluster = new InProcessCluster();

    before(async () => {
      await cluster.start(['r1', 'r2', 'r3'], ['r1', 'r2', 'r3'], {
        storeLimits: { readTimeoutMs: READ_TIMEOUT_MS },
        ...(leanUnaryClient ? {} : { grpc: { leanUnaryClient: false, leanUnaryServer: false } }),
      });
    });
    after(async () => {
      await cluster.stop();
    });

    it('a read on the leader or a follower sees a write acknowledged through another node, and the leader confirmed it by a round', async () => {
      const leader = await cluster.waitLeader();
      for (const node of cluster.nodes.values()) {
        assert.equal(node.peerUnaryClient, client);
        assert.equal(node.storeUnaryClient, client, 'the store client pool follows grpc.leanUnaryClient too');
        assert.equal(node.peerUnaryServer, client);
      }
      const [follower, other] = cluster.followers();
      await follower!.store.put('reads/a', { v: 1 });
      assert.deepEqual((await leader.store.get('reads/a'))?.value, { v: 1 });
      assert.deepEqual((await other!.store.get('reads/a'))?.value, { v: 1 });
      const metrics = (await httpGet(`${leader.metricsAddress}/metrics`)).text;
      assert.ok(
        (metricValue(metrics, 'svc_engine_read_indexes_total', 'outcome="answered"') ?? 0) >= 2,
        "the leader's engine answered its own read and the follower's",
      );
      // The rounds those reads waited for went as messages on one open HeartbeatStream call per follower
      // (transports/grpc/heartbeat-stream.ts), not as unary calls.
      const { callsOpened, streamed } = leader.heartbeatStreamCounts;
      assert.ok(streamed > 0, 'the leader sent its heartbeats on HeartbeatStream calls');
      assert.ok(
        callsOpened >= 1 && callsOpened <= 2 * 2,
        `a call or so per follower, not per heartbeat (${callsOpened} for ${streamed})`,
      );
      // The write's commit waited for the followers' durable frontiers, which went as messages on one open
      // ReportStream call per follower to the leader (transports/grpc/report-stream.ts), not as unary calls.
      const reports = cluster.followers().map((f) => f.reportStreamCounts);
      assert.ok(
        reports.some((r) => r.streamed > 0),
        `the followers sent their ReportApplied on ReportStream calls (${JSON.stringify(reports)})`,
      );
      for (const r of reports)
        assert.ok(r.callsOpened <= 2, `a call or so per follower, not per report (${JSON.stringify(reports)})`);
    });

    it('a leader cut off from its followers serves no read, though it still believes it leads', async () => {
      const leader = await cluster.waitLeader();
      await leader.store.put('reads/b', { v: 1 });
      for (const follower of cluster.followers()) await follower.stop();
      assert.equal(leader.status().role, 'leader', 'check-quorum has not deposed it yet');
      const started = Date.now();
      await assert.rejects((leader.store as ReplicatedStore).get('reads/b'), StoreUnavailableError);
      assert.ok(
        Date.now() - started >= READ_TIMEOUT_MS - 50,
        'refused only at the deadline: no answer came in between',
      );
      assert.notEqual(leader.status().role, 'leader', 'meanwhile check-quorum deposed it');
    });
  });
}
