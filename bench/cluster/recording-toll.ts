// The flight recorder's toll on writes (issue 22: at most 5% of write throughput at 1 and 64 writers), measured
// so that it shows on a shared machine. Two 3-node clusters (`svc cluster`: child processes, mutual TLS, real
// fdatasync) are up at once, one recording (the default) and one with --no-recording; at each writer level the
// rounds interleave, and the order flips every round (on, off, then off, on, …) so a load swing or a warming
// disk hits both sides alike. Each round gives, per side:
//   - writes/s (closed loop, bench/cluster/load.ts);
//   - the leader's CPU per write: user + system CPU of the leader's process over the measured window
//     (/proc/<pid>/stat, bench/cluster/proc-cpu.ts) over the writes in it. Throughput on a shared machine
//     mostly measures the neighbours; the CPU a write costs the leader is what recording adds to, and it moves
//     far less run to run;
//   - the bytes the window added to the leader's recording and to its WAL (the sizes of their files before and
//     after), per write and per second.
// Reported: each figure's median over the rounds with its spread (min–max), and the median of the rounds'
// on/off ratios (round i's two sides ran back to back).
import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { closedLoop, payload, type LoadResult } from './load.js';
import { cpuDuring } from './proc-cpu.js';
import { startSvcCluster, type SvcCluster } from './svc-cluster.js';

const VALUE_CHARS = 96 - '{"d":""}'.length;
/** REST_SECONDS: how long each level measures the leaders' CPU with no writes. */
const REST_SECONDS = 2;

export interface RecordingTollOptions {
  dir: string;
  seconds: number;
  warmup: number;
  rounds: number;
  writerLevels: number[];
  /** nodeOptions go to every node process of both clusters (e.g. --cpu-prof). */
  nodeOptions?: (side: 'on' | 'off') => string[];
  /** onFlags go to the recording cluster's nodes (e.g. --no-recording-effect-texts). */
  onFlags?: string[];
  log?: (line: string) => void;
}

/** TollRound: one side's measured window. */
export interface TollRound {
  load: LoadResult;
  leaderCpuUsPerWrite: number;
  recordingBytesPerWrite: number;
  walBytesPerWrite: number;
  recordingBytesPerSecond: number;
  walBytesPerSecond: number;
}

export interface TollLevel {
  writers: number;
  /** restCpuMsPerSecond: each side's leader CPU with no writes, measured before the level's rounds. */
  restCpuMsPerSecond: { on: number; off: number };
  on: TollRound[];
  off: TollRound[];
}

export interface RecordingToll {
  levels: TollLevel[];
  /** on: the recording cluster, stopped (its members' names and the leader's, for a profile's reader). */
  on: SvcCluster;
}

export function median(values: number[]): number {
  const sorted = values.filter(Number.isFinite).sort((a, b) => a - b);
  if (sorted.length === 0) return NaN;
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** spread: the median and the range of the rounds' values, `m [lo–hi]`. */
export function spread(values: number[], digits = 0): string {
  const finite = values.filter(Number.isFinite);
  if (finite.length === 0) return '-';
  return `${median(finite).toFixed(digits)} [${Math.min(...finite).toFixed(digits)}–${Math.max(...finite).toFixed(digits)}]`;
}

/** filesBytes sums the sizes of the files under dir (0 when it does not exist). */
async function filesBytes(dir: string): Promise<number> {
  let total = 0;
  let entries;
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch {
    return 0;
  }
  for (const entry of entries) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) total += await filesBytes(path);
    else if (entry.isFile()) total += (await stat(path).catch(() => ({ size: 0 }))).size;
  }
  return total;
}

function leaderOf(cluster: SvcCluster): { pid: number; dataDir: string } {
  const member = cluster.cluster.members.find((m) => m.name === cluster.leaderName);
  if (!member || member.pid <= 0) throw new Error(`no running leader ${cluster.leaderName} in the cluster file`);
  return member;
}

/** measureSide runs one closed-loop window against `cluster`, with the leader's CPU and disk bytes over the window. */
async function measureSide(
  cluster: SvcCluster,
  tag: string,
  writers: number,
  warmup: number,
  seconds: number,
): Promise<TollRound> {
  const leader = leaderOf(cluster);
  const recordingDir = join(leader.dataDir, 'recording');
  const walDir = join(leader.dataDir, 'wal');
  let before: [number, number] = [0, 0];
  // The disk sizes are taken when the window opens (after the warm-up), beside the CPU sample.
  const opened = new Promise<void>((resolve) =>
    setTimeout(() => {
      void Promise.all([filesBytes(recordingDir), filesBytes(walDir)]).then((sizes) => {
        before = sizes;
        resolve();
      });
    }, warmup * 1000),
  );
  const [load, cpuMs] = await Promise.all([
    closedLoop(writers, warmup, seconds, (w, i) => cluster.put(`bench/${tag}/w${w}/${i}`, payload(VALUE_CHARS, i))),
    cpuDuring([leader.pid], warmup * 1000, (warmup + seconds) * 1000),
  ]);
  await opened;
  // Writes ending after the window still add a little to the files: a few ms of a seconds-long window.
  const [recordingAfter, walAfter] = await Promise.all([filesBytes(recordingDir), filesBytes(walDir)]);
  const writes = Math.max(1, load.ops);
  // A WAL compaction inside the window shrinks it: that window's WAL figure is left out (NaN).
  const walBytes = walAfter >= before[1] ? walAfter - before[1] : NaN;
  const recordingBytes = recordingAfter - before[0];
  return {
    load,
    leaderCpuUsPerWrite: (cpuMs * 1000) / writes,
    recordingBytesPerWrite: recordingBytes / writes,
    walBytesPerWrite: walBytes / writes,
    recordingBytesPerSecond: recordingBytes / seconds,
    walBytesPerSecond: walBytes / seconds,
  };
}

/** measureRecordingToll starts both clusters, runs the interleaved rounds, prints the tables, and stops them. */
export async function measureRecordingToll(options: RecordingTollOptions): Promise<RecordingToll> {
  const log = options.log ?? ((line: string) => console.log(line));
  const { seconds, warmup, rounds } = options;
  let on: SvcCluster | null = null;
  let off: SvcCluster | null = null;
  const levels: TollLevel[] = [];
  try {
    on = await startSvcCluster(join(options.dir, 'on'), options.nodeOptions?.('on') ?? [], [], false, [
      ...(options.onFlags ?? []),
    ]);
    off = await startSvcCluster(join(options.dir, 'off'), options.nodeOptions?.('off') ?? [], [], false, [
      '--no-recording',
    ]);
    log(
      `recording on vs off: two 3-node clusters up at once, ${rounds} rounds per level of ${seconds} s after ${warmup} s warm-up, the order flipping each round`,
    );
    for (const writers of options.writerLevels) {
      // The leader's CPU at rest (ticks, heartbeats, and on one side their recording): a 1-writer window's CPU
      // per write includes it, so it is printed beside it.
      const [restOn, restOff] = await Promise.all([
        cpuDuring([leaderOf(on).pid], 0, REST_SECONDS * 1000),
        cpuDuring([leaderOf(off).pid], 0, REST_SECONDS * 1000),
      ]);
      const level: TollLevel = {
        writers,
        restCpuMsPerSecond: { on: restOn / REST_SECONDS, off: restOff / REST_SECONDS },
        on: [],
        off: [],
      };
      for (let round = 1; round <= rounds; round++) {
        const order = round % 2 === 1 ? (['on', 'off'] as const) : (['off', 'on'] as const);
        for (const side of order) {
          const result = await measureSide(
            side === 'on' ? on : off,
            `${side}c${writers}r${round}`,
            writers,
            warmup,
            seconds,
          );
          level[side].push(result);
          log(
            `  c${writers} round ${round} ${side.padEnd(3)}: ${result.load.opsPerSecond.toFixed(0)} writes/s, leader ${result.leaderCpuUsPerWrite.toFixed(0)} µs CPU/write${result.load.errors ? `, ${result.load.errors} errors (${result.load.firstError})` : ''}`,
          );
        }
      }
      levels.push(level);
    }
  } finally {
    await on?.stop();
    await off?.stop();
  }
  printToll(levels, log);
  return { levels, on: on! };
}

const ratios = (level: TollLevel, pick: (r: TollRound) => number): number[] =>
  level.on.map((r, i) => pick(r) / pick(level.off[i]!));

/** printToll: the tables and the last line (`recording on/off …`). */
export function printToll(levels: TollLevel[], log: (line: string) => void): void {
  const ops = (r: TollRound): number => r.load.opsPerSecond;
  const cpu = (r: TollRound): number => r.leaderCpuUsPerWrite;
  log('');
  log('medians of the rounds [min–max]; each ratio is the median of the rounds’ on/off ratios [min–max]');
  log(
    '| writers | on writes/s | off writes/s | on / off writes/s | leader CPU µs/write on | off | on / off CPU per write | recorder’s share of the leader’s CPU per write | leader CPU at rest on / off (ms/s) |',
  );
  log('|---|---|---|---|---|---|---|---|---|');
  for (const l of levels) {
    const cpuRatios = ratios(l, cpu);
    log(
      `| ${l.writers} | ${spread(l.on.map(ops))} | ${spread(l.off.map(ops))} | ${spread(ratios(l, ops), 3)} | ${spread(l.on.map(cpu))} | ${spread(l.off.map(cpu))} | ${spread(cpuRatios, 3)} | ${(100 * (1 - 1 / median(cpuRatios))).toFixed(1)}% | ${l.restCpuMsPerSecond.on.toFixed(0)} / ${l.restCpuMsPerSecond.off.toFixed(0)} |`,
    );
  }
  log('');
  log("the leader's disk writes over the window (file sizes before and after), recording cluster; WAL of both");
  log(
    '| writers | recording bytes/write | recording KB/s | WAL bytes/write (on) | WAL KB/s (on) | WAL bytes/write (off) | recording / WAL bytes |',
  );
  log('|---|---|---|---|---|---|---|');
  for (const l of levels) {
    const recordingPerWrite = median(l.on.map((r) => r.recordingBytesPerWrite));
    const walPerWrite = median(l.on.map((r) => r.walBytesPerWrite));
    log(
      `| ${l.writers} | ${spread(l.on.map((r) => r.recordingBytesPerWrite))} | ${spread(l.on.map((r) => r.recordingBytesPerSecond / 1000))} | ${spread(l.on.map((r) => r.walBytesPerWrite))} | ${spread(l.on.map((r) => r.walBytesPerSecond / 1000))} | ${spread(l.off.map((r) => r.walBytesPerWrite))} | ${(recordingPerWrite / walPerWrite).toFixed(2)} |`,
    );
  }
  const line = (pick: (r: TollRound) => number): string =>
    levels.map((l) => `c${l.writers}=${median(ratios(l, pick)).toFixed(3)}`).join(' ');
  log(`recording on/off writes/s ${line(ops)}; leader CPU per write ${line(cpu)}`);
}
