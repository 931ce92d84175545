// Staged file vs WAL sync bench (not a test): does a 13 MB staged store.json's write and fsync hold a concurrent
// loop of 4 KiB appends each fdatasynced (the WAL's shape) behind it? It prints the staging's wall time and the
// WAL syncs that ran during it. Modes: whole (one write, one fsync: the staging before snapshotStageSyncEveryBytes)
// and chunked (1 MiB writes, an fdatasync every 4 MiB, an fsync at the end: SnapshotStore.writeStagedFile now).
//
//   npx tsx bench/stage-sync-wal.ts whole|chunked
import { mkdtemp, open, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';

const dir = await mkdtemp(join(tmpdir(), 'svc-stage-sync-wal-'));
const mode = process.argv[2] === 'whole' ? 'whole' : 'chunked';
const MiB = 1 << 20;
const bytes = Buffer.alloc(13 * MiB, 7);
const wal = await open(join(dir, 'wal'), 'w');
const rec = Buffer.alloc(4096, 1);
let stop = false;
const syncs: number[] = [];
const walLoop = (async () => {
  while (!stop) {
    await wal.write(rec);
    const t = performance.now();
    await wal.datasync();
    syncs.push(performance.now() - t);
  }
})();
await new Promise((r) => setTimeout(r, 300));
const before = syncs.length;
const t0 = performance.now();
const f = await open(join(dir, `snap-${mode}`), 'wx');
if (mode === 'whole') {
  await f.write(bytes);
  await f.sync();
} else {
  let unsynced = 0;
  for (let at = 0; at < bytes.length; at += MiB) {
    await f.write(bytes.subarray(at, at + MiB));
    unsynced += MiB;
    if (unsynced >= 4 * MiB) {
      await f.datasync();
      unsynced = 0;
    }
  }
  await f.sync();
}
await f.close();
const stageMs = performance.now() - t0;
const during = syncs.slice(before);
stop = true;
await walLoop;
await wal.close();
await rm(dir, { recursive: true });
const s = [...during].sort((a, b) => a - b);
const q = (p: number) => s[Math.min(s.length - 1, Math.floor(p * s.length))].toFixed(1);
console.log(
  `${mode}: staging ${stageMs.toFixed(0)} ms; WAL syncs during it ${s.length}, p50 ${q(0.5)} p99 ${q(0.99)} max ${s[s.length - 1].toFixed(1)} ms, >20 ms ${s.filter((x) => x > 20).length}`,
);
