// Cluster bench (not a test), one bounded run on loopback:
//   1. the disk's fdatasync rate, measured now in the same directory;
//   2. three-node write throughput and p50/p99 commit latency at 1, 16 and 64 concurrent writers,
//      96-byte values: our cluster (`svc cluster`: child processes, mutual TLS, real fsync; writes
//      go to the leader through svc.store.v1 as a follower forwards them: a StoreClientPool that
//      sends one loop turn's writes as one ProposeBatch, and, as a second row, one Propose call per
//      write) beside etcd from Debian (3 members, v3 HTTP/JSON gateway POST /v3/kv/put at the
//      leader, one request per write), skipped with a note when `etcd` is not installed. Both
//      clusters stay up and the rounds interleave (svc, svc one-call, etcd, then again), so a load
//      swing on this shared machine hits all three alike; medians of the rounds are reported;
//   3. snapshot transfer MB/s (a staged artifact fetched and installed with verification) beside a
//      raw grpc-js stream with the same flow-control settings.
//
//   npx tsx bench/cluster.ts [--seconds 3] [--warmup 1] [--rounds 3] [--snapshot-mib 256] [--snapshot-rounds 3] [--cpu-prof]
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

/** LevelRounds holds one writer level's rounds; the i-th round of each system ran back to back. */
interface LevelRounds {
  writers: number;
  svc: LoadResult[];
  svcAlone: LoadResult[];
  etcd: LoadResult[];
}

function median(values: number[]): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

async function measure(label: string, run: () => Promise<LoadResult>): Promise<LoadResult> {
  const result = await run();
  console.log(
    `  ${label}: ${fmt(result.opsPerSecond)} writes/s, p50 ${fmt(result.p50Ms, 2)} ms, p99 ${fmt(result.p99Ms, 2)} ms${result.errors ? `, ${result.errors} errors (${result.firstError})` : ''}`,
  );
  return result;
}

async function main(): Promise<void> {
  const seconds = numberArg('seconds', 3);
  const warmup = numberArg('warmup', 1);
  const snapshotMib = numberArg('snapshot-mib', 256);
  const snapshotRounds = numberArg('snapshot-rounds', 3);
  const cpuProf = process.argv.includes('--cpu-prof');
  const dir = await mkdtemp(join(tmpdir(), 'svc-bench-cluster-'));
  const profileDir = join(dir, 'profiles');
  const rounds = numberArg('rounds', 3);
  const levels: LevelRounds[] = [];
  let etcdNote: string;
  let leaderPid: number;
  try {
    const fsyncPerSecond = await fdatasyncRate(dir);
    console.log(`disk: ${fmt(fsyncPerSecond)} fdatasync/s (${FSYNC_RECORD_BYTES}-byte appends, ${tmpdir()})`);

    if (cpuProf) await mkdir(profileDir);
    const svc = await startSvcCluster(join(dir, 'svc'), cpuProf ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : []);
    leaderPid = svc.cluster.members.find((m) => m.name === svc.leaderName)?.pid ?? 0;
    const version = etcdVersion();
    const etcd = version === null ? null : await startEtcd(join(dir, 'etcd'), 3, Math.max(...WRITER_COUNTS));
    etcdNote =
      version === null
        ? 'etcd is not installed (Debian: apt-get install -y etcd-server): etcd column skipped'
        : `${version}, 3 members, HTTP/JSON gateway at the leader, no TLS`;
    try {
      console.log(`svc: 3 nodes (mutual TLS, fdatasync group commit), leader ${svc.leaderName}; etcd: ${etcdNote}`);
      console.log(
        `${rounds} interleaved rounds per level (svc batched, svc one call per write, etcd), ${seconds} s each after ${warmup} s warm-up; medians reported`,
      );
      for (const writers of WRITER_COUNTS) {
        const rows: LevelRounds = { writers, svc: [], svcAlone: [], etcd: [] };
        for (let round = 1; round <= rounds; round++) {
          const tag = `c${writers}r${round}`;
          rows.svc.push(
            await measure(`svc c${writers} round ${round}`, () =>
              closedLoop(writers, warmup, seconds, (w, i) =>
                svc.put(`bench/${tag}/w${w}/${i}`, payload(SVC_VALUE_CHARS, i)),
              ),
            ),
          );
          rows.svcAlone.push(
            await measure(`svc one-call c${writers} round ${round}`, () =>
              closedLoop(writers, warmup, seconds, (w, i) =>
                svc.putAlone(`bench/${tag}a/w${w}/${i}`, payload(SVC_VALUE_CHARS, i)),
              ),
            ),
          );
          if (etcd)
            rows.etcd.push(
              await measure(`etcd c${writers} round ${round}`, () =>
                closedLoop(writers, warmup, seconds, (w, i) =>
                  etcd.put(`bench/${tag}/w${w}/${i}`, payload(VALUE_BYTES, i)),
                ),
              ),
            );
        }
        levels.push(rows);
      }
    } finally {
      await svc.stop();
      await etcd?.stop();
    }

    console.log(
      `snapshot: staging and fetching a ${snapshotMib} MiB artifact, ${snapshotRounds} interleaved rounds (raw, drained, install), medians`,
    );
    const snapshot = await measureSnapshotTransfer(join(dir, 'snapshot'), snapshotMib, snapshotRounds);

    console.log('');
    const med = (rs: LoadResult[], pick: (r: LoadResult) => number): number => median(rs.map(pick));
    console.log(
      '| writers | svc writes/s | svc p50 ms | svc p99 ms | svc one-call writes/s | one-call p99 ms | etcd writes/s | etcd p50 ms | etcd p99 ms | svc / etcd (median of rounds) | one-call / etcd | svc writes per fdatasync |',
    );
    console.log('|---|---|---|---|---|---|---|---|---|---|---|---|');
    for (const level of levels) {
      const hasEtcd = level.etcd.length > 0;
      const ratio = hasEtcd ? median(level.svc.map((r, i) => r.opsPerSecond / level.etcd[i]!.opsPerSecond)) : NaN;
      const aloneRatio = hasEtcd
        ? median(level.svcAlone.map((r, i) => r.opsPerSecond / level.etcd[i]!.opsPerSecond))
        : NaN;
      console.log(
        `| ${level.writers} | ${fmt(med(level.svc, (r) => r.opsPerSecond))} | ${fmt(
          med(level.svc, (r) => r.p50Ms),
          2,
        )} | ${fmt(
          med(level.svc, (r) => r.p99Ms),
          2,
        )} | ${fmt(med(level.svcAlone, (r) => r.opsPerSecond))} | ${fmt(
          med(level.svcAlone, (r) => r.p99Ms),
          2,
        )} | ${hasEtcd ? fmt(med(level.etcd, (r) => r.opsPerSecond)) : 'skipped'} | ${
          hasEtcd
            ? fmt(
                med(level.etcd, (r) => r.p50Ms),
                2,
              )
            : '-'
        } | ${
          hasEtcd
            ? fmt(
                med(level.etcd, (r) => r.p99Ms),
                2,
              )
            : '-'
        } | ${fmt(ratio, 2)} | ${fmt(aloneRatio, 2)} | ${fmt(med(level.svc, (r) => r.opsPerSecond) / fsyncPerSecond, 2)} |`,
      );
    }
    console.log(`disk fdatasync rate this run: ${fmt(fsyncPerSecond)}/s${etcdNote ? `; etcd: ${etcdNote}` : ''}`);
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

    if (cpuProf) {
      console.log('');
      for (const summary of await summarizeProfiles(profileDir, PROFILE_TOP_COUNT)) {
        const role = summary.pid === leaderPid ? 'LEADER' : 'follower or supervisor';
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
