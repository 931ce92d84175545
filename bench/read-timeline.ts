// Read timeline bench (not a test): where a lone linearizable read's time goes at the leader, phase by phase. It
// starts a three-node cluster as a user does (`svc cluster`: child processes, mutual TLS) with every node
// recording its trace stamps (transports/node/write-trace.ts, SVC_WRITE_TRACE_DIR), sends N sequential unary
// svc.store.v1 Get calls to the leader (bench/reads.ts's "svc unary" row at one reader, --at leader), and
// prints the median of each phase over the reads. All stamps are on the machine's monotonic clock, so the
// phases that cross processes (client to leader, leader to follower and back) are measured too.
//
//   npx tsx bench/read-timeline.ts [--reads 300] [--warmup 30] [--pairs 1] [--no-heartbeat-stream] [--get-stream]
//                                  [--insecure] [--keep]
// --get-stream alternates each unary Get with a read over GetStream (a message on one open call, bench/reads.ts's
// "svc" row) and prints the two side by side: where a unary Get's extra time goes, phase by phase.
//
// Each pair runs two clusters back to back: the leader's Heartbeats on open HeartbeatStream calls (the default,
// transports/grpc/heartbeat-stream.ts) and as unary calls (grpc.heartbeatStream off), and prints both columns.
// A read's round is the first heartbeat the leader sent after the engine stepped its readIndex input; the
// follower shown is the one whose answer the leader stepped first (the one that completed the quorum of
// three). A phase a read did not show (no stamp: e.g. a read confirmed by a periodic heartbeat's round) is
// left out of that phase's median.
import { mkdtemp, rm } from 'node:fs/promises';
import { mkdirSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { startSvcCluster } from './cluster/svc-cluster.js';
import { numberArg, readTraces, type NodeTrace } from './cluster/trace-files.js';
import { monotonicUs, type WritePhase, type WriteStamp } from '../transports/node/write-trace.js';
import { WRITE_TRACE_DIR_ENV } from '../cli/node-command.js';

const VALUE_CHARS = 88;
/** HEARTBEAT_STREAM_ENV: grpc.heartbeatStream's variable, which the cluster's nodes inherit. */
const HEARTBEAT_STREAM_ENV = 'SVC_GRPC_HEARTBEAT_STREAM';
const KEY_COUNT = 16;

/** first finds a node's first stamp of `phase` at or after `from` (µs), to `peer` if given. */
function first(node: NodeTrace, phase: WritePhase, from: number, peer?: string): WriteStamp | undefined {
  for (const s of node.byPhase.get(phase) ?? []) {
    if (s.atUs < from) continue;
    if (peer !== undefined && s.peer !== peer) continue;
    return s;
  }
  return undefined;
}

const PHASES = [
  'client → leader Get handler',
  'handler → engine steps readIndex',
  'readIndex step → Heartbeat handed to the pool',
  "Heartbeat → follower's server has it",
  "follower's server → its answer handed back",
  'answer → leader client decoded it',
  'decoded → leader engine steps it',
  'answer stepped → read index answered',
  'read index → handler has the value',
  'handler → client has the value',
  'readIndex step → read index answered (the round)',
  'total (client)',
] as const;
type Phase = (typeof PHASES)[number];

interface Read {
  sentUs: number;
  answeredUs: number;
}

function analyse(reads: Read[], leader: NodeTrace, followers: NodeTrace[]): Map<Phase, number[]> {
  const out = new Map<Phase, number[]>(PHASES.map((p) => [p, []]));
  const add = (phase: Phase, from: WriteStamp | number | undefined, to: WriteStamp | number | undefined): void => {
    if (from === undefined || to === undefined) return;
    const a = typeof from === 'number' ? from : from.atUs;
    const b = typeof to === 'number' ? to : to.atUs;
    out.get(phase)!.push((b - a) / 1000);
  };
  for (const r of reads) {
    add(PHASES[11], r.sentUs, r.answeredUs);
    const received = first(leader, 'read.received', r.sentUs);
    if (!received || received.atUs > r.answeredUs) continue;
    const stepped = first(leader, 'readindex.stepped', received.atUs);
    const answered = stepped && first(leader, 'readindex.answered', stepped.atUs);
    const value = answered && first(leader, 'read.answered', answered.atUs);
    add(PHASES[0], r.sentUs, received);
    add(PHASES[1], received, stepped);
    add(PHASES[8], answered, value);
    add(PHASES[9], value, r.answeredUs);
    add(PHASES[10], stepped, answered);
    if (!stepped || !answered) continue;
    // The follower whose answer the leader stepped first after the round left.
    let best: { at: number; stamps: Array<WriteStamp | undefined> } | null = null;
    for (const f of followers) {
      const sent = first(leader, 'heartbeat.sent', stepped.atUs, f.grpcAddr);
      if (!sent || sent.atUs > answered.atUs) continue;
      const got = first(f, 'heartbeat.received', sent.atUs);
      const back = got && first(f, 'heartbeat.answered', got.atUs);
      const acked = back && first(leader, 'heartbeat.acked', back.atUs, f.grpcAddr);
      const inEngine = acked && first(leader, 'heartbeat.stepped', acked.atUs);
      if (!inEngine) continue;
      if (best === null || inEngine.atUs < best.at)
        best = { at: inEngine.atUs, stamps: [sent, got, back, acked, inEngine] };
    }
    if (!best) continue;
    const [sent, got, back, acked, inEngine] = best.stamps;
    add(PHASES[2], stepped, sent);
    add(PHASES[3], sent, got);
    add(PHASES[4], got, back);
    add(PHASES[5], back, acked);
    add(PHASES[6], acked, inEngine);
    add(PHASES[7], inEngine, answered);
  }
  return out;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted.length === 0 ? NaN : sorted[Math.floor(sorted.length / 2)]!;
}

/** Carriage: how the leader's Heartbeats travel in a run (grpc.heartbeatStream, SVC_GRPC_HEARTBEAT_STREAM). */
type Carriage = 'stream' | 'unary';

/** ReadKind: how the client's reads travel: a unary Get call each, or a message each on one open GetStream call. */
type ReadKind = 'unary Get' | 'GetStream';

/** timeline runs one cluster with the given carriage and returns each phase's values over its reads. */
async function timeline(
  carriage: Carriage,
  readCount: number,
  warmupCount: number,
  insecure: boolean,
  kinds: readonly ReadKind[],
): Promise<Map<ReadKind, Map<Phase, number[]>>> {
  const dir = await mkdtemp(join(tmpdir(), 'svc-read-timeline-'));
  const traceDir = join(dir, 'trace');
  mkdirSync(traceDir);
  process.env[WRITE_TRACE_DIR_ENV] = traceDir;
  process.env[HEARTBEAT_STREAM_ENV] = carriage === 'stream' ? '1' : '0';
  const cluster = await startSvcCluster(join(dir, 'cluster'), [], [], insecure);
  const reads = new Map<ReadKind, Read[]>(kinds.map((k) => [k, []]));
  try {
    const leaderAt = cluster.cluster.members.findIndex((m) => m.name === cluster.leaderName);
    const value = 'x'.repeat(VALUE_CHARS);
    const read = (kind: ReadKind, key: string): Promise<string | null> =>
      kind === 'unary Get' ? cluster.getAlone(leaderAt, key) : cluster.get(leaderAt, key);
    for (let i = 0; i < KEY_COUNT; i++) await cluster.putAlone(`k-${i}`, value);
    for (let i = 0; i < warmupCount; i++) for (const kind of kinds) await read(kind, `k-${i % KEY_COUNT}`);
    // The kinds alternate read by read, so a load swing hits both alike; reads are sequential, so each read's
    // stamps lie between its sending and its answer.
    for (let i = 0; i < readCount; i++)
      for (const kind of kinds) {
        const sentUs = monotonicUs();
        if ((await read(kind, `k-${i % KEY_COUNT}`)) === null) throw new Error(`k-${i} not found`);
        reads.get(kind)!.push({ sentUs, answeredUs: monotonicUs() });
      }
  } finally {
    await cluster.stop();
  }
  const traces = await readTraces(traceDir);
  const leader = traces.find((t) => t.name === cluster.leaderName);
  if (!leader) throw new Error(`no trace from the leader ${cluster.leaderName} in ${traceDir}`);
  const followers = traces.filter((t) => t !== leader);
  const phases = new Map(kinds.map((kind) => [kind, analyse(reads.get(kind)!, leader, followers)]));
  if (process.argv.includes('--keep')) console.log(`${carriage}: traces kept in ${traceDir}`);
  else await rm(dir, { recursive: true, force: true });
  return phases;
}

async function main(): Promise<void> {
  const readCount = numberArg('reads', 300);
  const warmupCount = numberArg('warmup', 30);
  const pairs = numberArg('pairs', 1);
  const insecure = process.argv.includes('--insecure');
  // By default each pair runs the Heartbeat on its open call and as a unary call, back to back, so a load swing
  // on a shared machine hits both alike; --no-heartbeat-stream runs the unary carriage only.
  // --get-stream: each run alternates a unary Get with a GetStream message read by read (bench/reads.ts's two svc
  // rows), each kind its own column, on the default Heartbeat carriage only.
  const getStream = process.argv.includes('--get-stream');
  const carriages: Carriage[] = process.argv.includes('--no-heartbeat-stream')
    ? ['unary']
    : getStream
      ? ['stream']
      : ['stream', 'unary'];
  const kinds: ReadKind[] = getStream ? ['unary Get', 'GetStream'] : ['unary Get'];
  const columns = carriages.flatMap((c) => kinds.map((k) => (getStream ? k : c)));
  const runs = new Map<string, Array<Map<Phase, number[]>>>(columns.map((c) => [c, []]));
  for (let pair = 0; pair < pairs; pair++)
    for (const carriage of carriages) {
      console.log(
        `run ${pair + 1}: Heartbeats ${carriage === 'stream' ? 'on open HeartbeatStream calls' : 'as unary calls'} (load average ${loadavg()[0]!.toFixed(1)})`,
      );
      const byKind = await timeline(carriage, readCount, warmupCount, insecure, kinds);
      for (const kind of kinds) runs.get(getStream ? kind : carriage)!.push(byKind.get(kind)!);
    }
  console.log(
    `read timeline: ${readCount} sequential ${getStream ? 'unary Gets and as many GetStream reads, alternating,' : 'unary Gets'} at the leader per run, ${pairs} run(s) per column, 3 nodes, ${insecure ? 'plaintext' : 'mutual TLS'}; medians in ms of each run`,
  );
  const width = Math.max(...PHASES.map((p) => p.length));
  console.log(`  ${''.padEnd(width)}  ${columns.map((c) => c.padStart(7 * pairs + 2 * (pairs - 1))).join('  |  ')}`);
  for (const phase of PHASES) {
    const cells = columns.map((c) =>
      runs
        .get(c)!
        .map((run) => {
          const values = run.get(phase)!;
          return (values.length === 0 ? '—' : median(values).toFixed(3)).padStart(7);
        })
        .join(', '),
    );
    console.log(`  ${phase.padEnd(width)}  ${cells.join('  |  ')}`);
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
