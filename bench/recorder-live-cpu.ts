// The flight recorder's CPU inside live nodes (not a test; issue 22): one 3-node cluster (`svc cluster`, mutual
// TLS, real fdatasync) whose nodes run under `node --cpu-prof`, closed-loop writes for --seconds, then, for each
// node's main thread, over exactly the load's window (the profile's samples are on the machine's monotonic
// clock): its busy samples per write, the recorder's (transports/node/recorder.ts, recording-lines.ts and
// recording/, with what they call) per write and as a share of busy, the garbage collector's, and the
// recorder's top functions. Samples are counted (each ~1 ms of CPU), not their wall-clock deltas, which on a
// loaded machine carry the time a descheduled thread waited.
//
// This is what showed where the 1-writer toll came from: the in-process bench (bench/recorder-step.ts) times
// the encoder warm, in a loop; a live node encoded one or two steps at the end of each turn, between its
// gRPC, TLS and engine work, at about three times that CPU. Pass recording limits to compare batch sizes:
//
//   npx tsx bench/recorder-live-cpu.ts [--seconds 12] [--writers 1] [--cluster-flag=FLAG ...]
//   e.g. --cluster-flag=--no-recording (the baseline's busy samples per write)
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { closedLoop, payload } from './cluster/load.js';
import { startSvcCluster } from './cluster/svc-cluster.js';
import { monotonicUs } from '../transports/node/write-trace.js';

const RECORDER_CODE =
  /\/transports\/node\/recorder\.[tj]s$|\/transports\/node\/recording-lines\.[tj]s$|\/recording\/[^/]+\.[tj]s$/;
const VALUE_CHARS = 96 - '{"d":""}'.length;
const TOP_COUNT = 8;

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string };
  children?: number[];
}
interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  samples: number[];
  timeDeltas: number[];
}

function arg(name: string, fallback: number): number {
  const at = process.argv.indexOf(`--${name}`);
  return at < 0 ? fallback : Number(process.argv[at + 1]);
}

/** windowCounts: a main-thread profile's samples between from and to (µs, monotonic), by kind. */
function windowCounts(profile: CpuProfile, from: number, to: number) {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const child of n.children ?? []) parent.set(child, n.id);
  const memo = new Map<number, boolean>();
  const inside = (id: number): boolean => {
    const known = memo.get(id);
    if (known !== undefined) return known;
    const up = parent.get(id);
    const result = RECORDER_CODE.test(byId.get(id)!.callFrame.url) || (up !== undefined && inside(up));
    memo.set(id, result);
    return result;
  };
  let at = profile.startTime;
  let busy = 0;
  let recorder = 0;
  let gc = 0;
  const functions = new Map<string, number>();
  for (let i = 0; i < profile.samples.length; i++) {
    at += profile.timeDeltas[i] ?? 0;
    if (at < from || at > to) continue;
    const id = profile.samples[i]!;
    const frame = byId.get(id)!.callFrame;
    if (frame.functionName === '(idle)') continue;
    busy++;
    if (frame.functionName === '(garbage collector)') gc++;
    if (!inside(id)) continue;
    recorder++;
    const name = `${frame.functionName || '(anonymous)'} ${frame.url.replace(/^.*\/(wt-[^/]+|main)\//, '')}`;
    functions.set(name, (functions.get(name) ?? 0) + 1);
  }
  return { busy, recorder, gc, functions };
}

async function main(): Promise<void> {
  const seconds = arg('seconds', 12);
  const writers = arg('writers', 1);
  const flags = process.argv.filter((a) => a.startsWith('--cluster-flag=')).map((a) => a.slice(15));
  const dir = await mkdtemp(join(tmpdir(), 'svc-recorder-live-'));
  const profileDir = join(dir, 'profiles');
  try {
    const cluster = await startSvcCluster(
      join(dir, 'cluster'),
      ['--cpu-prof', `--cpu-prof-dir=${profileDir}`],
      [],
      false,
      flags,
    );
    let load;
    const from = monotonicUs() + 1_000_000;
    try {
      load = await closedLoop(writers, 1, seconds, (w, i) => cluster.put(`live/w${w}/${i}`, payload(VALUE_CHARS, i)));
    } finally {
      await cluster.stop();
    }
    const to = from + seconds * 1_000_000;
    const writes = Math.max(1, load.ops);
    console.log(
      `${writers} writer(s), ${seconds} s: ${load.opsPerSecond.toFixed(0)} writes/s; per write, main threads, counted samples (~1 ms each)${flags.length ? `; flags ${flags.join(' ')}` : ''}`,
    );
    const perWrite = (n: number): string => `${((n * 1000) / writes).toFixed(1)} µs`;
    // Main threads only: a node's profile of its thread 0 (a worker thread, if any, writes another file).
    for (const file of (await readdir(profileDir)).filter((f) => /\.0\.\d+\.cpuprofile$/.test(f)).sort()) {
      const pid = Number(/^CPU\.\d+\.\d+\.(\d+)\./.exec(file)?.[1] ?? 0);
      const member = cluster.cluster.members.find((m) => m.pid === pid);
      if (!member) continue;
      const c = windowCounts(JSON.parse(await readFile(join(profileDir, file), 'utf8')) as CpuProfile, from, to);
      const role = member.name === cluster.leaderName ? 'leader' : 'follower';
      console.log(
        `  ${member.name} (${role}): busy ${perWrite(c.busy)}, recorder ${perWrite(c.recorder)} (${((100 * c.recorder) / Math.max(1, c.busy)).toFixed(1)}% of busy), gc ${perWrite(c.gc)}`,
      );
      for (const [name, n] of [...c.functions].sort((a, b) => b[1] - a[1]).slice(0, TOP_COUNT))
        console.log(`      ${perWrite(n).padStart(9)}  ${name}`);
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

await main();
