// Flight recorder bench (not a test): what recording every engine step costs a write. Two 3-node clusters
// (`svc cluster`: child processes, mutual TLS, real fdatasync), one recording (the default) and one with
// --no-recording, both up at once; rounds interleave at each writer level, the order flipping every round, so
// a load swing on a shared machine hits both alike (bench/cluster/recording-toll.ts). Printed per level: writes/s
// and the leader's CPU per write (from /proc: the steadier figure on a shared machine), each as the median of
// the rounds with its range, and the median of the rounds' on/off ratios; then the bytes the recording and the
// WAL add per write and per second. The issue's bar is at most 5% at 1 and 64 writers. The last line is
// `recording on/off writes/s c1=… c64=…; leader CPU per write c1=… c64=…`.
// `npx tsx bench/cluster.ts --recording` runs the same measurement with bench/cluster.ts's options.
//
// --cpu-prof runs both clusters' nodes under `node --cpu-prof` (the same overhead on both sides) and prints,
// for each recording node, the share of its busy CPU time spent in the recorder (transports/node/recorder.ts
// and recording/, with what they call) and where inside it.
//
//   npx tsx bench/recording.ts [--seconds 3] [--warmup 1] [--rounds 7] [--writers 1,64] [--cpu-prof] [--no-effect-texts]
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { summarizeProfiles, subtreeShares } from './cluster/profile.js';
import { measureRecordingToll } from './cluster/recording-toll.js';
import type { SvcCluster } from './cluster/svc-cluster.js';

/** RECORDER_CODE: the frames counted as the recorder's in a CPU profile. */
const RECORDER_CODE =
  /\/transports\/node\/recorder\.[tj]s$|\/transports\/node\/recording-lines\.[tj]s$|\/recording\/[^/]+\.[tj]s$/;
const PROFILE_TOP_COUNT = 8;

function numberArg(name: string, fallback: number): number {
  const at = process.argv.indexOf(`--${name}`);
  if (at < 0) return fallback;
  const value = Number(process.argv[at + 1]);
  if (!Number.isFinite(value) || value <= 0) throw new Error(`--${name} needs a positive number`);
  return value;
}

async function main(): Promise<void> {
  const at = process.argv.indexOf('--writers');
  const dir = await mkdtemp(join(tmpdir(), 'svc-bench-recording-'));
  const cpuProf = process.argv.includes('--cpu-prof');
  try {
    const toll = await measureRecordingToll({
      dir,
      seconds: numberArg('seconds', 3),
      warmup: numberArg('warmup', 1),
      rounds: numberArg('rounds', 7),
      writerLevels: at < 0 ? [1, 64] : process.argv[at + 1]!.split(',').map(Number),
      nodeOptions: (side) => (cpuProf ? ['--cpu-prof', `--cpu-prof-dir=${join(dir, `profile-${side}`)}`] : []),
      // --no-effect-texts: the recording side records digests only (recording.effectTexts: false).
      onFlags: process.argv.includes('--no-effect-texts') ? ['--no-recording-effect-texts'] : [],
    });
    // The profiles are written as the nodes exit (measureRecordingToll has stopped them).
    if (cpuProf) {
      await printRecorderShares(join(dir, 'profile-on'), toll.on);
      await printAreas(join(dir, 'profile-on'), join(dir, 'profile-off'));
    }
  } finally {
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

/**
 * printAreas: both clusters' CPU time by area of the code (self time, all three nodes summed, the whole run),
 * side by side: where a recording cluster's extra CPU goes, the recorder's own code or elsewhere (the garbage
 * collector, the runtime, the engine...).
 */
async function printAreas(onDir: string, offDir: string): Promise<void> {
  const sum = async (dir: string): Promise<Map<string, number>> => {
    const areas = new Map<string, number>();
    for (const summary of await summarizeProfiles(dir, Number.MAX_SAFE_INTEGER))
      for (const a of summary.byArea) areas.set(a.area, (areas.get(a.area) ?? 0) + a.ms);
    return areas;
  };
  const [on, off] = await Promise.all([sum(onDir), sum(offDir)]);
  const rows = [...new Set([...on.keys(), ...off.keys()])]
    .map((area) => ({ area, on: on.get(area) ?? 0, off: off.get(area) ?? 0 }))
    .sort((a, b) => Math.abs(b.on - b.off) - Math.abs(a.on - a.off));
  console.log('');
  console.log('CPU ms by area, the three nodes summed over the whole run: recording on, off, on − off (largest first)');
  for (const r of rows.slice(0, 16))
    console.log(
      `  ${r.area.padEnd(28)} ${r.on.toFixed(0).padStart(8)} ${r.off.toFixed(0).padStart(8)} ${(r.on - r.off).toFixed(0).padStart(8)}`,
    );
}

await main();
