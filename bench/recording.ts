// Flight recorder bench (not a test): what recording every engine step costs in write throughput.
// Two 3-node clusters (`svc cluster`: child processes, mutual TLS, real fdatasync), one recording (the
// default) and one with --no-recording, both up at once; rounds interleave (on, off, on, off, …) at each
// writer level, so a load swing on a shared machine hits both alike. Medians of the rounds and the median
// of the rounds' ratios are printed; the issue's bar is at most 5% at 1 and 64 writers.
//
//   npx tsx bench/recording.ts [--seconds 3] [--warmup 1] [--rounds 3] [--writers 1,64]
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { closedLoop, payload, type LoadResult } from './cluster/load.js';
import { startSvcCluster, type SvcCluster } from './cluster/svc-cluster.js';

const VALUE_CHARS = 96 - '{"d":""}'.length;

function numberArg(name: string, fallback: number): number {
  const at = process.argv.indexOf(`--${name}`);
  if (at < 0) return fallback;
  const value = Number(process.argv[at + 1]);
  if (!Number.isFinite(value) || value <= 0) throw new Error(`--${name} needs a positive number`);
  return value;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? 0;
}

async function main(): Promise<void> {
  const seconds = numberArg('seconds', 3);
  const warmup = numberArg('warmup', 1);
  const rounds = numberArg('rounds', 3);
  const at = process.argv.indexOf('--writers');
  const levels = at < 0 ? [1, 64] : process.argv[at + 1]!.split(',').map(Number);
  const dir = await mkdtemp(join(tmpdir(), 'svc-bench-recording-'));
  let on: SvcCluster | null = null;
  let off: SvcCluster | null = null;
  try {
    on = await startSvcCluster(join(dir, 'on'));
    off = await startSvcCluster(join(dir, 'off'), [], [], false, ['--no-recording']);
    console.log(`recording on vs off: two 3-node clusters, ${rounds} interleaved rounds of ${seconds} s per level`);
    console.log('| writers | recording on (writes/s) | off (writes/s) | on / off | on p99 | off p99 |');
    console.log('|---|---|---|---|---|---|');
    for (const writers of levels) {
      const results: { on: LoadResult[]; off: LoadResult[] } = { on: [], off: [] };
      for (let round = 1; round <= rounds; round++) {
        for (const [label, cluster] of [
          ['on', on],
          ['off', off],
        ] as const) {
          const tag = `${label}c${writers}r${round}`;
          results[label].push(
            await closedLoop(writers, warmup, seconds, (w, i) =>
              cluster.put(`bench/${tag}/w${w}/${i}`, payload(VALUE_CHARS, i)),
            ),
          );
        }
      }
      const ratio = median(results.on.map((r, i) => r.opsPerSecond / results.off[i]!.opsPerSecond));
      console.log(
        `| ${writers} | ${median(results.on.map((r) => r.opsPerSecond)).toFixed(0)} | ${median(results.off.map((r) => r.opsPerSecond)).toFixed(0)} | ${ratio.toFixed(3)} | ${median(results.on.map((r) => r.p99Ms)).toFixed(1)} ms | ${median(results.off.map((r) => r.p99Ms)).toFixed(1)} ms |`,
      );
    }
  } finally {
    await on?.stop();
    await off?.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

await main();
