// Cluster bench (not a test), one bounded run on loopback:
//   1. the disk's fdatasync rate, measured now in the same directory;
//   2. three-node write throughput and p50/p99 commit latency at 1, 16 and 64 concurrent writers,
//      96-byte values, our cluster beside etcd's in the same run:
//      - svc (`svc cluster`: child processes, mutual TLS, real fsync): every write is sent straight to the
//        leader's svc.store.v1, as a follower forwarding a client's write does (the bench holds a follower's
//        peer certificate: svc.store.v1 serves members only), so no row pays a forwarding hop: a
//        StoreClientPool that sends one loop turn's writes as one ProposeStream message, and, as a second
//        row, one unary Propose call per write;
//      - etcd from Debian (3 members, no TLS), also at the leader, one request per write: KV.Put over gRPC
//        (one @grpc/grpc-js channel, as etcd's own clients talk; etcd's strongest path) and, as a second
//        row, its v3 HTTP/JSON gateway (POST /v3/kv/put, keep-alive connections), skipped with a note when
//        `etcd` is not installed.
//      Both clusters stay up and the rounds interleave (svc, svc one-call, etcd gRPC, etcd HTTP, then again),
//      so a load swing on this shared machine hits all four alike; medians of the rounds are reported, and
//      each ratio is the median of the rounds' ratios;
//   3. snapshot transfer MB/s (a staged artifact fetched and installed with verification) beside a
//      raw grpc-js stream with the same flow-control settings (--no-snapshot skips it).
//
//   npx tsx bench/cluster.ts [--seconds 3] [--warmup 1] [--rounds 3] [--snapshot-mib 256] [--snapshot-rounds 3]
//                            [--no-snapshot] [--insecure] [--cpu-prof] [--writers 1,16,64] [--no-recording]
//   npx tsx bench/cluster.ts --recording [--seconds 3] [--warmup 1] [--rounds 7] [--writers 1,64]
//
// --recording runs, in place of the above, the flight recorder's toll (issue 22's bar: recording costs at most
// 5% of write throughput at 1 and 64 writers): svc with recording on beside svc with --no-recording, rounds
// interleaved, writes/s and the leader's CPU per write (/proc) as medians with their range, and the bytes the
// recording and the WAL add per write (bench/cluster/recording-toll.ts; bench/recording.ts is the same with
// --cpu-prof's recorder share).
// --no-recording runs our nodes without the flight recorder (its checkpoints pause a member's loop: see
// docs/operations.md, "The c64 tail").
// --insecure runs our cluster plaintext too (etcd runs plaintext either way): the same transport on both sides.
// --cpu-prof runs our nodes under `node --cpu-prof` and prints where each node's time went.
import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, open, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { etcdVersion, startEtcd } from './cluster/etcd.js';
import { etcdKvClient } from './cluster/etcd-grpc.js';
import { closedLoop, payload, SVC_VALUE_CHARS, VALUE_BYTES, type LoadResult } from './cluster/load.js';
import { summarizeProfiles } from './cluster/profile.js';
import { measureRecordingToll } from './cluster/recording-toll.js';
import { measureSnapshotTransfer } from './cluster/snapshot.js';
import { startSvcCluster } from './cluster/svc-cluster.js';
import { roundNote, scrapeMembers } from './cluster/member-metrics.js';
import { processCpuMs } from './cluster/proc-cpu.js';

const DEFAULT_WRITER_COUNTS = [1, 16, 64];
const FSYNC_RECORD_BYTES = 128;
const FSYNC_SECONDS = 1.5;
const PROFILE_TOP_COUNT = 12;
const WRITE_DEADLINE_MS = 10_000;
/** RECORDING_ROUNDS_DEFAULT: --recording's rounds per level (a 5% toll needs more than three on a shared machine). */
const RECORDING_ROUNDS_DEFAULT = 7;

function numberArg(name: string, fallback: number): number {
  const at = process.argv.indexOf(`--${name}`);
  if (at < 0) return fallback;
  const value = Number(process.argv[at + 1]);
  if (!Number.isFinite(value) || value <= 0) throw new Error(`--${name} must be a positive number`);
  return value;
}

async function fdatasyncRate(dir: string): Promise<number> {
  const handle = await open(join(dir, 'fsync-probe'), 'w');
  const record = randomBytes(FSYNC_RECORD_BYTES);
  let count = 0;
  const started = performance.now();
  try {
    // Bounded by the clock.
    while (performance.now() - started < FSYNC_SECONDS * 1000) {
      await handle.write(record, 0, record.length, null);
      await handle.datasync();
      count++;
    }
  } finally {
    await handle.close();
  }
  return count / ((performance.now() - started) / 1000);
}

/** writerCounts reads --writers 1,16 (the levels to run), DEFAULT_WRITER_COUNTS without it. */
function writerCounts(): number[] {
  const at = process.argv.indexOf('--writers');
  if (at < 0) return DEFAULT_WRITER_COUNTS;
  const counts = (process.argv[at + 1] ?? '').split(',').map(Number);
  if (counts.length === 0 || counts.some((n) => !Number.isInteger(n) || n <= 0))
    throw new Error('--writers must be a comma-separated list of positive integers');
  return counts;
}

const fmt = (n: number, digits = 0): string => (Number.isFinite(n) ? n.toFixed(digits) : '-');

/** LevelRounds holds one writer level's rounds; the i-th round of each system ran back to back. */
interface LevelRounds {
  writers: number;
  svc: LoadResult[];
  svcAlone: LoadResult[];
  etcdGrpc: LoadResult[];
  etcdHttp: LoadResult[];
}

function median(values: number[]): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/**
 * measure runs one round and prints it; with svc's members, also what happened on them in the round (warm-up
 * included): snapshots staged, GC pauses over 10 ms, the longest event-loop delay (from /metrics before and after).
 */
async function measure(
  label: string,
  run: () => Promise<LoadResult>,
  members: SvcMembers | undefined,
  watched: WatchedProcesses,
): Promise<LoadResult> {
  const before = members ? await scrapeMembers(members) : [];
  const cpuBefore = watched.map((w) => processCpuMs(w.pids));
  const result = await run();
  const cpu = watched.map((w, i) => `${w.name} CPU ${fmt(processCpuMs(w.pids) - cpuBefore[i]!)} ms`).join(', ');
  const note = (members ? `; ${roundNote(before, await scrapeMembers(members))}` : '') + (cpu ? `; ${cpu}` : '');
  console.log(
    `  ${label}: ${fmt(result.opsPerSecond)} writes/s, p50 ${fmt(result.p50Ms, 2)} ms, p99 ${fmt(result.p99Ms, 2)} ms, client GC ${fmt(result.clientGcMs)} ms (${result.clientGcPausesOver10Ms} pauses > 10 ms)${result.errors ? `, ${result.errors} errors (${result.firstError})` : ''}${note}`,
  );
  return result;
}

/**
 * WatchedProcesses: whose CPU a round's line also gives (from /proc): the other system's members, which share the
 * two cores with the round (their background work is the neighbour's noise), and, in an etcd round, etcd's own.
 */
type WatchedProcesses = ReadonlyArray<{ name: string; pids: number[] }>;

type SvcMembers = Parameters<typeof scrapeMembers>[0];

/** ClusterBenchOptions: the command line, read once. */
interface ClusterBenchOptions {
  seconds: number;
  warmup: number;
  snapshotMib: number;
  snapshotRounds: number;
  cpuProf: boolean;
  insecure: boolean;
  withSnapshot: boolean;
  rounds: number;
  writerLevels: number[];
  /** recording: measure the flight recorder's toll (on vs off) instead of the etcd comparison. */
  recording: boolean;
  /** noRecording: our nodes run without the flight recorder (`svc cluster --no-recording`), to see its share. */
  noRecording: boolean;
}

function clusterBenchOptions(): ClusterBenchOptions {
  return {
    seconds: numberArg('seconds', 3),
    warmup: numberArg('warmup', 1),
    snapshotMib: numberArg('snapshot-mib', 256),
    snapshotRounds: numberArg('snapshot-rounds', 3),
    cpuProf: process.argv.includes('--cpu-prof'),
    insecure: process.argv.includes('--insecure'),
    withSnapshot: !process.argv.includes('--no-snapshot'),
    rounds: numberArg('rounds', process.argv.includes('--recording') ? RECORDING_ROUNDS_DEFAULT : 3),
    writerLevels:
      process.argv.includes('--recording') && !process.argv.includes('--writers') ? [1, 64] : writerCounts(),
    recording: process.argv.includes('--recording'),
    noRecording: process.argv.includes('--no-recording'),
  };
}

type SnapshotResult = Awaited<ReturnType<typeof measureSnapshotTransfer>>;

async function main(): Promise<void> {
  const options = clusterBenchOptions();
  const dir = await mkdtemp(join(tmpdir(), 'svc-bench-cluster-'));
  if (options.recording) {
    try {
      await measureRecordingToll({
        dir,
        seconds: options.seconds,
        warmup: options.warmup,
        rounds: options.rounds,
        writerLevels: options.writerLevels,
      });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
    return;
  }
  const profileDir = join(dir, 'profiles');
  try {
    const fsyncPerSecond = await fdatasyncRate(dir);
    console.log(`disk: ${fmt(fsyncPerSecond)} fdatasync/s (${FSYNC_RECORD_BYTES}-byte appends, ${tmpdir()})`);
    if (options.cpuProf) await mkdir(profileDir);
    const clusters = await startClusters(dir, profileDir, options);
    let levels: LevelRounds[];
    try {
      levels = await runLevels(clusters, options);
    } finally {
      clusters.etcdKv?.close();
      await clusters.svc.stop();
      await clusters.etcd?.stop();
    }
    let snapshot: SnapshotResult | null = null;
    if (options.withSnapshot) {
      console.log(
        `snapshot: staging and fetching a ${options.snapshotMib} MiB artifact, ${options.snapshotRounds} interleaved rounds (raw, drained, install), medians`,
      );
      snapshot = await measureSnapshotTransfer(join(dir, 'snapshot'), options.snapshotMib, options.snapshotRounds);
    }
    console.log('');
    printWriteTables(levels, fsyncPerSecond, options.insecure, clusters.etcdNote);
    if (snapshot) printSnapshotTable(snapshot);
    console.log(summaryLine(levels));
    if (options.cpuProf) await printProfiles(profileDir, clusters.leaderPid);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** Clusters: both systems up side by side; etcd is null when not installed, with etcdNote saying so. */
interface Clusters {
  svc: Awaited<ReturnType<typeof startSvcCluster>>;
  leaderPid: number;
  etcd: Awaited<ReturnType<typeof startEtcd>> | null;
  etcdKv: ReturnType<typeof etcdKvClient> | null;
  etcdLeader: number;
  etcdNote: string;
}

/** startClusters: our three nodes (under the profiler with --cpu-prof) and, when installed, etcd's three. */
async function startClusters(dir: string, profileDir: string, options: ClusterBenchOptions): Promise<Clusters> {
  const svc = await startSvcCluster(
    join(dir, 'svc'),
    options.cpuProf ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : [],
    [],
    options.insecure,
    options.noRecording ? ['--no-recording'] : [],
  );
  const leaderPid = svc.cluster.members.find((m) => m.name === svc.leaderName)?.pid ?? 0;
  const version = etcdVersion();
  const etcd = version === null ? null : await startEtcd(join(dir, 'etcd'), 3, Math.max(...options.writerLevels));
  const etcdKv = etcd ? etcdKvClient(etcd.clientUrls) : null;
  const etcdLeader = etcd ? etcd.clientUrls.indexOf(etcd.leaderClientUrl) : 0;
  const etcdNote =
    version === null
      ? 'etcd is not installed (Debian: apt-get install -y etcd-server): etcd columns skipped'
      : `${version}, 3 members, no TLS, every write at the leader: gRPC KV.Put (one channel) and the HTTP/JSON gateway POST /v3/kv/put (keep-alive), one request per write`;
  return { svc, leaderPid, etcd, etcdKv, etcdLeader, etcdNote };
}

/** runLevels runs every writer level's interleaved rounds: svc batched, svc one call, etcd gRPC, etcd HTTP. */
async function runLevels(clusters: Clusters, options: ClusterBenchOptions): Promise<LevelRounds[]> {
  const { svc, etcd, etcdKv, etcdLeader, etcdNote } = clusters;
  const { rounds, seconds, warmup } = options;
  console.log(
    `svc: 3 nodes (${options.insecure ? 'plaintext, --insecure' : 'mutual TLS'}, fdatasync group commit), leader ${svc.leaderName}, every write sent to the leader as a forwarding follower does; etcd: ${etcdNote}`,
  );
  console.log(
    `${rounds} interleaved rounds per level (svc batched, svc one call per write, etcd gRPC, etcd HTTP), ${seconds} s each after ${warmup} s warm-up; medians reported`,
  );
  const levels: LevelRounds[] = [];
  for (const writers of options.writerLevels) {
    const rows: LevelRounds = { writers, svc: [], svcAlone: [], etcdGrpc: [], etcdHttp: [] };
    const loop = (write: Parameters<typeof closedLoop>[3]) => () => closedLoop(writers, warmup, seconds, write);
    const svcPids = svc.cluster.members.flatMap((m) => (m.pid === undefined ? [] : [m.pid]));
    const etcdPids = etcd?.pids ?? [];
    const inSvcRound: WatchedProcesses = etcd ? [{ name: 'etcd members', pids: etcdPids }] : [];
    const inEtcdRound: WatchedProcesses = [
      { name: 'etcd members', pids: etcdPids },
      { name: 'svc members', pids: svcPids },
    ];
    for (let round = 1; round <= rounds; round++) {
      const tag = `c${writers}r${round}`;
      rows.svc.push(
        await measure(
          `svc c${writers} round ${round}`,
          loop((w, i) => svc.put(`bench/${tag}/w${w}/${i}`, payload(SVC_VALUE_CHARS, i))),
          svc.cluster.members,
          inSvcRound,
        ),
      );
      rows.svcAlone.push(
        await measure(
          `svc one-call c${writers} round ${round}`,
          loop((w, i) => svc.putAlone(`bench/${tag}a/w${w}/${i}`, payload(SVC_VALUE_CHARS, i))),
          svc.cluster.members,
          inSvcRound,
        ),
      );
      if (etcd && etcdKv) {
        rows.etcdGrpc.push(
          await measure(
            `etcd gRPC c${writers} round ${round}`,
            loop((w, i) =>
              etcdKv.put(
                etcdLeader,
                `bench/${tag}g/w${w}/${i}`,
                payload(VALUE_BYTES, i),
                Date.now() + WRITE_DEADLINE_MS,
              ),
            ),
            undefined,
            inEtcdRound,
          ),
        );
        rows.etcdHttp.push(
          await measure(
            `etcd HTTP c${writers} round ${round}`,
            loop((w, i) => etcd.put(`bench/${tag}/w${w}/${i}`, payload(VALUE_BYTES, i))),
            undefined,
            inEtcdRound,
          ),
        );
      }
    }
    levels.push(rows);
  }
  return levels;
}

const med = (rs: LoadResult[], pick: (r: LoadResult) => number): number => median(rs.map(pick));
const ops = (rs: LoadResult[]): string => (rs.length === 0 ? 'skipped' : fmt(med(rs, (r) => r.opsPerSecond)));
const latency = (rs: LoadResult[]): string =>
  rs.length === 0
    ? '-'
    : `${fmt(
        med(rs, (r) => r.p50Ms),
        2,
      )} / ${fmt(
        med(rs, (r) => r.p99Ms),
        2,
      )}`;
/** ratio is the median over rounds of round i's svc rate over round i's etcd rate (they ran back to back). */
const ratio = (ours: LoadResult[], theirs: LoadResult[]): string =>
  theirs.length === 0 ? '-' : fmt(median(ours.map((r, i) => r.opsPerSecond / theirs[i]!.opsPerSecond)), 2);

/** printWriteTables: throughput and latency per level, then the same-run ratios. */
function printWriteTables(levels: LevelRounds[], fsyncPerSecond: number, insecure: boolean, etcdNote: string): void {
  console.log(
    `writes/s (median of rounds) and p50 / p99 ms; svc ${insecure ? 'plaintext (--insecure)' : 'over mutual TLS'}, etcd plaintext; every write at the leader`,
  );
  console.log(
    '| writers | svc | svc p50 / p99 | svc one-call | one-call p50 / p99 | etcd gRPC | etcd gRPC p50 / p99 | etcd HTTP | etcd HTTP p50 / p99 | svc writes per fdatasync |',
  );
  console.log('|---|---|---|---|---|---|---|---|---|---|');
  for (const l of levels)
    console.log(
      `| ${l.writers} | ${ops(l.svc)} | ${latency(l.svc)} | ${ops(l.svcAlone)} | ${latency(l.svcAlone)} | ${ops(l.etcdGrpc)} | ${latency(l.etcdGrpc)} | ${ops(l.etcdHttp)} | ${latency(l.etcdHttp)} | ${fmt(med(l.svc, (r) => r.opsPerSecond) / fsyncPerSecond, 2)} |`,
    );
  console.log('');
  console.log("throughput ratios, each the median of the rounds' ratios (only these same-run ratios mean anything)");
  console.log('| writers | svc / etcd gRPC | one-call / etcd gRPC | svc / etcd HTTP | one-call / etcd HTTP |');
  console.log('|---|---|---|---|---|');
  for (const l of levels)
    console.log(
      `| ${l.writers} | ${ratio(l.svc, l.etcdGrpc)} | ${ratio(l.svcAlone, l.etcdGrpc)} | ${ratio(l.svc, l.etcdHttp)} | ${ratio(l.svcAlone, l.etcdHttp)} |`,
    );
  console.log(`disk fdatasync rate this run: ${fmt(fsyncPerSecond)}/s; etcd: ${etcdNote}`);
}

/**
 * summaryLine is the run's last line, the figures issue 17's targets are stated in: one request per write against
 * etcd over gRPC (the peer's strongest configuration), as same-run ratios, and the 1-writer p50 of both.
 */
function summaryLine(levels: LevelRounds[]): string {
  const ratios = levels.map((l) => `c${l.writers}=${ratio(l.svcAlone, l.etcdGrpc)}`).join(' ');
  const one = levels.find((l) => l.writers === 1);
  const p50 = (rs: LoadResult[]): string =>
    rs.length === 0
      ? '-'
      : fmt(
          med(rs, (r) => r.p50Ms),
          2,
        );
  const latencies = one ? `; p50 ms c1 svc=${p50(one.svcAlone)} etcd=${p50(one.etcdGrpc)}` : '';
  return `svc/etcd-grpc writes/s ${ratios} (one request per write)${latencies}`;
}

function printSnapshotTable(snapshot: SnapshotResult): void {
  console.log('');
  console.log(
    `snapshot transfer, ${fmt(snapshot.bytes / 1e6)} MB artifact (staging it: ${fmt(snapshot.stageMbPerSecond)} MB/s), loopback, server in a child process`,
  );
  console.log('| path | MB/s (median) | ratio to raw (median per round) | client CPU ms/MB | server CPU ms/MB |');
  console.log('|---|---|---|---|---|');
  for (const row of snapshot.rows)
    console.log(
      `| ${row.path} | ${fmt(row.mbPerSecond)} | ${fmt(row.ratioToRaw, 2)} | ${fmt(row.clientCpuMsPerMb, 1)} | ${fmt(row.serverCpuMsPerMb, 1)} |`,
    );
}

/** printProfiles: where each of our node processes spent its time (--cpu-prof). */
async function printProfiles(profileDir: string, leaderPid: number): Promise<void> {
  console.log('');
  for (const summary of await summarizeProfiles(profileDir, PROFILE_TOP_COUNT)) {
    const role = summary.pid === leaderPid ? 'LEADER' : 'follower or supervisor';
    console.log(`cpu profile ${summary.file} (${role}, pid ${summary.pid}): ${fmt(summary.totalMs)} ms sampled`);
    console.log(`  by area: ${summary.byArea.map((a) => `${a.area} ${fmt(a.share * 100, 1)}%`).join(', ')}`);
    for (const f of summary.byFunction) console.log(`    ${fmt(f.share * 100, 1).padStart(5)}%  ${f.name}`);
  }
}

await main();
