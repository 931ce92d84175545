// Layered snapshots on real nodes (store/snapshot-layers.ts): under writes each member stages deltas over its
// last artifact, a member restarted from a layered artifact comes back with every document, and a joiner
// installs a leader's layered artifact over FetchSnapshot and then stages deltas over the one it installed.
import assert from 'node:assert/strict';
import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { Node } from '../../cli/node/node.js';
import type { NodeConfig } from '../../cli/node/config.js';
import { readFileSync } from 'node:fs';
import { StoreSnapshots } from '../../store/snapshot-files.js';
import { StoreStateMachine } from '../../store/state-machine.js';
import { PeerPool } from '../../transports/grpc/client.js';
import { clusterChannelOptions } from '../../transports/grpc/peer-identity.js';
import { clientCredentials } from '../../transports/grpc/tls.js';
import { SnapshotStore } from '../../transports/storage/snapshots.js';
import { httpGet, metricValue, removeDir, tempDir, waitFor } from './harness.js';
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
    const joiner = await cluster.join('n4', [leader.grpcAddress], { engineLimits: ENGINE_LIMITS });
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

  it('serves a caller from before layers (no x-svc-snapshot-layers) the same state as one whole store.json', async function () {
    const leader = await cluster.waitLeader();
    await waitFor(async () => (await newestLayers(leader)).files.length > 1, 'the leader to hold a layered artifact');
    const material = {
      ca: readFileSync(join(cluster.pki.dir, 'ca.crt')),
      cert: readFileSync(join(cluster.pki.dir, 'n2.crt')),
      key: readFileSync(join(cluster.pki.dir, 'n2.key')),
    };
    const pool = new PeerPool({
      credentials: clientCredentials(material),
      channelOptions: { 'grpc.ssl_target_name_override': 'localhost', ...clusterChannelOptions(cluster.pki.clusterId) },
      deliver: () => undefined,
    });
    const dir = await tempDir('layers-fetch');
    try {
      let round = 0;
      const fetched = async (
        readsSnapshotLayers: boolean,
      ): Promise<{ seq: number; paths: string[]; state: string }> => {
        round += 1;
        const request = { shardId: 0, fromSeqno: 1, term: leader.status().term };
        const parts = await pool.openSnapshot(leader.grpcAddress, request, { readsSnapshotLayers });
        const store = await SnapshotStore.open(join(dir, `${round}`));
        const artifact = await store.install(parts.header, parts.files);
        const machine = new StoreStateMachine();
        (await new StoreSnapshots(machine).load(artifact))();
        return {
          seq: parts.header.snapshotSeq,
          paths: parts.header.files.map((f) => f.path),
          state: Buffer.from(machine.encodeSnapshot()).toString(),
        };
      };
      // Both of the same artifact: a staging that lands between the two fetches makes them differ, so fetch again.
      let layered = await fetched(true);
      let whole = await fetched(false);
      await waitFor(async () => {
        if (layered.seq === whole.seq) return true;
        layered = await fetched(true);
        whole = await fetched(false);
        return false;
      }, 'two fetches of the same artifact');
      assert.ok(
        layered.paths.some((p) => p.startsWith('store-delta-')),
        `layered: ${layered.paths.join(', ')}`,
      );
      assert.deepEqual(whole.paths, ['meta.json', 'store.json']);
      assert.ok(whole.state === layered.state, 'the same state at the same seq');
    } finally {
      pool.close();
      await removeDir(dir);
    }
  });
});
