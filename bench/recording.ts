// Flight recorder bench (not a test): what recording every engine step costs in write throughput.
// Two 3-node clusters (`svc cluster`: child processes, mutual TLS, real fdatasync), one recording (the
// default) and one with --no-recording, both up at once; rounds interleave (on, off, on, off, …) at each
// writer level, so a load swing on a shared machine hits both alike. Medians of the rounds and the median
// of the rounds' ratios are printed; the issue's bar is at most 5% at 1 and 64 writers. The last line is
// `recording on/off writes/s c1=… c64=…` (the median of each level's round ratios).
//
// --cpu-prof runs both clusters' nodes under `node --cpu-prof` (the same overhead on both sides) and prints,
// for each recording node, the share of its busy CPU time spent in the recorder (transports/node/recorder.ts
// and recording/, with what they call) and where inside it: on a shared machine that share is steadier
// than a throughput ratio.
//
//   npx tsx bench/recording.ts [--seconds 3] [--warmup 1] [--rounds 3] [--writers 1,64] [--cpu-prof] [--no-effect-texts]
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { closedLoop, payload, type LoadResult } from './cluster/load.js';
import { subtreeShares } from './cluster/profile.js';
import { startSvcCluster, type SvcCluster } from './cluster/svc-cluster.js';

const VALUE_CHARS = 96 - '{"d":""}'.length;
/** RECORDER_CODE: the frames counted as the recorder's in a CPU profile. */
const RECORDER_CODE = /\/transports\/node\/recorder\.[tj]s$|\/recording\/[^/]+\.[tj]s$/;
const PROFILE_TOP_COUNT = 8;

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
  const cpuProf = process.argv.includes('--cpu-prof');
  const profiler = (side: string): string[] =>
    cpuProf ? ['--cpu-prof', `--cpu-prof-dir=${join(dir, `profile-${side}`)}`] : [];
  const ratios: string[] = [];
  let on: SvcCluster | null = null;
  let off: SvcCluster | null = null;
  try {
    // --no-effect-texts: the recording side records digests only (recording.effectTexts: false).
    const onFlags = process.argv.includes('--no-effect-texts') ? ['--no-recording-effect-texts'] : [];
    on = await startSvcCluster(join(dir, 'on'), profiler('on'), [], false, onFlags);
    off = await startSvcCluster(join(dir, 'off'), profiler('off'), [], false, ['--no-recording']);
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
      ratios.push(`c${writers}=${ratio.toFixed(3)}`);
      console.log(
        `| ${writers} | ${median(results.on.map((r) => r.opsPerSecond)).toFixed(0)} | ${median(results.off.map((r) => r.opsPerSecond)).toFixed(0)} | ${ratio.toFixed(3)} | ${median(results.on.map((r) => r.p99Ms)).toFixed(1)} ms | ${median(results.off.map((r) => r.p99Ms)).toFixed(1)} ms |`,
      );
    }
    // The profiles are written as the nodes exit.
    const stopped = on;
    await on.stop();
    on = null;
    await off.stop();
    off = null;
    if (cpuProf) await printRecorderShares(join(dir, 'profile-on'), stopped);
    console.log(`recording on/off writes/s ${ratios.join(' ')}`);
  } finally {
    await on?.stop();
    await off?.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

/** printRecorderShares: for each node of the recording cluster, the recorder's share of its busy CPU. */
async function printRecorderShares(profileDir: string, cluster: SvcCluster): Promise<void> {
  console.log('');
  console.log("recorder share of each node's busy CPU (inclusive: the recorder and what it calls)");
  for (const share of await subtreeShares(profileDir, RECORDER_CODE, PROFILE_TOP_COUNT)) {
    const member = cluster.cluster.members.find((m) => m.pid === share.pid);
    if (!member || share.share === 0) continue;
    const role = member.name === cluster.leaderName ? 'leader' : 'follower';
    console.log(
      `${member.name} (${role}): ${(share.share * 100).toFixed(2)}% of ${share.busyMs.toFixed(0)} ms busy, ${(share.sampleShare * 100).toFixed(2)}% of its busy samples`,
    );
    for (const f of share.byFunction) console.log(`  ${(f.share * 100).toFixed(2).padStart(6)}%  ${f.name}`);
  }
}

await main();
