// CPU per write bench (not a test): how much CPU the leader, the followers and the client spend per write on
// the one-unary-Propose-per-write path (bench/cluster.ts's "one request per write" row). On a shared two-core
// machine the throughput at 64 writers is set by that CPU, and CPU per write is much less noisy than
// writes/s when neighbours run, so A/B comparisons of a change use this figure.
//
//   npx tsx bench/write-cpu.ts [--writers 64] [--seconds 4] [--warmup 3] [--rounds 2] [--insecure] [--cpu-prof] [--node-option X]
//
// --node-option X (repeatable) passes X to each node's process (e.g. a V8 heap flag to compare).
// --cpu-prof runs the nodes under `node --cpu-prof` and prints each one's top self-time functions (start-up and
// warm-up included).
//
// Each round runs a closed loop of `writers` one-call writers at the leader and reads the members' CPU from
// /proc (bench/cluster/proc-cpu.ts) and the client's from process.cpuUsage over the measured window.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startSvcCluster } from './cluster/svc-cluster.js';
import { closedLoop, payload, SVC_VALUE_CHARS } from './cluster/load.js';
import { processCpuMs } from './cluster/proc-cpu.js';
import { numberArg } from './cluster/trace-files.js';
import { summarizeProfiles } from './cluster/profile.js';

/** IDLE_MS: how long the members' idle CPU is measured before the rounds. */
const IDLE_MS = 3_000;
/** PROFILE_TOP_COUNT: how many functions --cpu-prof lists per node. */
const PROFILE_TOP_COUNT = 45;

async function main(): Promise<void> {
  const writers = numberArg('writers', 64);
  const seconds = numberArg('seconds', 4);
  const warmup = numberArg('warmup', 3);
  const rounds = numberArg('rounds', 2);
  const insecure = process.argv.includes('--insecure');
  const dir = await mkdtemp(join(tmpdir(), 'svc-write-cpu-'));
  const profileDir = join(dir, 'profiles');
  const cpuProf = process.argv.includes('--cpu-prof');
  const svc = await startSvcCluster(
    join(dir, 'svc'),
    [
      ...(cpuProf ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : []),
      ...process.argv.flatMap((arg, i) => (arg === '--node-option' ? [process.argv[i + 1]!] : [])),
    ],
    [],
    insecure,
  );
  let leaderPid: number | undefined;
  try {
    const leader = svc.cluster.members.find((m) => m.name === svc.leaderName)!;
    leaderPid = leader.pid;
    const followers = svc.cluster.members.filter((m) => m.name !== svc.leaderName).map((m) => m.pid);
    const metrics = async (): Promise<string> =>
      (await fetch(`${leader.metricsAddr ?? leader.httpAddr}/metrics`)).text().catch(() => '');
    const counter = (text: string, name: string): number =>
      Number(new RegExp(`^${name}(?:\\{[^}]*\\})? ([0-9.e+]+)$`, 'm').exec(text)?.[1] ?? NaN);
    // The members' CPU with no writes (heartbeats, timers, stats): subtracted per second of window, so the net
    // figure is the CPU the writes themselves cost, which does not grow as neighbours slow the writes down.
    const idleFrom = processCpuMs([leader.pid, ...followers]);
    const idleLeaderFrom = processCpuMs([leader.pid]);
    const idleStartedAt = Date.now();
    await new Promise((resolve) => setTimeout(resolve, IDLE_MS));
    const idleSeconds = (Date.now() - idleStartedAt) / 1000;
    const idleLeaderPerSecond = (processCpuMs([leader.pid]) - idleLeaderFrom) / idleSeconds;
    const idleFollowersPerSecond =
      (processCpuMs([leader.pid, ...followers]) - idleFrom) / idleSeconds - idleLeaderPerSecond;
    console.log(
      `idle CPU ms/s: leader ${idleLeaderPerSecond.toFixed(1)}, followers ${idleFollowersPerSecond.toFixed(1)}`,
    );
    for (let round = 1; round <= rounds; round++) {
      const before = await metrics();
      let leaderStart = 0;
      let followersStart = 0;
      let clientStart = 0;
      let windowFromUs = 0;
      const at = setTimeout(() => {
        leaderStart = processCpuMs([leader.pid]);
        followersStart = processCpuMs(followers);
        const c = process.cpuUsage();
        clientStart = (c.user + c.system) / 1000;
        windowFromUs = Number(process.hrtime.bigint() / 1000n);
      }, warmup * 1000);
      const result = await closedLoop(writers, warmup, seconds, (w, i) =>
        svc.putAlone(`cpu/r${round}/w${w}/${i}`, payload(SVC_VALUE_CHARS, i)),
      );
      clearTimeout(at);
      const windowToUs = Number(process.hrtime.bigint() / 1000n);
      const c = process.cpuUsage();
      const leaderMs = processCpuMs([leader.pid]) - leaderStart;
      const followersMs = processCpuMs(followers) - followersStart;
      const clientMs = (c.user + c.system) / 1000 - clientStart;
      const after = await metrics();
      const delta = (name: string): number => counter(after, name) - counter(before, name);
      const syncs = delta('svc_wal_sync_seconds_count');
      const batches = delta('svc_proposal_batch_size_count');
      const proposals = delta('svc_proposal_batch_size_sum');
      console.log(
        `  leader: ${(proposals / syncs).toFixed(1)} proposals per WAL sync, ${(proposals / batches).toFixed(1)} per engine propose input`,
      );
      // The loop's last writes end a little after the window: a slight overcount alike on both sides of an A/B.
      const perWrite = (ms: number): string => ((ms * 1000) / Math.max(1, result.ops)).toFixed(0);
      const windowSeconds = (windowToUs - windowFromUs) / 1e6;
      const leaderNet = leaderMs - idleLeaderPerSecond * windowSeconds;
      const followersNet = followersMs - idleFollowersPerSecond * windowSeconds;
      console.log(
        `c${writers} round ${round}: ${result.opsPerSecond.toFixed(0)} writes/s p50 ${result.p50Ms.toFixed(2)} ms, CPU µs/write leader ${perWrite(leaderMs)} followers ${perWrite(followersMs)} client ${perWrite(clientMs)} total ${perWrite(leaderMs + followersMs + clientMs)}; net of idle: leader ${perWrite(leaderNet)} followers ${perWrite(followersNet)} ops ${result.ops} window ${windowFromUs}..${windowToUs}${result.errors ? ` errors ${result.errors} (${result.firstError})` : ''}`,
      );
    }
  } finally {
    await svc.stop();
  }
  try {
    if (cpuProf) {
      for (const summary of await summarizeProfiles(profileDir, PROFILE_TOP_COUNT)) {
        const role = summary.pid === leaderPid ? 'LEADER' : 'follower or supervisor';
        console.log(`cpu profile (${role}, pid ${summary.pid}): ${summary.totalMs.toFixed(0)} ms sampled`);
        console.log(`  by area: ${summary.byArea.map((a) => `${a.area} ${(a.share * 100).toFixed(1)}%`).join(', ')}`);
        for (const f of summary.byFunction) console.log(`    ${(f.share * 100).toFixed(1).padStart(5)}%  ${f.name}`);
      }
    }
  } finally {
    if (!process.argv.includes('--keep')) await rm(dir, { recursive: true, force: true });
    else console.log(`kept ${dir}`);
  }
}

await main();
