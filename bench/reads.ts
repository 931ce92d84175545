// Read bench (not a test), one bounded run on loopback: linearizable read throughput and p50/p99 latency at
// 1, 16 and 64 concurrent readers on a three-node cluster, ours beside etcd's in the same run:
//   - svc: `svc cluster` (child processes, mutual TLS), each read one svc.store.v1 GetStream message on the
//     reader's open call to a member (the member's own store read: a read index, at the leader when the
//     member follows, then its apply); and, as a second row, one unary Get call per read;
//   - etcd (Debian's etcd-server 3.4, 3 members, no TLS): each read one KV.Range call over gRPC at a member,
//     linearizable (serializable false, etcd's default: its ReadIndex, then the member's apply).
// Reader r reads at member r mod 3 (--at leader: every reader at the leader; --at follower: at the followers
// only, reader r at follower r mod 2, so every read takes the leader's read index over ReadIndexStream), a key drawn from --keys
// preloaded keys with 96-byte values. By default (every member) a lone reader would land at n1, the leader in one
// run and a follower in the next, two different costs (a read at the leader waits for a heartbeat round, one at a
// follower does not: docs/protocol.md, "The asker's ack"), so the 1-reader level runs twice, once at the leader and
// once at a follower, and every row says where its readers read (the `at` column). Both clusters stay up and the rounds interleave (svc, svc unary, etcd,
// then again),
// so a load swing on this shared machine hits both alike; medians of the rounds are reported, with the
// svc / etcd throughput ratio (median of the rounds' ratios), and the members' CPU per read (from /proc: on a
// shared machine throughput also measures the neighbours). etcd is skipped with a note when not installed.
//
//   npx tsx bench/reads.ts [--seconds 3] [--warmup 2] [--rounds 3] [--keys 1000] [--at all|leader|follower]
//                          [--readers 1,16,64] [--no-etcd] [--insecure] [--cpu-prof] [--cpu-prof-dir DIR] [--engine-limit name=value …]
// --insecure runs our cluster plaintext too (etcd runs plaintext either way): the same transport on both sides.
// --engine-limit passes engine limits to our nodes (e.g. readLeaseEnabled=1 to see what the lease path would
// save: not the linearizable default, so not a figure to compare with etcd's).
// --cpu-prof runs our nodes under `node --cpu-prof` and prints where each node's time went; --cpu-prof-dir DIR
// does the same and keeps the .cpuprofile files in DIR (for Chrome DevTools or a closer look).
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { etcdVersion, startEtcd } from './cluster/etcd.js';
import { etcdKvClient } from './cluster/etcd-grpc.js';
import { closedLoop, payload, type LoadResult } from './cluster/load.js';
import { startSvcCluster } from './cluster/svc-cluster.js';
import { cpuDuring } from './cluster/proc-cpu.js';
import { summarizeProfiles } from './cluster/profile.js';

const READER_COUNTS_DEFAULT = [1, 16, 64];
const PROFILE_TOP_COUNT = 40;
const VALUE_BYTES = 96;
/** SVC_VALUE_CHARS makes our stored value {"d":"…"} exactly VALUE_BYTES of JSON. */
const SVC_VALUE_CHARS = VALUE_BYTES - '{"d":""}'.length;
/** PRELOAD_CONCURRENCY bounds the writes in flight while the keys are loaded. */
const PRELOAD_CONCURRENCY = 64;
const READ_DEADLINE_MS = 10_000;

function numberArg(name: string, fallback: number): number {
  const at = process.argv.indexOf(`--${name}`);
  if (at < 0) return fallback;
  const value = Number(process.argv[at + 1]);
  if (!Number.isFinite(value) || value <= 0) throw new Error(`--${name} must be a positive number`);
  return value;
}

function stringArg(name: string): string | null {
  const at = process.argv.indexOf(`--${name}`);
  if (at < 0) return null;
  const value = process.argv[at + 1];
  if (value === undefined || value === '') throw new Error(`--${name} needs a value`);
  return value;
}

type ReadsAt = 'all' | 'leader' | 'follower';

function atArg(): ReadsAt {
  const at = process.argv.indexOf('--at');
  if (at < 0) return 'all';
  const value = process.argv[at + 1];
  if (value !== 'all' && value !== 'leader' && value !== 'follower')
    throw new Error('--at must be all, leader or follower');
  return value;
}

/** memberOf: the member reader r reads at, of `count` members of which `leader` leads. */
function memberOf(at: ReadsAt, reader: number, leader: number, count: number): number {
  if (at === 'leader') return leader;
  if (at === 'all') return reader;
  const followers = Array.from({ length: count }, (_, i) => i).filter((i) => i !== leader);
  return followers[reader % followers.length]!;
}

const AT_LABEL: Readonly<Record<ReadsAt, string>> = {
  all: 'every member',
  leader: 'the leader',
  follower: 'the followers',
};

function readersArg(): number[] {
  const at = process.argv.indexOf('--readers');
  if (at < 0) return READER_COUNTS_DEFAULT;
  const counts = (process.argv[at + 1] ?? '').split(',').map(Number);
  if (counts.some((n) => !Number.isSafeInteger(n) || n < 1))
    throw new Error('--readers needs positive integers, e.g. 1,16,64');
  return counts;
}

/** metricSum sums one metric's samples (every label set matching `labels`) over the members' /metrics. */
async function metricSum(httpAddrs: readonly string[], name: string, labels = ''): Promise<number> {
  let sum = 0;
  for (const addr of httpAddrs) {
    const text = await (await fetch(`${addr}/metrics`)).text();
    for (const line of text.split('\n')) {
      if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
      if (labels !== '' && !line.includes(labels)) continue;
      sum += Number(line.slice(line.lastIndexOf(' ') + 1)) || 0;
    }
  }
  return sum;
}

/** SvcCounters: what our members did for a round's reads (from their /metrics), to say what a read costs. */
interface SvcCounters {
  heartbeats: number;
  peerCalls: number;
  engineReadIndexes: number;
  storeReadIndexCalls: number;
  hardStateSaves: number;
  walSyncs: number;
}

async function svcCounters(httpAddrs: readonly string[]): Promise<SvcCounters> {
  return {
    heartbeats: await metricSum(httpAddrs, 'svc_peer_requests_sent_total', 'method="Heartbeat"'),
    peerCalls: await metricSum(httpAddrs, 'svc_peer_requests_sent_total'),
    engineReadIndexes: await metricSum(httpAddrs, 'svc_engine_read_indexes_total', 'outcome="answered"'),
    storeReadIndexCalls: await metricSum(httpAddrs, 'svc_store_read_index_calls_total'),
    hardStateSaves: await metricSum(httpAddrs, 'svc_hard_state_save_seconds_count'),
    walSyncs: await metricSum(httpAddrs, 'svc_wal_sync_seconds_count'),
  };
}

/** Measured is a round's load result with the members' CPU over its measured window. */
interface Measured extends LoadResult {
  cpuMsPerSecond: number;
  cpuUsPerRead: number;
  /** clientCpuUsPerRead: this process's CPU (the readers' client library) per read, over the whole round. */
  clientCpuUsPerRead: number;
}

const fmt = (n: number, digits = 0): string => (Number.isFinite(n) ? n.toFixed(digits) : '-');

function median(values: number[]): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

async function preload(keyCount: number, write: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    // Bounded by keyCount.
    for (let i = next++; i < keyCount; i = next++) await write(i);
  };
  await Promise.all(Array.from({ length: PRELOAD_CONCURRENCY }, worker));
}

async function measure(
  label: string,
  pids: readonly number[],
  warmup: number,
  seconds: number,
  run: () => Promise<LoadResult>,
  httpAddrs: readonly string[] = [],
): Promise<Measured> {
  const countersBefore = httpAddrs.length > 0 ? await svcCounters(httpAddrs) : null;
  const clientBefore = process.cpuUsage();
  const [result, cpuMs] = await Promise.all([run(), cpuDuring(pids, warmup * 1000, (warmup + seconds) * 1000)]);
  const client = process.cpuUsage(clientBefore);
  const measured = {
    ...result,
    cpuMsPerSecond: cpuMs / seconds,
    cpuUsPerRead: (cpuMs * 1000) / Math.max(1, result.ops),
    // The client's CPU covers warm-up and window; ops counts the window only: scale by the window's share.
    clientCpuUsPerRead: ((client.user + client.system) * (seconds / (warmup + seconds))) / Math.max(1, result.ops),
  };
  let perRead = '';
  if (countersBefore) {
    // Over warm-up and window alike: per read of both (reads in the window scaled up by the round's length).
    const after = await svcCounters(httpAddrs);
    const reads = result.ops * ((warmup + seconds) / seconds);
    perRead = `; per read: ${fmt((after.heartbeats - countersBefore.heartbeats) / reads, 2)} heartbeat calls (${fmt((after.peerCalls - countersBefore.peerCalls) / reads, 2)} peer calls in all), ${fmt((after.engineReadIndexes - countersBefore.engineReadIndexes) / reads, 2)} engine read indexes, ${fmt((after.storeReadIndexCalls - countersBefore.storeReadIndexCalls) / reads, 2)} store read-index calls, ${fmt((after.hardStateSaves - countersBefore.hardStateSaves) / reads, 2)} hard-state saves, ${fmt((after.walSyncs - countersBefore.walSyncs) / reads, 2)} WAL syncs`;
  }
  console.log(
    `  ${label}: ${fmt(result.opsPerSecond)} reads/s, p50 ${fmt(result.p50Ms, 2)} ms, p99 ${fmt(result.p99Ms, 2)} ms, members' CPU ${fmt(measured.cpuMsPerSecond)} ms/s = ${fmt(measured.cpuUsPerRead)} µs/read, client ${fmt(measured.clientCpuUsPerRead)} µs/read${perRead}${result.errors ? `, ${result.errors} errors (${result.firstError})` : ''}`,
  );
  return measured;
}

/** ReadsOptions: the command line, read once. */
interface ReadsOptions {
  seconds: number;
  warmup: number;
  rounds: number;
  keyCount: number;
  at: ReadsAt;
  readerCounts: number[];
  keptProfileDir: string | null;
  cpuProf: boolean;
  engineLimits: string[];
  insecure: boolean;
  noEtcd: boolean;
}

function readsOptions(): ReadsOptions {
  const keptProfileDir = stringArg('cpu-prof-dir');
  return {
    seconds: numberArg('seconds', 3),
    // Two seconds: under load a node's first second of reads still runs code V8 has not optimised yet.
    warmup: numberArg('warmup', 2),
    rounds: numberArg('rounds', 3),
    keyCount: numberArg('keys', 1000),
    at: atArg(),
    readerCounts: readersArg(),
    keptProfileDir,
    cpuProf: process.argv.includes('--cpu-prof') || keptProfileDir !== null,
    engineLimits: process.argv.flatMap((arg, i) => (arg === '--engine-limit' ? [process.argv[i + 1] ?? ''] : [])),
    insecure: process.argv.includes('--insecure'),
    noEtcd: process.argv.includes('--no-etcd'),
  };
}

type SvcCluster = Awaited<ReturnType<typeof startSvcCluster>>;
type EtcdCluster = Awaited<ReturnType<typeof startEtcd>>;

/** Clusters: both systems up side by side; etcd is null when skipped, with etcdNote saying why. */
interface Clusters {
  svc: SvcCluster;
  etcd: EtcdCluster | null;
  etcdKv: ReturnType<typeof etcdKvClient> | null;
  etcdNote: string;
}

/** Level: one reader count's rounds, per system. */
interface Level {
  readers: number;
  /** where: the members the readers read at, by name and role (e.g. `n1 (leader)`). */
  where: string;
  svc: Measured[];
  svcUnary: Measured[];
  etcd: Measured[];
}

const benchKey = (i: number): string => `bench/reads/${i}`;

async function main(): Promise<void> {
  const options = readsOptions();
  const dir = await mkdtemp(join(tmpdir(), 'svc-bench-reads-'));
  const profileDir = options.keptProfileDir !== null ? resolve(options.keptProfileDir) : join(dir, 'profiles');
  let levels: Level[];
  let etcdNote: string;
  try {
    if (options.cpuProf) await mkdir(profileDir, { recursive: true });
    const clusters = await startClusters(dir, profileDir, options);
    etcdNote = clusters.etcdNote;
    try {
      levels = await runLevels(clusters, options);
    } finally {
      clusters.etcdKv?.close();
      await clusters.svc.stop();
      await clusters.etcd?.stop();
    }
    if (options.cpuProf) await printProfiles(profileDir, clusters.svc);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
  printTable(levels, options, etcdNote);
}

/** startClusters: our three nodes (under the profiler with --cpu-prof) and, unless skipped, etcd's three. */
async function startClusters(dir: string, profileDir: string, options: ReadsOptions): Promise<Clusters> {
  const { engineLimits, insecure, cpuProf } = options;
  if (engineLimits.length > 0) console.log(`svc engine limits: ${engineLimits.join(', ')}`);
  const svc = await startSvcCluster(
    join(dir, 'svc'),
    cpuProf ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : [],
    engineLimits,
    insecure,
  );
  const version = options.noEtcd ? null : etcdVersion();
  const etcd = version === null ? null : await startEtcd(join(dir, 'etcd'), 3, Math.max(...options.readerCounts));
  const etcdKv = etcd ? etcdKvClient(etcd.clientUrls) : null;
  const etcdNote =
    version === null
      ? options.noEtcd
        ? 'skipped (--no-etcd)'
        : 'etcd is not installed (Debian: apt-get install -y etcd-server): etcd column skipped'
      : `${version}, 3 members, gRPC KV.Range (linearizable), no TLS`;
  return { svc, etcd, etcdKv, etcdNote };
}

/** readFunctions: one read function per system; a read that finds nothing would measure a miss, so each checks. */
function readFunctions(clusters: Clusters, keyCount: number, at: ReadsAt) {
  const { svc, etcd, etcdKv } = clusters;
  // Reader r's i-th read: a key spread over the whole set, different per reader.
  const keyOf = (reader: number, i: number): string => benchKey((reader * 7919 + i * 104_729) % keyCount);
  const svcLeader = svc.cluster.members.findIndex((m) => m.name === svc.leaderName);
  const etcdLeader = etcd ? etcd.clientUrls.indexOf(etcd.leaderClientUrl) : 0;
  const svcMember = (reader: number): number => memberOf(at, reader, svcLeader, svc.cluster.members.length);
  const etcdMember = (reader: number): number =>
    memberOf(at, reader, etcdLeader, etcd ? etcd.clientUrls.length : svc.cluster.members.length);
  return {
    svcMember,
    svcRead: async (reader: number, i: number): Promise<void> => {
      if ((await svc.get(svcMember(reader), keyOf(reader, i))) === null)
        throw new Error(`svc: ${keyOf(reader, i)} not found`);
    },
    svcReadUnary: async (reader: number, i: number): Promise<void> => {
      if ((await svc.getAlone(svcMember(reader), keyOf(reader, i))) === null)
        throw new Error(`svc: ${keyOf(reader, i)} not found`);
    },
    etcdRead: async (reader: number, i: number): Promise<void> => {
      if ((await etcdKv!.range(etcdMember(reader), keyOf(reader, i), Date.now() + READ_DEADLINE_MS)) === null)
        throw new Error(`etcd: ${keyOf(reader, i)} not found`);
    },
  };
}

/** runLevels preloads the keys, measures both at rest, then runs every level's interleaved rounds. */
async function runLevels(clusters: Clusters, options: ReadsOptions): Promise<Level[]> {
  const { svc, etcd, etcdKv, etcdNote } = clusters;
  const { at, keyCount, rounds, seconds, warmup, insecure } = options;
  const svcPids = svc.cluster.members.map((m) => m.pid);
  // /metrics is on each member's metrics listener (plaintext, loopback).
  const svcHttp = svc.cluster.members.map((m) => m.metricsAddr ?? m.httpAddr);
  console.log(
    `svc: 3 nodes (${insecure ? 'plaintext, --insecure' : 'mutual TLS'}), leader ${svc.leaderName}; etcd: ${etcdNote}`,
  );
  console.log(`preloading ${keyCount} keys (${VALUE_BYTES}-byte values) into each`);
  await preload(keyCount, (i) => svc.put(benchKey(i), payload(SVC_VALUE_CHARS, i)));
  if (etcd) await preload(keyCount, (i) => etcd.put(benchKey(i), payload(VALUE_BYTES, i)));
  const idleSeconds = 2;
  const svcIdle = (await cpuDuring(svcPids, 0, idleSeconds * 1000)) / idleSeconds;
  const etcdIdle = etcd ? (await cpuDuring(etcd.pids, 0, idleSeconds * 1000)) / idleSeconds : NaN;
  console.log(
    `members' CPU at rest: svc ${fmt(svcIdle)} ms/s, etcd ${fmt(etcdIdle)} ms/s (the CPU per read below is all of it, rest included)`,
  );
  console.log(
    `reads at ${at === 'all' ? 'reader mod 3 (every member)' : AT_LABEL[at]}; ${rounds} interleaved rounds per level (svc, svc unary, etcd), ${seconds} s each after ${warmup} s warm-up; medians reported`,
  );
  const levels: Level[] = [];
  for (const [readers, levelAt] of levelPlan(at, options.readerCounts)) {
    const { svcMember, svcRead, svcReadUnary, etcdRead } = readFunctions(clusters, keyCount, levelAt);
    const level: Level = { readers, where: whereReaders(svc, readers, svcMember), svc: [], svcUnary: [], etcd: [] };
    console.log(`c${readers}: readers at ${level.where}`);
    const loop = (read: (reader: number, i: number) => Promise<void>) => () =>
      closedLoop(readers, warmup, seconds, read);
    for (let round = 1; round <= rounds; round++) {
      level.svc.push(await measure(`svc c${readers} round ${round}`, svcPids, warmup, seconds, loop(svcRead), svcHttp));
      level.svcUnary.push(
        await measure(`svc unary c${readers} round ${round}`, svcPids, warmup, seconds, loop(svcReadUnary), svcHttp),
      );
      if (etcd && etcdKv)
        level.etcd.push(await measure(`etcd c${readers} round ${round}`, etcd.pids, warmup, seconds, loop(etcdRead)));
    }
    levels.push(level);
  }
  return levels;
}

/**
 * levelPlan: each level's reader count and where its readers read. At every member a lone reader would read at
 * n1 whatever its role, so that level runs twice, at the leader and at a follower (the file comment).
 */
function levelPlan(at: ReadsAt, readerCounts: readonly number[]): Array<[number, ReadsAt]> {
  return readerCounts.flatMap((readers): Array<[number, ReadsAt]> =>
    at === 'all' && readers === 1
      ? [
          [1, 'leader'],
          [1, 'follower'],
        ]
      : [[readers, at]],
  );
}

/** whereReaders: the members `readers` readers read at, by name and role (`n1 (leader), n2, n3`). */
function whereReaders(svc: SvcCluster, readers: number, svcMember: (reader: number) => number): string {
  const count = svc.cluster.members.length;
  const used = [...new Set(Array.from({ length: readers }, (_, r) => svcMember(r) % count))].sort((a, b) => a - b);
  return used
    .map((i) => {
      const name = svc.cluster.members[i]!.name;
      return name === svc.leaderName ? `${name} (leader)` : `${name} (follower)`;
    })
    .join(', ');
}

/** printProfiles: where each of our node processes spent its time (--cpu-prof). */
async function printProfiles(profileDir: string, svc: SvcCluster): Promise<void> {
  for (const summary of await summarizeProfiles(profileDir, PROFILE_TOP_COUNT)) {
    const role =
      summary.pid === svc.cluster.members.find((m) => m.name === svc.leaderName)?.pid
        ? 'LEADER'
        : 'follower or supervisor';
    console.log(`cpu profile ${summary.file} (${role}, pid ${summary.pid}): ${fmt(summary.totalMs)} ms sampled`);
    console.log(`  by area: ${summary.byArea.map((a) => `${a.area} ${fmt(a.share * 100, 1)}%`).join(', ')}`);
    for (const f of summary.byFunction) console.log(`    ${fmt(f.share * 100, 1).padStart(5)}%  ${f.name}`);
  }
}

/** printTable: the medians of each level's rounds, one markdown row per reader count. */
function printTable(levels: Level[], options: ReadsOptions, etcdNote: string): void {
  console.log('');
  console.log(
    `linearizable reads, ${VALUE_BYTES}-byte values, ${options.keyCount} keys, at ${AT_LABEL[options.at]} (etcd's readers at the members of the same role)`,
  );
  console.log(
    '| readers | at | svc reads/s | svc p50 ms | svc p99 ms | svc CPU µs/read (members + client) | svc unary reads/s | unary p99 ms | unary CPU µs/read | etcd reads/s | etcd p50 ms | etcd p99 ms | etcd CPU µs/read (members + client) | svc / etcd (median of rounds) | unary / etcd |',
  );
  console.log('|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|');
  for (const level of levels) console.log(`| ${levelCells(level).join(' | ')} |`);
  console.log(`etcd: ${etcdNote}`);
}

function levelCells(level: Level): string[] {
  const med = (rs: Measured[], pick: (r: Measured) => number): number => median(rs.map(pick));
  const hasEtcd = level.etcd.length > 0;
  const ratioTo = (rs: Measured[]): number =>
    hasEtcd ? median(rs.map((r, i) => r.opsPerSecond / level.etcd[i]!.opsPerSecond)) : NaN;
  const cpu = (rs: Measured[]): string =>
    `${fmt(med(rs, (r) => r.cpuUsPerRead))} + ${fmt(med(rs, (r) => r.clientCpuUsPerRead))}`;
  return [
    String(level.readers),
    level.where,
    fmt(med(level.svc, (r) => r.opsPerSecond)),
    fmt(
      med(level.svc, (r) => r.p50Ms),
      2,
    ),
    fmt(
      med(level.svc, (r) => r.p99Ms),
      2,
    ),
    cpu(level.svc),
    fmt(med(level.svcUnary, (r) => r.opsPerSecond)),
    fmt(
      med(level.svcUnary, (r) => r.p99Ms),
      2,
    ),
    cpu(level.svcUnary),
    hasEtcd ? fmt(med(level.etcd, (r) => r.opsPerSecond)) : 'skipped',
    hasEtcd
      ? fmt(
          med(level.etcd, (r) => r.p50Ms),
          2,
        )
      : '-',
    hasEtcd
      ? fmt(
          med(level.etcd, (r) => r.p99Ms),
          2,
        )
      : '-',
    hasEtcd ? cpu(level.etcd) : '-',
    fmt(ratioTo(level.svc), 2),
    fmt(ratioTo(level.svcUnary), 2),
  ];
}

await main();
