// Cluster bench (not a test), one bounded run on loopback:
//   1. the disk's fdatasync rate, measured now in the same directory;
//   2. three-node write throughput and p50/p99 commit latency at 1, 16 and 64 concurrent writers,
//      96-byte values: our cluster (`svc cluster`: child processes, mutual TLS, real fsync; writes
//      are svc.store.v1 Propose calls at the leader) beside etcd from Debian (3 members, v3 HTTP/JSON
//      gateway POST /v3/kv/put at the leader), skipped with a note when `etcd` is not installed;
//   3. snapshot transfer MB/s (a staged artifact fetched and installed with verification) beside a
//      raw grpc-js stream with the same flow-control settings.
//
//   npx tsx bench/cluster.ts [--seconds 3] [--warmup 1] [--snapshot-mib 256] [--reps 2] [--cpu-prof]
//
// --cpu-prof runs our nodes under `node --cpu-prof` and prints where each node's time went.
import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, open, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { etcdVersion, startEtcd } from './cluster/etcd.js';
import { closedLoop, payload, type LoadResult } from './cluster/load.js';
import { summarizeProfiles } from './cluster/profile.js';
import { measureSnapshotTransfer } from './cluster/snapshot.js';
import { startSvcCluster } from './cluster/svc-cluster.js';

const WRITER_COUNTS = [1, 16, 64];
const VALUE_BYTES = 96;
/** SVC_VALUE_CHARS makes our stored value {"d":"…"} exactly VALUE_BYTES of JSON. */
const SVC_VALUE_CHARS = VALUE_BYTES - '{"d":""}'.length;
const FSYNC_RECORD_BYTES = 128;
const FSYNC_SECONDS = 1.5;
const PROFILE_TOP_COUNT = 12;

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

const fmt = (n: number, digits = 0): string => (Number.isFinite(n) ? n.toFixed(digits) : '-');

async function main(): Promise<void> {
  const seconds = numberArg('seconds', 3);
  const warmup = numberArg('warmup', 1);
  const snapshotMib = numberArg('snapshot-mib', 256);
  const reps = numberArg('reps', 2);
  const cpuProf = process.argv.includes('--cpu-prof');
  const dir = await mkdtemp(join(tmpdir(), 'svc-bench-cluster-'));
  const profileDir = join(dir, 'profiles');
  const svcResults: LoadResult[] = [];
  const etcdResults: LoadResult[] = [];
  let etcdNote: string;
  try {
    const fsyncPerSecond = await fdatasyncRate(dir);
    console.log(`disk: ${fmt(fsyncPerSecond)} fdatasync/s (${FSYNC_RECORD_BYTES}-byte appends, ${tmpdir()})`);

    if (cpuProf) await mkdir(profileDir);
    const svc = await startSvcCluster(join(dir, 'svc'), cpuProf ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : []);
    const leaderPid = svc.cluster.members.find((m) => m.name === svc.leaderName)?.pid ?? 0;
    try {
      console.log(`svc: 3 nodes (mutual TLS, fdatasync group commit), leader ${svc.leaderName}; ${seconds} s per level after ${warmup} s warm-up`);
      for (const writers of WRITER_COUNTS) {
        const result = await closedLoop(writers, warmup, seconds, (w, i) => svc.put(`bench/c${writers}/w${w}/${i}`, payload(SVC_VALUE_CHARS, i)));
        svcResults.push(result);
        console.log(`  svc  c${writers}: ${fmt(result.opsPerSecond)} writes/s, p50 ${fmt(result.p50Ms, 2)} ms, p99 ${fmt(result.p99Ms, 2)} ms${result.errors ? `, ${result.errors} errors (${result.firstError})` : ''}`);
      }
    } finally {
      await svc.stop();
    }

    const version = etcdVersion();
    if (version === null) {
      etcdNote = 'etcd is not installed (Debian: apt-get install -y etcd-server): etcd column skipped';
      console.log(etcdNote);
    } else {
      const etcd = await startEtcd(join(dir, 'etcd'), 3, Math.max(...WRITER_COUNTS));
      try {
        etcdNote = `${version}, 3 members, HTTP/JSON gateway at the leader, no TLS`;
        console.log(`etcd: ${etcdNote}`);
        for (const writers of WRITER_COUNTS) {
          const result = await closedLoop(writers, warmup, seconds, (w, i) => etcd.put(`bench/c${writers}/w${w}/${i}`, payload(VALUE_BYTES, i)));
          etcdResults.push(result);
          console.log(`  etcd c${writers}: ${fmt(result.opsPerSecond)} writes/s, p50 ${fmt(result.p50Ms, 2)} ms, p99 ${fmt(result.p99Ms, 2)} ms${result.errors ? `, ${result.errors} errors (${result.firstError})` : ''}`);
        }
      } finally {
        await etcd.stop();
      }
    }

    console.log(`snapshot: staging and fetching a ${snapshotMib} MiB artifact, best of ${reps}`);
    const snapshot = await measureSnapshotTransfer(join(dir, 'snapshot'), snapshotMib, reps);

    console.log('');
    console.log(`| writers | svc writes/s | svc p50 ms | svc p99 ms | etcd writes/s | etcd p50 ms | etcd p99 ms | svc / etcd | svc writes per fdatasync |`);
    console.log('|---|---|---|---|---|---|---|---|---|');
    for (const [i, writers] of WRITER_COUNTS.entries()) {
      const s = svcResults[i]!;
      const e = etcdResults[i];
      console.log(`| ${writers} | ${fmt(s.opsPerSecond)} | ${fmt(s.p50Ms, 2)} | ${fmt(s.p99Ms, 2)} | ${e ? fmt(e.opsPerSecond) : 'skipped'} | ${e ? fmt(e.p50Ms, 2) : '-'} | ${e ? fmt(e.p99Ms, 2) : '-'} | ${e ? fmt(s.opsPerSecond / e.opsPerSecond, 2) : '-'} | ${fmt(s.opsPerSecond / fsyncPerSecond, 2)} |`);
    }
    console.log(`disk fdatasync rate this run: ${fmt(fsyncPerSecond)}/s${etcdNote ? `; etcd: ${etcdNote}` : ''}`);
    console.log('');
    console.log(`snapshot transfer, ${fmt(snapshot.bytes / 1e6)} MB artifact (staging it: ${fmt(snapshot.stageMbPerSecond)} MB/s), loopback, server in a child process`);
    console.log('| path | MB/s | ratio to raw |');
    console.log('|---|---|---|');
    const rawRate = snapshot.rows[0]!.mbPerSecond;
    for (const row of snapshot.rows) console.log(`| ${row.path} | ${fmt(row.mbPerSecond)} | ${fmt(row.mbPerSecond / rawRate, 2)} |`);

    if (cpuProf) {
      console.log('');
      for (const summary of await summarizeProfiles(profileDir, PROFILE_TOP_COUNT)) {
        const role = summary.pid === leaderPid ? 'LEADER' : svc.cluster.members.some((m) => m.pid === summary.pid) ? 'follower' : 'supervisor';
        console.log(`cpu profile ${summary.file} (${role}, pid ${summary.pid}): ${fmt(summary.totalMs)} ms sampled`);
        console.log(`  by area: ${summary.byArea.map((a) => `${a.area} ${fmt(a.share * 100, 1)}%`).join(', ')}`);
        for (const f of summary.byFunction) console.log(`    ${fmt(f.share * 100, 1).padStart(5)}%  ${f.name}`);
      }
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

await main();
