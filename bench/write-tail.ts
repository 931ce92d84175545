// Write tail bench (not a test): where the tail of many concurrent one-call writers comes from (issue 17: at 64
// writers, one unary svc.store.v1 Propose per write, bench/cluster.ts's "one request per write" row had a p99
// four times etcd's). It starts a three-node cluster as a user does (`svc cluster`: child processes, mutual TLS,
// real fdatasync), optionally fills the store first (--preload N keys through the batched pool, as the earlier
// rows of bench/cluster.ts do before its c64 rows: the members' heaps then hold them), runs `writers` closed
// loops of one unary Propose each at the leader, and prints, for the measured window only:
//   - throughput, p50 / p90 / p99 / max and a latency histogram, and the writes per 100 ms with their slowest;
//   - the leader's proposals per WAL sync and per engine input (1 when every write had a round of its own; the
//     writer count when all of them move in lock-step, one round at a time);
//   - per member and for this client: GC pauses by kind (count, total, how many over 10 and 100 ms), the event
//     loop's delay (max, p99; prom-client's monitor, 10 ms resolution) and, per member, WAL syncs over 20 and
//     50 ms, and a snapshot staged in the window (every snapshotEntryCountThreshold applied entries) or installed from a peer. Members' figures are their /metrics before and after the window (prom-client resets the event-loop
//     monitor at each scrape), so nothing is added to their path.
//
//   npx tsx bench/write-tail.ts [--writers 64] [--seconds 4] [--warmup 1] [--preload 0] [--insecure] [--node-option X]
//     [--engine-limit NAME=N] (repeatable; e.g. snapshotEntryCountThreshold=30000 puts a staging inside the window)
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PerformanceObserver, monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { startSvcCluster } from './cluster/svc-cluster.js';
import { payload, SVC_VALUE_CHARS } from './cluster/load.js';
import { numberArg } from './cluster/trace-files.js';
import { memberLine, scrapeMembers, type Scrape } from './cluster/member-metrics.js';
import { preload as preloadKeys } from './cluster/preload.js';

const HISTOGRAM_BUCKET_MS = 10;
const HISTOGRAM_BUCKETS = 20;
const TIMELINE_SLICE_MS = 100;

interface TimedWrite {
  sentMs: number;
  answeredMs: number;
}

const quantile = (sorted: number[], q: number): number =>
  sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;

async function main(): Promise<void> {
  const writers = numberArg('writers', 64);
  const seconds = numberArg('seconds', 4);
  const warmup = numberArg('warmup', 1);
  const preload = process.argv.includes('--preload') ? numberArg('preload', 1) : 0;
  const dir = await mkdtemp(join(tmpdir(), 'svc-write-tail-'));
  // --node-option X (repeatable) goes to each node's process (e.g. --cpu-prof --cpu-prof-dir=D, a V8 GC flag).
  const nodeOptions = process.argv.flatMap((arg, i) => (arg === '--node-option' ? [process.argv[i + 1]!] : []));
  const engineLimits = process.argv.flatMap((arg, i) => (arg === '--engine-limit' ? [process.argv[i + 1]!] : []));
  const svc = await startSvcCluster(join(dir, 'svc'), nodeOptions, engineLimits, process.argv.includes('--insecure'));
  try {
    const members = svc.cluster.members;
    const scrapeAll = (): Promise<Scrape[]> => scrapeMembers(members);
    if (preload > 0) {
      const seconds = await preloadKeys(svc, preload);
      console.log(`preloaded ${preload} keys (batched pool) in ${seconds.toFixed(1)} s`);
    }
    const clientGc: Array<{ atMs: number; ms: number; kind: number }> = [];
    const gcObserver = new PerformanceObserver((list) => {
      for (const e of list.getEntries())
        clientGc.push({
          atMs: e.startTime,
          ms: e.duration,
          kind: (e as { detail?: { kind?: number } }).detail?.kind ?? 0,
        });
    });
    gcObserver.observe({ entryTypes: ['gc'] });
    const clientDelay = monitorEventLoopDelay({ resolution: 10 });
    const windowFrom = performance.now() + warmup * 1000;
    const windowTo = windowFrom + seconds * 1000;
    let before: Scrape[] = [];
    const atWindow = setTimeout(() => {
      clientDelay.enable();
      void scrapeAll().then((s) => (before = s));
    }, warmup * 1000);
    const writes: TimedWrite[] = [];
    let errors = 0;
    await Promise.all(
      Array.from({ length: writers }, async (_, w) => {
        // Bounded by the window's end.
        for (let i = 0; performance.now() < windowTo; i++) {
          const sentMs = performance.now();
          try {
            await svc.putAlone(`tail/w${w}/${i}`, payload(SVC_VALUE_CHARS, i));
          } catch {
            errors++;
            continue;
          }
          const answeredMs = performance.now();
          if (sentMs >= windowFrom && answeredMs <= windowTo) writes.push({ sentMs, answeredMs });
        }
      }),
    );
    clearTimeout(atWindow);
    clientDelay.disable();
    gcObserver.disconnect();
    const after = await scrapeAll();
    const leaderAt = members.findIndex((m) => m.name === svc.leaderName);
    printLatencies(writes, seconds, writers, errors, windowFrom);
    const delta = (key: string): number => (after[leaderAt]!.get(key) ?? 0) - (before[leaderAt]?.get(key) ?? 0);
    const proposals = delta('svc_proposal_batch_size_sum');
    console.log(
      `leader ${svc.leaderName}: ${(proposals / delta('svc_wal_sync_seconds_count')).toFixed(1)} proposals per WAL sync, ${(proposals / delta('svc_proposal_batch_size_count')).toFixed(1)} per engine propose input`,
    );
    console.log('in the window (members from /metrics; GC pauses are wall time, so a busy machine stretches them):');
    members.forEach((m, i) =>
      console.log(
        memberLine(`${m.name}${m.name === svc.leaderName ? ' (leader)' : ''}`, before[i] ?? new Map(), after[i]!),
      ),
    );
    const inWindow = clientGc.filter((g) => g.atMs >= windowFrom && g.atMs <= windowTo);
    console.log(
      `  client: GC ${inWindow.length} pauses (${inWindow.reduce((s, g) => s + g.ms, 0).toFixed(0)} ms, >10 ms ${inWindow.filter((g) => g.ms > 10).length}, >100 ms ${inWindow.filter((g) => g.ms > 100).length}); event-loop delay max ${(clientDelay.max / 1e6).toFixed(1)} ms, p99 ${(clientDelay.percentile(99) / 1e6).toFixed(1)} ms`,
    );
  } finally {
    await svc.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

/** printLatencies: the distribution, a histogram, and the window in slices with each slice's slowest write. */
function printLatencies(writes: TimedWrite[], seconds: number, writers: number, errors: number, fromMs: number): void {
  const latencies = writes.map((w) => w.answeredMs - w.sentMs).sort((a, b) => a - b);
  const q = (p: number): string => quantile(latencies, p).toFixed(1);
  console.log(
    `${writers} writers, one unary Propose per write: ${(writes.length / seconds).toFixed(0)} writes/s, p50 ${q(0.5)} ms, p90 ${q(0.9)}, p99 ${q(0.99)}, max ${q(1)}${errors ? `, ${errors} errors` : ''}`,
  );
  const buckets = new Array<number>(HISTOGRAM_BUCKETS).fill(0);
  for (const l of latencies) buckets[Math.min(HISTOGRAM_BUCKETS - 1, Math.floor(l / HISTOGRAM_BUCKET_MS))]!++;
  console.log(
    `latency histogram (${HISTOGRAM_BUCKET_MS} ms buckets, the last open): ${buckets.map((n, i) => `${i * HISTOGRAM_BUCKET_MS}:${n}`).join(' ')}`,
  );
  const slices = new Map<number, { count: number; slowestMs: number }>();
  for (const w of writes) {
    const at = Math.floor((w.answeredMs - fromMs) / TIMELINE_SLICE_MS);
    const slice = slices.get(at) ?? { count: 0, slowestMs: 0 };
    slice.count++;
    slice.slowestMs = Math.max(slice.slowestMs, w.answeredMs - w.sentMs);
    slices.set(at, slice);
  }
  console.log(
    `answered per ${TIMELINE_SLICE_MS} ms slice / slowest ms: ${[...slices]
      .sort((a, b) => a[0] - b[0])
      .map(([, s]) => `${s.count}/${s.slowestMs.toFixed(0)}`)
      .join(' ')}`,
  );
}

await main();
