// Layered snapshots on real nodes (store/snapshot-layers.ts): under writes each member stages deltas over its
// last artifact, a member restarted from a layered artifact comes back with every document, and a joiner
// installs a leader's layered artifact over FetchSnapshot and then stages deltas over the one it installed.
import assert from 'node:assert/strict';
import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { Node } from '../../cli/node/node.js';
import type { NodeConfig } from '../../cli/node/config.js';
import { metricValue, httpGet, nodeConfig, planNodes, waitFor } from './harness.js';
import { InProcessCluster } from './in-process-cluster.js';

/** Snapshots every 40 entries, compaction keeps nothing (a joiner must install), autopilot off (a joiner stays a learner). */
const ENGINE_LIMITS = { snapshotEntryCountThreshold: 40, compactionRetainEntryCount: 0, autopilotEnabled: 0 };
const KEY_COUNT = 60;

/** newestLayers lists the store's files in a node's newest artifact (meta.json aside). */
async function newestLayers(node: Node): Promise<{ dir: string; files: string[] }> {
  const root = join(node.config.dataDir, 'snapshots');
  const names = (await readdir(root)).filter((n) => /^\d+-\d+$/.test(n));
  names.sort((a, b) => Number(b.split('-')[0]) - Number(a.split('-')[0]));
  const dir = join(root, names[0]!);
  const files = (await readdir(dir)).filter((f) => f !== 'meta.json' && f !== 'manifest.json').sort();
  return { dir, files };
}

/** documents lists every document a node holds, in key order. */
function documents(node: Node): string {
  return JSON.stringify(node.stateMachine.list('', 10_000).entries);
}

describe('node: layered snapshots', function () {
  this.timeout(90_000);
  const cluster = new InProcessCluster();
  before(async function () {
    await cluster.start(['n1', 'n2', 'n3'], ['n1', 'n2', 'n3', 'n4'], { engineLimits: ENGINE_LIMITS });
  });
  after(async function () {
    await cluster.stop();
  });

  it('stages deltas under writes, restores a restarted member from them, and a joiner installs them and stages over them', async function () {
    const leader = await cluster.waitLeader();
    // New keys, rewrites and deletes across several stagings.
    for (let round = 0; round < 15; round += 1) {
      for (let i = 0; i < KEY_COUNT; i += 7)
        await leader.store.put(`k/${String(i + round).padStart(3, '0')}`, { round });
      await leader.store.delete(`k/${String(round * 3).padStart(3, '0')}`);
    }
    for (const node of cluster.nodes.values()) {
      await waitFor(
        async () => (await newestLayers(node)).files.some((f) => f.startsWith('store-delta-')),
        `${node.config.name} to stage a delta layer`,
        20_000,
      );
      const { dir, files } = await newestLayers(node);
      assert.ok(files.includes('store.json'), `${dir} holds ${files.join(', ')}`);
      // store.json is the file of the artifact before (kept: snapshotRetainCount 2), hard-linked, not written again.
      assert.ok((await stat(join(dir, 'store.json'))).nlink >= 2, `${dir}/store.json is linked`);
    }

    // A follower restarted from its layered artifact comes back with every document.
    const follower = cluster.followers()[0]!;
    const name = follower.config.name;
    const config: NodeConfig = { ...follower.config };
    await follower.stop();
    await leader.store.put('k/after-stop', { ok: true });
    const restarted = new Node(config);
    cluster.nodes.set(name, restarted);
    await restarted.start();
    await waitFor(
      () => restarted.stateMachine.appliedSeq >= leader.stateMachine.appliedSeq,
      'the restarted member to catch up',
      20_000,
    );
    assert.equal(documents(restarted), documents(leader));

    // A joiner installs the leader's layered artifact over FetchSnapshot.
    const [plan] = await planNodes(['n4']);
    const joiner = new Node(
      nodeConfig(
        plan!,
        join(cluster.dir, 'n4'),
        cluster.pki.tls('n4'),
        { seeds: [leader.grpcAddress] },
        { engineLimits: ENGINE_LIMITS },
      ),
    );
    cluster.nodes.set('n4', joiner);
    await joiner.start();
    await waitFor(
      async () =>
        (metricValue(
          (await httpGet(`${joiner.metricsAddress}/metrics`)).text,
          'svc_snapshot_events_total',
          'event="installed"',
        ) ?? 0) >= 1,
      'the joiner to install a snapshot',
      20_000,
    );
    const installed = await newestLayers(joiner);
    assert.ok(installed.files.length > 1, `the installed artifact is layered: ${installed.files.join(', ')}`);
    await waitFor(
      () => joiner.stateMachine.appliedSeq >= leader.stateMachine.appliedSeq,
      'the joiner to catch up',
      20_000,
    );
    assert.equal(documents(joiner), documents(leader));

    // Then it stages its own delta over what it installed.
    const installedDeltas = installed.files.filter((f) => f.startsWith('store-delta-')).length;
    for (let i = 0; i < 50; i += 1) await leader.store.put(`j/${i}`, { i });
    await waitFor(
      async () =>
        (await newestLayers(joiner)).files.filter((f) => f.startsWith('store-delta-')).length > installedDeltas,
      'the joiner to stage a delta over the installed artifact',
      20_000,
    );
    await waitFor(
      () => joiner.stateMachine.appliedSeq >= leader.stateMachine.appliedSeq,
      'the joiner to catch up',
      20_000,
    );
    assert.equal(documents(joiner), documents(leader));
  });
});
