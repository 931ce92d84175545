// Probe (not a test, not run by `npm run bench`): p99 at 64 writers on two clusters that differ only in
// snapshotEntryCountThreshold (10,000, the old default, against 100,000), rounds interleaved; both by the entry
// count alone (snapshotLogBytesPercentMin=0), as when it was written.
//   npx tsx bench/cluster/threshold-probe.ts [rounds]
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { closedLoop, payload } from './load.js';
import { startSvcCluster } from './svc-cluster.js';
const dir = await mkdtemp(join(tmpdir(), 'thr-'));
const a = await startSvcCluster(
  join(dir, 'a'),
  [],
  ['snapshotEntryCountThreshold=10000', 'snapshotLogBytesPercentMin=0'],
);
const b = await startSvcCluster(
  join(dir, 'b'),
  [],
  ['snapshotEntryCountThreshold=100000', 'snapshotLogBytesPercentMin=0'],
);
try {
  for (let round = 1; round <= Number(process.argv[2] ?? 4); round++) {
    for (const [name, svc] of [
      ['10k (old default)', a],
      ['100k (default)', b],
    ] as const) {
      const r = await closedLoop(64, 1, 4, (w, i) => svc.put(`t/${round}/${w}/${i}`, payload(88, i)));
      console.log(
        `${name} round ${round}: ${r.opsPerSecond.toFixed(0)} writes/s p50 ${r.p50Ms.toFixed(1)} p99 ${r.p99Ms.toFixed(1)}`,
      );
    }
  }
} finally {
  await a.stop();
  await b.stop();
}
