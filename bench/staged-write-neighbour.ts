// Does a staged snapshot file's write and fsync hold the WAL's fdatasync behind it? (not a test; issue 17's
// staging cost). One loop appends WAL-sized records to a file and fdatasyncs each (as the WAL's group commit
// does); beside it, in alternating rounds, a file of --file-mb MB (a 100k-key store.json is ~13 MB) is written
// whole then fsynced (as SnapshotStore staged one before snapshotStageSyncEveryBytes), or in --piece-mb pieces
// each followed by fdatasync (about as it stages one now: no flush has more than one piece to push). Prints, per
// mode, the WAL syncs that ran while the staged file was being written: count, p50, p99, max, and how many took
// over 20 / 50 ms, and how long the staged write took.
//
//   npx tsx bench/staged-write-neighbour.ts [--dir DIR] [--rounds 6] [--file-mb 13] [--piece-mb 2] [--record-bytes 230]
import { mkdtempSync, rmSync } from 'node:fs';
import { open, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { numberArg } from './cluster/trace-files.js';
import { writeAll, writeFileDurable } from '../transports/storage/durable-fs.js';

const dirArg = process.argv.indexOf('--dir');
const dir = dirArg >= 0 ? process.argv[dirArg + 1]! : mkdtempSync(join(tmpdir(), 'staged-write-neighbour-'));
const rounds = numberArg('rounds', 6);
const fileBytes = numberArg('file-mb', 13) * 1024 * 1024;
const pieceBytes = numberArg('piece-mb', 2) * 1024 * 1024;
const recordBytes = numberArg('record-bytes', 230);

async function writeInSyncedPieces(path: string, bytes: Uint8Array): Promise<void> {
  const handle = await open(path, 'wx');
  try {
    for (let at = 0; at < bytes.length; at += pieceBytes) {
      await writeAll(handle, bytes.subarray(at, at + pieceBytes));
      await handle.datasync();
    }
    await handle.sync();
  } finally {
    await handle.close();
  }
}

const modes: Record<string, (path: string, bytes: Uint8Array) => Promise<void>> = {
  whole: writeFileDurable,
  pieces: writeInSyncedPieces,
};

async function main(): Promise<void> {
  const wal = await open(join(dir, 'wal'), 'a');
  const record = new Uint8Array(recordBytes).fill(7);
  const staged = new Uint8Array(fileBytes);
  for (let i = 0; i < staged.length; i++) staged[i] = (i * 31) & 0xff;
  const results: Record<string, { syncs: number[]; stagedMs: number[] }> = {};
  for (const name of Object.keys(modes)) results[name] = { syncs: [], stagedMs: [] };
  for (let round = 0; round < rounds; round++) {
    // Alternated, and each mode first in half of the rounds, so load swings hit both alike.
    const order = round % 2 === 0 ? ['whole', 'pieces'] : ['pieces', 'whole'];
    for (const name of order) {
      const path = join(dir, `staged-${round}-${name}`);
      let staging = true;
      const began = performance.now();
      const write = modes[name]!(path, staged).finally(() => {
        staging = false;
        results[name]!.stagedMs.push(performance.now() - began);
      });
      // Bounded by the staged write: the loop stops when it has finished.
      while (staging) {
        const from = performance.now();
        await wal.write(record);
        await wal.datasync();
        results[name]!.syncs.push(performance.now() - from);
      }
      await write;
      await rm(path);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }
  await wal.close();
  for (const [name, { syncs, stagedMs }] of Object.entries(results)) {
    const sorted = [...syncs].sort((a, b) => a - b);
    const q = (p: number): string => sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!.toFixed(1);
    const over = (ms: number): number => syncs.filter((s) => s > ms).length;
    console.log(
      `${name}: staged write ${stagedMs.map((ms) => ms.toFixed(0)).join(', ')} ms; WAL syncs beside it ${syncs.length}, p50 ${q(0.5)} ms, p99 ${q(0.99)}, max ${q(1)}, >20 ms ${over(20)}, >50 ms ${over(50)}`,
    );
  }
  if (dirArg < 0) rmSync(dir, { recursive: true, force: true });
}

void main();
