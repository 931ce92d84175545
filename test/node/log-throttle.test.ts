// Peer-driven warnings are logged at most logLinesPerKindWindowMax times per kind and window: a peer
// holding any certificate of the cluster's CA must not be able to write the node's log for it (issue 10's
// "refusals are logged without a rate limit"). Every refusal is still counted in the metrics.
import assert from 'node:assert/strict';
import * as grpc from '@grpc/grpc-js';
import * as pb from '../../proto/gen/svc/replication/v1/replication.js';
import { methodPath } from '../../transports/grpc/methods.js';
import { LogThrottle } from '../../transports/node/log-throttle.js';
import { httpGet, metricValue, waitFor } from './harness.js';
import { InProcessCluster } from './in-process-cluster.js';
import { Probe, probeCredentials } from './grpc-probe.js';

describe('LogThrottle', function () {
  it('writes the first lines of a kind per window, counts the rest and reports them with the next window', function () {
    let now = 0;
    const throttle = new LogThrottle(3, 1_000, () => now);
    const written = (kind: string, count: number) =>
      Array.from({ length: count }, () => throttle.admit(kind)).filter((a) => a.write).length;
    assert.equal(written('a', 10), 3, 'three lines of a in the first window');
    assert.equal(written('b', 2), 2, 'kinds are capped separately');
    now = 999;
    assert.deepEqual(throttle.admit('a'), { write: false, suppressedBefore: 0 });
    now = 1_000;
    assert.deepEqual(throttle.admit('a'), { write: true, suppressedBefore: 8 }, 'the 7 + 1 left out are reported once');
    assert.deepEqual(throttle.admit('a'), { write: true, suppressedBefore: 0 });
    now = 5_000;
    assert.deepEqual(throttle.admit('b'), { write: true, suppressedBefore: 0 }, 'nothing of b was left out');
  });
});

describe('node: peer-driven warnings are capped in the log', function () {
  this.timeout(60_000);
  const cluster = new InProcessCluster();
  const lines: Array<Record<string, unknown>> = [];
  const CAP = 3;

  before(async function () {
    await cluster.start(['n1', 'n2', 'n3'], ['n1', 'n2', 'n3', 'n4'], {
      logLevel: 'warn',
      logDestination: { write: (line: string) => lines.push(JSON.parse(line) as Record<string, unknown>) },
      nodeLimits: { logLinesPerKindWindowMax: CAP, logThrottleWindowMs: 2_000 },
    });
  });

  after(async function () {
    await cluster.stop();
  });

  it('a flood of forged heartbeats writes at most the cap per window, the metric counts every one, and the next window says how many were left out', async function () {
    const leader = await cluster.waitLeader();
    const s = leader.status();
    // n4 holds a peer certificate of this cluster but is no member: its heartbeat reaches the engine,
    // which refuses it (not-a-member) with a warning.
    const forged = pb.HeartbeatRequest.encode(
      pb.HeartbeatRequest.fromPartial({ term: s.term + 1, leaderRegion: 99, regionId: 99, shardId: 99 }),
    ).finish();
    const { credentials, options } = probeCredentials(cluster.pki.tls('n4'), cluster.pki.clusterId);
    const probe = new Probe(leader.grpcAddress, credentials, options);
    const refusedCount = async (): Promise<number> =>
      metricValue(
        (await httpGet(`${leader.metricsAddress}/metrics`)).text,
        'svc_engine_warnings_total',
        'code="not-a-member"',
      ) ?? 0;
    const refusedBefore = await refusedCount();
    const refusalLines = () => lines.filter((l) => l.node === s.name && l.code === 'not-a-member');
    const FLOOD = 40;
    try {
      for (let i = 0; i < FLOOD; i++) {
        const outcome = await probe.unary(methodPath('Heartbeat'), Buffer.from(forged));
        assert.equal(outcome.code, grpc.status.FAILED_PRECONDITION, outcome.details);
      }
      assert.equal(await refusedCount(), refusedBefore + FLOOD, 'the metric counts every warning');
      const flooded = refusalLines().length;
      assert.ok(flooded >= 1 && flooded <= CAP, `${flooded} log lines for ${FLOOD} refusals (cap ${CAP})`);
      // One more refusal per 200 ms until a window has passed: its line reports the refusals left out.
      await waitFor(
        async () => {
          await probe.unary(methodPath('Heartbeat'), Buffer.from(forged));
          return refusalLines().some((l) => typeof l.suppressed === 'number');
        },
        'a line that reports the refusals left out',
        20_000,
        { intervalMs: 200, swallow: false },
      );
      const reported = refusalLines().find((l) => typeof l.suppressed === 'number')!;
      assert.ok(Number(reported.suppressed) >= FLOOD - CAP, `suppressed ${String(reported.suppressed)}`);
    } finally {
      probe.close();
    }
    assert.equal(leader.status().term, s.term, 'none of it reached the engine');
  });
});
