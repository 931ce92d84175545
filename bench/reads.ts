// Read bench (not a test), one bounded run on loopback: linearizable read throughput and p50/p99 latency at
// 1, 16 and 64 concurrent readers on a three-node cluster, ours beside etcd's in the same run:
//   - svc: `svc cluster` (child processes, mutual TLS), each read one svc.store.v1 Get call at a member
//     (the member's own store read: a read index, at the leader when the member follows, then its apply);
//   - etcd (Debian's etcd-server 3.4, 3 members, no TLS): each read one KV.Range call over gRPC at a member,
//     linearizable (serializable false, etcd's default: its ReadIndex, then the member's apply).
// Reader r reads at member r mod 3 (--at leader: every reader at the leader), a key drawn from --keys
// preloaded keys with 96-byte values. Both clusters stay up and the rounds interleave (svc, etcd, then again),
// so a load swing on this shared machine hits both alike; medians of the rounds are reported, with the
// svc / etcd throughput ratio (median of the rounds' ratios). etcd is skipped with a note when not installed.
//
//   npx tsx bench/reads.ts [--seconds 3] [--warmup 1] [--rounds 3] [--keys 1000] [--at all|leader]
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { etcdVersion, startEtcd } from './cluster/etcd.js';
import { etcdKvClient } from './cluster/etcd-grpc.js';
import { closedLoop, payload, type LoadResult } from './cluster/load.js';
import { startSvcCluster } from './cluster/svc-cluster.js';

const READER_COUNTS = [1, 16, 64];
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

function atArg(): 'all' | 'leader' {
  const at = process.argv.indexOf('--at');
  if (at < 0) return 'all';
  const value = process.argv[at + 1];
  if (value !== 'all' && value !== 'leader') throw new Error('--at must be all or leader');
  return value;
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

async function measure(label: string, run: () => Promise<LoadResult>): Promise<LoadResult> {
  const result = await run();
  console.log(`  ${label}: ${fmt(result.opsPerSecond)} reads/s, p50 ${fmt(result.p50Ms, 2)} ms, p99 ${fmt(result.p99Ms, 2)} ms${result.errors ? `, ${result.errors} errors (${result.firstError})` : ''}`);
  return result;
}

async function main(): Promise<void> {
  const seconds = numberArg('seconds', 3);
  const warmup = numberArg('warmup', 1);
  const rounds = numberArg('rounds', 3);
  const keyCount = numberArg('keys', 1000);
  const at = atArg();
  const dir = await mkdtemp(join(tmpdir(), 'svc-bench-reads-'));
  const key = (i: number): string => `bench/reads/${i}`;
  // Reader r's i-th read: a key spread over the whole set, different per reader.
  const keyOf = (reader: number, i: number): string => key((reader * 7919 + i * 104_729) % keyCount);
  const levels: Array<{ readers: number; svc: LoadResult[]; etcd: LoadResult[] }> = [];
  let etcdNote: string;
  try {
    const svc = await startSvcCluster(join(dir, 'svc'));
    const version = etcdVersion();
    const etcd = version === null ? null : await startEtcd(join(dir, 'etcd'), 3, Math.max(...READER_COUNTS));
    const etcdKv = etcd ? etcdKvClient(etcd.clientUrls) : null;
    etcdNote = version === null ? 'etcd is not installed (Debian: apt-get install -y etcd-server): etcd column skipped' : `${version}, 3 members, gRPC KV.Range (linearizable), no TLS`;
    try {
      const svcLeader = svc.cluster.members.findIndex((m) => m.name === svc.leaderName);
      const etcdLeader = etcd ? etcd.clientUrls.indexOf(etcd.leaderClientUrl) : 0;
      const svcMember = (reader: number): number => (at === 'leader' ? svcLeader : reader);
      const etcdMember = (reader: number): number => (at === 'leader' ? etcdLeader : reader);
      console.log(`svc: 3 nodes (mutual TLS), leader ${svc.leaderName}; etcd: ${etcdNote}`);
      console.log(`preloading ${keyCount} keys (${VALUE_BYTES}-byte values) into each`);
      await preload(keyCount, (i) => svc.put(key(i), payload(SVC_VALUE_CHARS, i)));
      if (etcd) await preload(keyCount, (i) => etcd.put(key(i), payload(VALUE_BYTES, i)));
      // A read that finds nothing would measure a miss, not a read: every read checks it found its key.
      const svcRead = async (reader: number, i: number): Promise<void> => {
        if ((await svc.get(svcMember(reader), keyOf(reader, i))) === null) throw new Error(`svc: ${keyOf(reader, i)} not found`);
      };
      const etcdRead = async (reader: number, i: number): Promise<void> => {
        if ((await etcdKv!.range(etcdMember(reader), keyOf(reader, i), Date.now() + READ_DEADLINE_MS)) === null) throw new Error(`etcd: ${keyOf(reader, i)} not found`);
      };
      console.log(`reads at ${at === 'leader' ? 'the leader' : 'reader mod 3 (every member)'}; ${rounds} interleaved rounds per level (svc, etcd), ${seconds} s each after ${warmup} s warm-up; medians reported`);
      for (const readers of READER_COUNTS) {
        const level = { readers, svc: [] as LoadResult[], etcd: [] as LoadResult[] };
        for (let round = 1; round <= rounds; round++) {
          level.svc.push(await measure(`svc c${readers} round ${round}`, () => closedLoop(readers, warmup, seconds, svcRead)));
          if (etcdKv) level.etcd.push(await measure(`etcd c${readers} round ${round}`, () => closedLoop(readers, warmup, seconds, etcdRead)));
        }
        levels.push(level);
      }
    } finally {
      etcdKv?.close();
      await svc.stop();
      await etcd?.stop();
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }

  console.log('');
  const med = (rs: LoadResult[], pick: (r: LoadResult) => number): number => median(rs.map(pick));
  console.log(`linearizable reads, ${VALUE_BYTES}-byte values, ${keyCount} keys, at ${at === 'leader' ? 'the leader' : 'every member'}`);
  console.log('| readers | svc reads/s | svc p50 ms | svc p99 ms | etcd reads/s | etcd p50 ms | etcd p99 ms | svc / etcd throughput (median of rounds) |');
  console.log('|---|---|---|---|---|---|---|---|');
  for (const level of levels) {
    const hasEtcd = level.etcd.length > 0;
    const ratio = hasEtcd ? median(level.svc.map((r, i) => r.opsPerSecond / level.etcd[i]!.opsPerSecond)) : NaN;
    console.log(`| ${level.readers} | ${fmt(med(level.svc, (r) => r.opsPerSecond))} | ${fmt(med(level.svc, (r) => r.p50Ms), 2)} | ${fmt(med(level.svc, (r) => r.p99Ms), 2)} | ${hasEtcd ? fmt(med(level.etcd, (r) => r.opsPerSecond)) : 'skipped'} | ${hasEtcd ? fmt(med(level.etcd, (r) => r.p50Ms), 2) : '-'} | ${hasEtcd ? fmt(med(level.etcd, (r) => r.p99Ms), 2) : '-'} | ${fmt(ratio, 2)} |`);
  }
  console.log(`etcd: ${etcdNote}`);
}

await main();
