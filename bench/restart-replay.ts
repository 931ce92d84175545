// Restart replay bench (not a test): what a longer log since the last snapshot costs a restart. Since
// `snapshotLogBytesPercentMin` (engine/snapshot-staging.ts) a large store's log holds up to its snapshot's size in
// data (at most `snapshotEntryCountMax` entries) where it held `snapshotEntryCountThreshold`, and a restarted node
// replays that log into its state machine before it serves. For each way of staging, a three-node cluster (`svc
// cluster`: child processes, mutual TLS, real fdatasync) is filled with `keys` keys, stopped (SIGINT) and started
// again on the same directories, timed from the start until all three answer /health 200, `restarts` times:
//   - "long log": no snapshot while filling (threshold and cap above `keys`): every key is in the log;
//   - "short log": a snapshot every `keys / 4` entries by count alone: at most a quarter of them in the log.
// The difference of the medians is the replay of the rest (with the snapshot's load, which both pay).
//
//   npx tsx bench/restart-replay.ts [keys=200000] [restarts=3]
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { preload } from './cluster/preload.js';
import { startSvcCluster } from './cluster/svc-cluster.js';

const args = process.argv.slice(2);
const keyCount = Number(args[0] ?? 200_000);
const restarts = Number(args[1] ?? 3);
if (!Number.isSafeInteger(keyCount) || keyCount < 4 || !Number.isSafeInteger(restarts) || restarts < 1)
  throw new Error('usage: npx tsx bench/restart-replay.ts [keys>=4] [restarts>=1]');

const ways: ReadonlyArray<{ name: string; limits: string[] }> = [
  {
    name: 'long log',
    limits: [`snapshotEntryCountThreshold=${keyCount * 10}`, `snapshotEntryCountMax=${keyCount * 10}`],
  },
  {
    name: 'short log',
    limits: [`snapshotEntryCountThreshold=${Math.floor(keyCount / 4)}`, 'snapshotLogBytesPercentMin=0'],
  },
];

const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

const root = await mkdtemp(join(tmpdir(), 'svc-restart-replay-'));
try {
  const medians: number[] = [];
  for (const way of ways) {
    const dir = join(root, way.name.replace(' ', '-'));
    const filling = await startSvcCluster(dir, [], way.limits);
    const fillSeconds = await preload(filling, keyCount).finally(() => filling.stop());
    const startSeconds: number[] = [];
    for (let i = 0; i < restarts; i++) {
      const began = performance.now();
      const restarted = await startSvcCluster(dir, [], way.limits);
      startSeconds.push((performance.now() - began) / 1000);
      await restarted.stop();
    }
    medians.push(median(startSeconds));
    console.log(
      `${way.name}: ${keyCount} keys filled in ${fillSeconds.toFixed(1)} s; restart to all healthy ${startSeconds.map((s) => s.toFixed(2)).join(', ')} s (median ${median(startSeconds).toFixed(2)})`,
    );
  }
  const replayed = keyCount - Math.floor(keyCount / 4);
  console.log(
    `long log − short log: ${(medians[0]! - medians[1]!).toFixed(2)} s for about ${replayed} more entries replayed (${(((medians[0]! - medians[1]!) / replayed) * 1e6).toFixed(1)} µs each)`,
  );
} finally {
  await rm(root, { recursive: true, force: true });
}
