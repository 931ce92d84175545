// Does an unsynced appender slow a neighbour's fdatasync? (not a test; issue 22's recording toll). One loop
// appends WAL-sized records to a file and fdatasyncs each (as the WAL's group commit at one writer does); beside
// it, in alternating windows, a second file gets nothing, or an unsynced append every --flush-ms (as the flight
// recorder's flush does), written as plain appends, into a file whose size is set ahead (sparse), or into one written with zeros and synced ahead (--modes picks which). Prints
// each mode's median and p90 fdatasync time and syncs per second, the windows alternated so load swings hit
// every mode alike.
//
//   npx tsx bench/fsync-neighbour.ts [--dir DIR] [--neighbour-dir DIR] [--seconds 2] [--rounds 6]
//                                    [--record-bytes 230] [--flush-ms 100] [--flush-bytes 8000]
import { closeSync, fdatasyncSync, ftruncateSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';

function arg(name: string, fallback: string): string {
  const at = process.argv.indexOf(`--${name}`);
  return at < 0 ? fallback : process.argv[at + 1]!;
}

const dir = arg('dir', '') || mkdtempSync(join(tmpdir(), 'fsync-neighbour-'));
const neighbourDir = arg('neighbour-dir', '') || dir;
const seconds = Number(arg('seconds', '2'));
const rounds = Number(arg('rounds', '6'));
const recordBytes = Number(arg('record-bytes', '230'));
const flushMs = Number(arg('flush-ms', '100'));
const flushBytes = Number(arg('flush-bytes', '8000'));
const modes = arg('modes', 'none,append,sparse,zeros').split(',');
const PREALLOC_BYTES = 16 * 1024 * 1024;

function quantile(sorted: number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN;
}

async function window(mode: string, round: number): Promise<number[]> {
  const wal = await open(join(dir, `wal-${mode}-${round}`), 'w');
  const neighbourPath = join(neighbourDir, `rec-${mode}-${round}`);
  const fd = mode === 'none' ? -1 : openSync(neighbourPath, 'w');
  // sparse: the size set ahead (no blocks); zeros: blocks written and synced ahead (node has no fallocate).
  if (mode === 'sparse') ftruncateSync(fd, PREALLOC_BYTES);
  if (mode === 'zeros') {
    const zeros = Buffer.alloc(1024 * 1024);
    for (let at = 0; at < PREALLOC_BYTES; at += zeros.length) writeSync(fd, zeros, 0, zeros.length, at);
    fdatasyncSync(fd);
  }
  let at = 0;
  const chunk = Buffer.alloc(flushBytes, 7);
  // The neighbour's flush, on a timer, synchronous (a thread of its own would only add noise to the figure).
  const timer =
    fd < 0
      ? null
      : setInterval(() => {
          writeSync(fd, chunk, 0, chunk.length, at);
          at += chunk.length;
        }, flushMs);
  const record = Buffer.alloc(recordBytes, 1);
  const times: number[] = [];
  const started = performance.now();
  // Bounded by the clock.
  while (performance.now() - started < seconds * 1000) {
    await wal.write(record, 0, record.length, null);
    const t = performance.now();
    await wal.datasync();
    times.push(performance.now() - t);
  }
  if (timer) clearInterval(timer);
  await wal.close();
  if (fd >= 0) closeSync(fd);
  return times;
}

async function main(): Promise<void> {
  const all = new Map<string, number[]>(modes.map((m) => [m, []]));
  const rates = new Map<string, number[]>(modes.map((m) => [m, []]));
  try {
    for (let round = 0; round < rounds; round++) {
      const order = round % 2 === 0 ? modes : [...modes].reverse();
      for (const mode of order) {
        const times = await window(mode, round);
        all.get(mode)!.push(...times);
        rates.get(mode)!.push(times.length / seconds);
      }
    }
  } finally {
    if (!arg('dir', '')) rmSync(dir, { recursive: true, force: true });
  }
  console.log(
    `fdatasync of ${recordBytes}-byte appends in ${dir}; neighbour: ${flushBytes} bytes every ${flushMs} ms in ${neighbourDir}`,
  );
  for (const mode of modes) {
    const sorted = all.get(mode)!.sort((a, b) => a - b);
    const r = rates.get(mode)!.sort((a, b) => a - b);
    console.log(
      `  ${mode.padEnd(9)} p50 ${quantile(sorted, 0.5).toFixed(3)} ms  p90 ${quantile(sorted, 0.9).toFixed(3)} ms  p99 ${quantile(sorted, 0.99).toFixed(3)} ms  syncs/s median ${quantile(r, 0.5).toFixed(0)} [${r[0]!.toFixed(0)}–${r[r.length - 1]!.toFixed(0)}]`,
    );
  }
}

await main();
