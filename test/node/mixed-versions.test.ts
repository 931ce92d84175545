// A leader from an older build: its heartbeats carry leader_last_seq = 0 (the field predates it)
// and another major build_version. A joiner then converges its readiness latch through the
// status-poll path (GET <leader>/status → durableLastSeq) and reports the version spread, without
// rejecting anyone. Plaintext peers: this test is not about TLS.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { Node } from '../../cli/node/node.js';
import { httpGet, httpStatus, metricValue, nodeConfig, planNodes, removeDir, tempDir, waitFor } from './harness.js';

describe('node: mixed versions', function () {
  this.timeout(60_000);
  const nodes: Node[] = [];
  let dir = '';

  after(async function () {
    await Promise.all(nodes.map((n) => n.stop()));
    if (dir) await removeDir(dir);
  });

  it("a joiner of a leader without leader_last_seq turns ready through the leader's /status, and reports the version spread", async function () {
    dir = await tempDir('mixed');
    const [oldPlan, newPlan] = await planNodes(['old', 'new']);
    const old = new Node(
      nodeConfig(
        oldPlan!,
        join(dir, 'old'),
        { mode: 'insecure' },
        { bootstrap: [oldPlan!.member] },
        {
          buildVersion: '2.3.0',
          engineCompat: { sendsLeaderLastSeq: false },
        },
      ),
    );
    nodes.push(old);
    await old.start();
    await waitFor(() => old.status().role === 'leader', 'the old node to lead');
    for (let i = 0; i < 5; i++) await old.store.put(`doc/${i}`, { i });

    const joiner = new Node(nodeConfig(newPlan!, join(dir, 'new'), { mode: 'insecure' }, { seeds: [old.grpcAddress] }));
    nodes.push(joiner);
    await joiner.start();
    assert.equal(await httpStatus(`${joiner.httpAddress}/health`), 503);
    await waitFor(
      async () => (await httpStatus(`${joiner.httpAddress}/health`)) === 200,
      'the joiner to turn ready',
      20_000,
    );
    const text = (await httpGet(`${joiner.metricsAddress}/metrics`)).text;
    assert.ok(
      (metricValue(text, 'svc_status_polls_total', 'outcome="answered"') ?? 0) >= 1,
      "readiness came from polling the leader's /status",
    );
    assert.equal(metricValue(text, 'svc_version_major_spread'), 2, 'major 0 here, 2 on the leader');
    assert.ok((metricValue(text, 'svc_engine_warnings_total', 'code="version-major-mismatch"') ?? 0) >= 1);
    assert.equal(metricValue(text, 'svc_peer_build_info', `member="${old.status().id}",version="2.3.0"`), 1);
    assert.ok(
      joiner.status().durableLastSeq >= old.status().durableLastSeq,
      "honest convergence: the joiner holds the leader's frontier",
    );
    assert.deepEqual(await joiner.store.get('doc/4'), await old.store.get('doc/4'));
  });
});
