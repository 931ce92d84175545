// Where the flight recorder's toll lands in a node process (not a test): two 3-node clusters (`svc cluster`),
// one recording and one with --no-recording, closed-loop writes alternating between them (order flipping each
// round), and for every member, per write, from /proc: CPU by thread (the main thread, libuv's threadpool,
// V8's helpers), context switches, and write syscalls. Medians over rounds, summed over the member roles.
//
//   npx tsx bench/recording-threads.ts [--writers 1] [--rounds 6] [--seconds 3] [--warmup 1]
//                                      [--node-option=OPT ...] [--sides 'off:--no-recording;on:'] [--keep] [--perf]
//
// --sides names the clusters, each with its `svc cluster` flags and VAR=value environment (comma-separated).
//
// --perf also counts, with `perf stat`, each member's syscalls, context switches and page faults over the window.
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { closedLoop, payload } from './cluster/load.js';
import { startSvcCluster, type SvcCluster } from './cluster/svc-cluster.js';
import { median } from './cluster/recording-toll.js';

const VALUE_CHARS = 96 - '{"d":""}'.length;
const TICKS_PER_SECOND = 100;

function arg(name: string, fallback: number): number {
  const at = process.argv.indexOf(`--${name}`);
  return at < 0 ? fallback : Number(process.argv[at + 1]);
}
const repeated = (prefix: string): string[] =>
  process.argv.filter((a) => a.startsWith(prefix)).map((a) => a.slice(prefix.length));

/** Sample: one process's counters at one moment. */
interface Sample {
  /** cpuMs by thread kind (main, libuv, V8 helpers, other). */
  cpuMs: Map<string, number>;
  userMs: number;
  sysMs: number;
  voluntary: number;
  involuntary: number;
  syscw: number;
  minorFaults: number;
}

function threadKind(comm: string, tid: number, pid: number): string {
  if (tid === pid) return 'main';
  if (comm.startsWith('libuv-worker')) return 'libuv';
  if (comm.startsWith('V8 ') || comm.startsWith('node')) return `v8/node helpers`;
  return comm;
}

function sample(pid: number): Sample {
  const cpuMs = new Map<string, number>();
  let userMs = 0;
  let sysMs = 0;
  let minorFaults = 0;
  for (const tid of readdirSync(`/proc/${pid}/task`).map(Number)) {
    let stat: string;
    try {
      stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
    } catch {
      continue;
    }
    const comm = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const u = (Number(f[11]) * 1000) / TICKS_PER_SECOND;
    const s = (Number(f[12]) * 1000) / TICKS_PER_SECOND;
    if (tid === pid) minorFaults = Number(f[7]);
    userMs += u;
    sysMs += s;
    const kind = threadKind(comm, tid, pid);
    cpuMs.set(kind, (cpuMs.get(kind) ?? 0) + u + s);
  }
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const field = (name: string): number => Number(new RegExp(`${name}:\\s+(\\d+)`).exec(status)?.[1] ?? NaN);
  const io = readFileSync(`/proc/${pid}/io`, 'utf8');
  return {
    cpuMs,
    userMs,
    sysMs,
    voluntary: field('voluntary_ctxt_switches'),
    involuntary: field('nonvoluntary_ctxt_switches'),
    syscw: Number(/syscw:\s+(\d+)/.exec(io)?.[1] ?? NaN),
    minorFaults,
  };
}

function diff(a: Sample, b: Sample): Map<string, number> {
  const out = new Map<string, number>();
  for (const [k, v] of b.cpuMs) out.set(`cpu ${k} µs`, (v - (a.cpuMs.get(k) ?? 0)) * 1000);
  out.set('user µs', (b.userMs - a.userMs) * 1000);
  out.set('sys µs', (b.sysMs - a.sysMs) * 1000);
  out.set('voluntary cs', b.voluntary - a.voluntary);
  out.set('involuntary cs', b.involuntary - a.involuntary);
  out.set('write syscalls', b.syscw - a.syscw);
  out.set('minor faults (main)', b.minorFaults - a.minorFaults);
  return out;
}

type Rows = Map<string, number[]>;

/** perfStat counts a process's events with `perf stat` from `fromS` for `forS` seconds. */
function perfStat(pid: number, fromS: number, forS: number): Promise<Map<string, number>> {
  return new Promise((resolve) => {
    setTimeout(() => {
      const events = 'raw_syscalls:sys_enter,context-switches,page-faults,task-clock';
      const child = spawn('perf', ['stat', '-x', ',', '-e', events, '-p', String(pid), 'sleep', String(forS)], {
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      let err = '';
      child.stderr.on('data', (c: Buffer) => (err += c.toString()));
      child.on('exit', () => {
        const out = new Map<string, number>();
        for (const line of err.split('\n')) {
          const f = line.split(',');
          if (f.length > 3 && f[0] !== '' && !Number.isNaN(Number(f[0]))) out.set(f[2]!, Number(f[0]));
        }
        resolve(out);
      });
    }, fromS * 1000);
  });
}

async function main(): Promise<void> {
  const writers = arg('writers', 1);
  const rounds = arg('rounds', 6);
  const seconds = arg('seconds', 3);
  const warmup = arg('warmup', 1);
  const nodeOptions = repeated('--node-option=');
  const dir = await mkdtemp(join(tmpdir(), 'svc-recording-threads-'));
  // --sides name:flag,flag:VAR=value,... (default on, off): a cluster per side, started with its flags and env.
  const at = process.argv.indexOf('--sides');
  const sideSpecs = (at < 0 ? 'off:--no-recording;on:' : process.argv[at + 1]!).split(';').map((spec) => {
    const [name, ...rest] = spec.split(':');
    const parts = rest
      .join(':')
      .split(',')
      .filter((p) => p !== '');
    return {
      name: name!,
      flags: parts.filter((p) => p.startsWith('--')),
      env: parts.filter((p) => !p.startsWith('--')).map((p) => p.split('=') as [string, string]),
    };
  });
  const sides = sideSpecs.map((s) => s.name);
  const clusters = new Map<string, SvcCluster>();
  const rows = new Map<string, Rows>();
  const rates = new Map<string, number[]>();
  try {
    for (const spec of sideSpecs) {
      const saved = spec.env.map(([k]) => [k, process.env[k]] as const);
      for (const [k, v] of spec.env) process.env[k] = v;
      clusters.set(spec.name, await startSvcCluster(join(dir, spec.name), nodeOptions, [], false, spec.flags));
      for (const [k, v] of saved)
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
    }
    for (let round = 1; round <= rounds; round++) {
      // The order rotates each round and flips every other, so each side runs in each position alike.
      const rotated = sides.map((_, i) => sides[(i + round) % sides.length]!);
      const order = round % 2 === 1 ? rotated : rotated.reverse();
      for (const side of order) {
        const cluster = clusters.get(side)!;
        const members = cluster.cluster.members.map((m) => ({
          role: m.name === cluster.leaderName ? 'leader' : 'follower',
          pid: m.pid,
        }));
        let before: Sample[] = [];
        const opened = new Promise<void>((resolve) =>
          setTimeout(() => {
            before = members.map((m) => sample(m.pid));
            resolve();
          }, warmup * 1000),
        );
        let after: Sample[] = [];
        const closed = new Promise<void>((resolve) =>
          setTimeout(
            () => {
              after = members.map((m) => sample(m.pid));
              resolve();
            },
            (warmup + seconds) * 1000,
          ),
        );
        const perf = process.argv.includes('--perf') ? members.map((m) => perfStat(m.pid, warmup, seconds)) : [];
        const load = await closedLoop(writers, warmup, seconds, (w, i) =>
          cluster.put(`t/${side}${round}/w${w}/${i}`, payload(VALUE_CHARS, i)),
        );
        await Promise.all([opened, closed]);
        (rates.get(side) ?? rates.set(side, []).get(side)!).push(load.opsPerSecond);
        const writes = Math.max(1, load.ops);
        // Followers summed (both of them), per write.
        const perRole = new Map<string, Map<string, number>>();
        const perfCounts = await Promise.all(perf);
        members.forEach((m, i) => {
          const d = diff(before[i]!, after[i]!);
          for (const [k, v] of perfCounts[i] ?? []) d.set(`perf ${k}`, v);
          const acc = perRole.get(m.role) ?? perRole.set(m.role, new Map()).get(m.role)!;
          for (const [k, v] of d) acc.set(k, (acc.get(k) ?? 0) + v / writes);
        });
        for (const [role, values] of perRole) {
          const key = `${side} ${role}`;
          const r = rows.get(key) ?? rows.set(key, new Map()).get(key)!;
          for (const [k, v] of values) (r.get(k) ?? r.set(k, []).get(k)!).push(v);
        }
        console.log(`  round ${round} ${side}: ${load.opsPerSecond.toFixed(0)} writes/s`);
      }
    }
  } finally {
    for (const c of clusters.values()) await c.stop();
    if (process.argv.includes('--keep')) console.log(`kept ${dir}`);
    else await rm(dir, { recursive: true, force: true });
  }
  const r = (side: string): number[] => rates.get(side) ?? [];
  const base = sides[0]!;
  const range = (v: number[]): string => `[${Math.min(...v).toFixed(3)}–${Math.max(...v).toFixed(3)}]`;
  for (const side of sides) {
    const ratios = r(side).map((v, i) => v / r(base)[i]!);
    console.log(
      `${side.padEnd(10)} writes/s ${median(r(side)).toFixed(0)}; / ${base}: median ${median(ratios).toFixed(3)} ${range(ratios)}`,
    );
  }
  console.log('per write (medians of rounds; followers: both summed)');
  for (const role of ['leader', 'follower']) {
    console.log(`${role}: ${sides.join(' / ')}`);
    const keys = [...new Set(sides.flatMap((side) => [...rows.get(`${side} ${role}`)!.keys()]))].sort();
    for (const k of keys)
      console.log(
        `  ${k.padEnd(28)} ${sides
          .map((side) =>
            median(rows.get(`${side} ${role}`)!.get(k) ?? [])
              .toFixed(2)
              .padStart(9),
          )
          .join(' ')}`,
      );
  }
}

await main();
