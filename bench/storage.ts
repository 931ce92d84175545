// Storage bench (not a test): WAL group commit against the disk's raw fdatasync rate, measured in
// the same run, and BLAKE3 throughput of hash-wasm against @noble/hashes.
//   npx tsx bench/storage.ts [--seconds N]
import { randomBytes } from 'node:crypto';
import { mkdtemp, open, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { blake3 as nobleBlake3 } from '@noble/hashes/blake3.js';
import { createBlake3Hasher } from '../transports/storage/blake3.js';
import { Wal } from '../transports/storage/wal.js';

const ENTRY_DATA_BYTES = 128;
const APPENDER_COUNTS = [1, 16, 64];
const secondsArg = process.argv.indexOf('--seconds');
const RUN_SECONDS = secondsArg > 0 ? Number(process.argv[secondsArg + 1]) : 1.5;
const HASH_WASM_BYTES = 128 * 1024 * 1024;
const NOBLE_BYTES = 16 * 1024 * 1024;
const HASH_UPDATE_BYTES = 1024 * 1024;

async function rawSyncRate(dir: string): Promise<number> {
  const handle = await open(join(dir, 'raw-sync'), 'w');
  const record = randomBytes(ENTRY_DATA_BYTES + 26);
  let count = 0;
  const start = performance.now();
  const deadline = start + RUN_SECONDS * 1000;
  while (performance.now() < deadline) {
    await handle.write(record, 0, record.length, null);
    await handle.datasync();
    count++;
  }
  const seconds = (performance.now() - start) / 1000;
  await handle.close();
  return count / seconds;
}

async function walRate(dir: string, appenders: number): Promise<{ entriesPerSecond: number; entriesPerSync: number }> {
  const { wal } = await Wal.open(join(dir, `wal-${appenders}`));
  const data = randomBytes(ENTRY_DATA_BYTES);
  let nextSeq = 1;
  const start = performance.now();
  const deadline = start + RUN_SECONDS * 1000;
  const appender = async (): Promise<void> => {
    while (performance.now() < deadline) {
      const seq = nextSeq++;
      await wal.append(seq, [{ seq, term: 1, kind: 1, data }]);
    }
  };
  await Promise.all(Array.from({ length: appenders }, appender));
  const seconds = (performance.now() - start) / 1000;
  const stats = wal.stats();
  await wal.close();
  return { entriesPerSecond: stats.appendCount / seconds, entriesPerSync: stats.appendCount / stats.syncCount };
}

async function hashWasmRate(): Promise<number> {
  const block = randomBytes(HASH_UPDATE_BYTES);
  const hasher = await createBlake3Hasher();
  const start = performance.now();
  for (let done = 0; done < HASH_WASM_BYTES; done += block.length) hasher.update(block);
  hasher.digest();
  return HASH_WASM_BYTES / 1e6 / ((performance.now() - start) / 1000);
}

function nobleRate(): number {
  const block = randomBytes(HASH_UPDATE_BYTES);
  const hasher = nobleBlake3.create();
  const start = performance.now();
  for (let done = 0; done < NOBLE_BYTES; done += block.length) hasher.update(block);
  hasher.digest();
  return NOBLE_BYTES / 1e6 / ((performance.now() - start) / 1000);
}

async function main(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'svc-bench-storage-'));
  try {
    const rows: Array<[string, string, string]> = [];
    // The raw rate is taken before and after the WAL runs: on a shared machine the spread is the noise.
    rows.push(['raw write+fdatasync (before)', `${(await rawSyncRate(dir)).toFixed(0)} /s`, '1 per sync']);
    for (const appenders of APPENDER_COUNTS) {
      const { entriesPerSecond, entriesPerSync } = await walRate(dir, appenders);
      rows.push([
        `WAL, ${appenders} concurrent appenders, ${ENTRY_DATA_BYTES} B entries`,
        `${entriesPerSecond.toFixed(0)} entries/s`,
        `${entriesPerSync.toFixed(1)} per sync`,
      ]);
    }
    rows.push(['raw write+fdatasync (after)', `${(await rawSyncRate(dir)).toFixed(0)} /s`, '1 per sync']);
    rows.push(['BLAKE3 hash-wasm', `${(await hashWasmRate()).toFixed(0)} MB/s`, `${HASH_WASM_BYTES >> 20} MiB`]);
    rows.push(['BLAKE3 @noble/hashes', `${nobleRate().toFixed(0)} MB/s`, `${NOBLE_BYTES >> 20} MiB`]);
    const widths = [0, 1, 2].map((i) => Math.max(...rows.map((r) => r[i]!.length)));
    console.log(`storage bench, ${RUN_SECONDS}s per WAL run, in ${tmpdir()}`);
    for (const row of rows) console.log(row.map((cell, i) => cell.padEnd(widths[i]!)).join('  '));
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

await main();
