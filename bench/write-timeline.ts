// Write timeline bench (not a test): where one write's time goes, phase by phase. It starts a three-node
// cluster as a user does (`svc cluster`: child processes, mutual TLS, real fdatasync) with every node
// recording its write-trace stamps (transports/node/write-trace.ts, SVC_WRITE_TRACE_DIR), sends N sequential
// writes to the leader (one unary svc.store.v1 Propose each, as bench/cluster.ts's "one request per write"
// row at one writer), and prints the median of each phase over the writes. All stamps are on the machine's
// monotonic clock, so a phase that crosses processes (client to leader, leader to follower) is measured too.
//
//   npx tsx bench/write-timeline.ts [--writes 300] [--warmup 30] [--insecure] [--keep] [--cpu-prof]
//   npx tsx bench/write-timeline.ts --recording-ab [--writes 2000] [--blocks 10] ...
//
// --recording-ab starts two clusters, one recording (the default) and one with --no-recording, sends the writes
// in blocks alternating between them (the order flipping each block), and prints each phase's median on both
// sides and their difference: where the flight recorder's toll on a write lands (issue 22).
//
// --cpu-prof runs the nodes under `node --cpu-prof` and prints where each one's busy time went, and the share
// of it the data directory's disk-usage walk takes (transports/node/node-stats.ts).
//
// The follower shown is the one whose frontier reached the leader first for that write (the one that
// completed the quorum). A phase a write did not show (no stamp) is left out of that phase's median.
import { mkdtemp, rm } from 'node:fs/promises';
import { mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startSvcCluster, type SvcCluster } from './cluster/svc-cluster.js';
import { numberArg, readTraces, type NodeTrace } from './cluster/trace-files.js';
import { subtreeShares, summarizeProfiles } from './cluster/profile.js';
import { monotonicUs, type WritePhase, type WriteStamp } from '../transports/node/write-trace.js';
import { WRITE_TRACE_DIR_ENV } from '../cli/node-command.js';
import * as pb from '../proto/gen/svc/store/v1/store.js';

const VALUE_CHARS = 88;
/** PROPOSE_PATH names the Propose call on the lean server's answer stamps. */
const PROPOSE_PATH = pb.StoreService.propose.path;

/** first finds a node's first stamp of `phase` at or after `from` (µs) with seq >= seq and, if given, to peer. */
function first(node: NodeTrace, phase: WritePhase, from: number, seq = 0, peer?: string): WriteStamp | undefined {
  for (const s of node.byPhase.get(phase) ?? []) {
    if (s.atUs < from || s.seq < seq) continue;
    if (peer !== undefined && s.peer !== peer) continue;
    return s;
  }
  return undefined;
}

/** PHASES are the rows printed: a name and the two points it spans. */
const PHASES = [
  'client → leader Store handler',
  'handler → engine append effect',
  'leader append → its WAL round starts',
  "leader's write + fdatasync",
  'leader append → ShipSegment handed to the pool',
  "ShipSegment → follower's server has it",
  "follower's server → its append effect",
  'follower append → its WAL round starts',
  "follower's write + fdatasync",
  'follower synced → entriesPersisted step',
  'entriesPersisted → ReportApplied handed to the pool',
  "ReportApplied → leader's server has it",
  'ShipSegment → its answer at the leader',
  'frontier at leader → apply (commit)',
  'apply → handler has the outcome',
  'handler outcome → client has the answer',
  '  outcome → the lean server has the answer',
  '  lean server has it → headers + message flushed',
  '  message flushed → trailers flushed',
  '  trailers flushed → client has the answer',
  '  (lean connection) outcome → answer written to the socket',
  '  (lean connection) written → client has the answer',
  'total (client)',
] as const;
type Phase = (typeof PHASES)[number];

interface Write {
  sentUs: number;
  answeredUs: number;
}

interface Analysis {
  phases: Map<Phase, number[]>;
  /** waitedOnLeaderSync counts the writes whose commit came after the leader's own fdatasync (the last to arrive). */
  waitedOnLeaderSync: number;
  /** commits counts the writes both the leader's sync and a follower's frontier were seen for. */
  commits: number;
}

function analyse(writes: Write[], leader: NodeTrace, followers: NodeTrace[]): Analysis {
  const out = new Map<Phase, number[]>(PHASES.map((p) => [p, []]));
  let waitedOnLeaderSync = 0;
  let commits = 0;
  const add = (phase: Phase, from: WriteStamp | number | undefined, to: WriteStamp | number | undefined): void => {
    if (from === undefined || to === undefined) return;
    const a = typeof from === 'number' ? from : from.atUs;
    const b = typeof to === 'number' ? to : to.atUs;
    out.get(phase)!.push((b - a) / 1000);
  };
  for (const w of writes) {
    const received = first(leader, 'propose.received', w.sentUs);
    if (!received || received.atUs > w.answeredUs) continue;
    const append = first(leader, 'append', received.atUs, 1);
    if (!append) continue;
    const seq = append.seq;
    const round = first(leader, 'wal.round', append.atUs, seq);
    const synced = round && first(leader, 'wal.synced', round.atUs, seq);
    add(PHASES[0], w.sentUs, received);
    add(PHASES[1], received, append);
    add(PHASES[2], append, round);
    add(PHASES[3], round, synced);
    // The follower that brought the frontier to the leader first.
    let best: { reach: number; stamps: Array<WriteStamp | undefined> } | null = null;
    for (const f of followers) {
      // A ShipSegment names the follower by address, a live-stream chunk by name.
      const shipped = first(leader, 'ship.sent', append.atUs, seq, f.grpcAddr);
      const pushed = first(leader, 'ship.sent', append.atUs, seq, f.name);
      const ship = shipped && pushed ? (shipped.atUs <= pushed.atUs ? shipped : pushed) : (shipped ?? pushed);
      if (!ship) continue;
      const got = first(f, 'ship.received', ship.atUs, seq);
      const fAppend = got && first(f, 'append', got.atUs, seq);
      const fRound = fAppend && first(f, 'wal.round', fAppend.atUs, seq);
      const fSynced = fRound && first(f, 'wal.synced', fRound.atUs, seq);
      const persisted = fSynced && first(f, 'persisted.stepped', fSynced.atUs, seq);
      const report = persisted && first(f, 'report.sent', persisted.atUs, seq);
      const reportIn = report && first(leader, 'report.received', report.atUs, seq);
      // A live-stream chunk has no answer (the follower's ReportApplied is its acknowledgement).
      const acked = ship === shipped ? first(leader, 'ship.acked', ship.atUs, 0, f.grpcAddr) : undefined;
      // The answer carries the frontier only when its applied_seqno hint already covers the write.
      const ackReach = acked && acked.seq >= seq ? acked.atUs : Infinity;
      const reach = Math.min(reportIn?.atUs ?? Infinity, ackReach);
      if (best === null || reach < best.reach)
        best = { reach, stamps: [ship, got, fAppend, fRound, fSynced, persisted, report, reportIn, acked] };
    }
    if (best) {
      const [ship, got, fAppend, fRound, fSynced, persisted, report, reportIn, acked] = best.stamps;
      add(PHASES[4], append, ship);
      add(PHASES[5], ship, got);
      add(PHASES[6], got, fAppend);
      add(PHASES[7], fAppend, fRound);
      add(PHASES[8], fRound, fSynced);
      add(PHASES[9], fSynced, persisted);
      add(PHASES[10], persisted, report);
      add(PHASES[11], report, reportIn);
      add(PHASES[12], ship, acked);
      const applied = first(leader, 'apply', append.atUs, seq);
      if (Number.isFinite(best.reach)) add(PHASES[13], best.reach, applied);
      if (Number.isFinite(best.reach) && synced) {
        commits++;
        if (synced.atUs > best.reach) waitedOnLeaderSync++;
      }
      const answered = applied && first(leader, 'propose.answered', applied.atUs, seq);
      add(PHASES[14], applied, answered);
      add(PHASES[15], answered, w.answeredUs);
      // The lean server's stamps of the Propose answer leaving (absent when grpc-js serves the call). The close
      // is stamped a few ticks after the trailers' flush, so on a busy machine it can come after the client
      // has the answer (a negative last part), which is still that write's.
      const given = answered && first(leader, 'answer.given', answered.atUs, 0, PROPOSE_PATH);
      const flushed = given && first(leader, 'answer.flushed', given.atUs, 0, PROPOSE_PATH);
      const closed = flushed && first(leader, 'answer.closed', flushed.atUs, 0, PROPOSE_PATH);
      if (closed) {
        add(PHASES[16], answered, given);
        add(PHASES[17], given, flushed);
        add(PHASES[18], flushed, closed);
        add(PHASES[19], closed, w.answeredUs);
      }
      // On a lean connection (lean-connections.ts) the answer leaves whole in one socket write.
      const written = answered && first(leader, 'answer.written', answered.atUs, 0, PROPOSE_PATH);
      if (written && written.atUs <= w.answeredUs) {
        add(PHASES[20], answered, written);
        add(PHASES[21], written, w.answeredUs);
      }
    }
    add(PHASES[22], w.sentUs, w.answeredUs);
  }
  return { phases: out, waitedOnLeaderSync, commits };
}

/**
 * cpuPerWrite is a node's CPU time per write (ms) between its first recorder line after the first write was
 * sent and its last one before the last write was answered: less sensitive to a busy machine than the phases.
 */
function cpuPerWrite(node: NodeTrace, writes: Write[]): number {
  const lines = node.byPhase.get('cpu') ?? [];
  const start = lines.find((l) => l.atUs >= writes[0]!.sentUs);
  const end = [...lines].reverse().find((l) => l.atUs <= writes[writes.length - 1]!.answeredUs);
  if (!start || !end || end.atUs <= start.atUs) return NaN;
  const count = writes.filter((w) => w.sentUs >= start.atUs && w.answeredUs <= end.atUs).length;
  return count === 0 ? NaN : (end.cpuUs! - start.cpuUs!) / 1000 / count;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted.length === 0 ? NaN : sorted[Math.floor(sorted.length / 2)]!;
}

async function main(): Promise<void> {
  const writeCount = numberArg('writes', 300);
  const warmupCount = numberArg('warmup', 30);
  const insecure = process.argv.includes('--insecure');
  const dir = await mkdtemp(join(tmpdir(), 'svc-write-timeline-'));
  const cpuProf = process.argv.includes('--cpu-prof');
  const profileDir = join(dir, 'profiles');
  if (cpuProf) mkdirSync(profileDir);
  const ab = process.argv.includes('--recording-ab');
  // One cluster, or (--recording-ab) one recording and one with --no-recording, each with its own trace files.
  const sides = ab ? (['on', 'off'] as const) : (['on'] as const);
  const clusters = new Map<string, { cluster: SvcCluster; traceDir: string; writes: Write[] }>();
  const value = 'x'.repeat(VALUE_CHARS);
  try {
    for (const side of sides) {
      const traceDir = join(dir, `trace-${side}`);
      mkdirSync(traceDir);
      process.env[WRITE_TRACE_DIR_ENV] = traceDir;
      const cluster = await startSvcCluster(
        join(dir, `cluster-${side}`),
        cpuProf ? ['--cpu-prof', `--cpu-prof-dir=${ab ? join(profileDir, side) : profileDir}`] : [],
        [],
        insecure,
        side === 'off' ? ['--no-recording'] : [],
      );
      clusters.set(side, { cluster, traceDir, writes: [] });
      for (let i = 0; i < warmupCount; i++) await cluster.putAlone(`warm-${i}`, value);
    }
    // With both sides, blocks of writes alternate and the order flips each block, so a load swing hits both alike.
    const blocks = ab ? numberArg('blocks', 10) : 1;
    const perBlock = Math.ceil(writeCount / blocks);
    for (let block = 0; block < blocks; block++) {
      const order = block % 2 === 0 ? sides : [...sides].reverse();
      for (const side of order) {
        const { cluster, writes } = clusters.get(side)!;
        for (let i = 0; i < perBlock; i++) {
          const sentUs = monotonicUs();
          await cluster.putAlone(`k-${block}-${i}`, value);
          writes.push({ sentUs, answeredUs: monotonicUs() });
        }
      }
    }
  } finally {
    for (const { cluster } of clusters.values()) await cluster.stop();
  }
  const results = new Map<string, { analysis: Analysis; cpu: string }>();
  for (const [side, { cluster, traceDir, writes }] of clusters) {
    const traces = await readTraces(traceDir);
    const leader = traces.find((t) => t.name === cluster.leaderName);
    if (!leader) throw new Error(`no trace from the leader ${cluster.leaderName} in ${traceDir}`);
    const analysis = analyse(
      writes,
      leader,
      traces.filter((t) => t !== leader),
    );
    const cpu = [leader, ...traces.filter((t) => t !== leader)]
      .map((t) => `${t.name}${t === leader ? ' (leader)' : ''} ${cpuPerWrite(t, writes).toFixed(2)}`)
      .join(', ');
    results.set(side, { analysis, cpu });
  }
  const shown = clusters.get('on')!;
  console.log(
    `write timeline: ${shown.writes.length} sequential writes (one unary Propose each) to the leader, 3 nodes, ${insecure ? 'plaintext' : 'mutual TLS'}; medians in ms${ab ? '; recording on, off, on − off (blocks alternated)' : ''}`,
  );
  const width = Math.max(...PHASES.map((p) => p.length));
  const med = (side: string, phase: Phase): number => median(results.get(side)!.analysis.phases.get(phase)!);
  for (const phase of PHASES) {
    const cells = sides.map((side) => {
      const values = results.get(side)!.analysis.phases.get(phase)!;
      return `${(values.length === 0 ? '—' : median(values).toFixed(3)).padStart(7)} (n=${values.length})`;
    });
    if (ab) cells.push((med('on', phase) - med('off', phase)).toFixed(3).padStart(7));
    console.log(`  ${phase.padEnd(width)}  ${cells.join('  ')}`);
  }
  for (const side of sides) {
    const { analysis, cpu } = results.get(side)!;
    const { waitedOnLeaderSync, commits } = analysis;
    console.log(`  ${ab ? `[${side}] ` : ''}CPU ms per write: ${cpu}`);
    console.log(
      `  ${ab ? `[${side}] ` : ''}commits that waited on the leader's own fdatasync (a follower's frontier came first): ${commits === 0 ? '—' : `${Math.round((100 * waitedOnLeaderSync) / commits)}%`} of ${commits}`,
    );
  }
  if (cpuProf) for (const side of sides) await printProfiles(ab ? join(profileDir, side) : profileDir);
  if (process.argv.includes('--keep')) console.log(`traces kept in ${dir}`);
  else await rm(dir, { recursive: true, force: true });
}

/** PROFILE_TOP_COUNT functions are listed per node process under --cpu-prof. */
const PROFILE_TOP_COUNT = 12;

/** printProfiles: each node process's busy time by function, and the disk-usage walk's share of it. */
async function printProfiles(profileDir: string): Promise<void> {
  const walks = new Map(
    (await subtreeShares(profileDir, /transports\/node\/node-stats\.ts$/, 3)).map((s) => [s.file, s]),
  );
  for (const summary of await summarizeProfiles(profileDir, PROFILE_TOP_COUNT)) {
    const walk = walks.get(summary.file);
    console.log(
      `cpu profile pid ${summary.pid}: ${summary.totalMs.toFixed(0)} ms sampled, busy ${walk?.busyMs.toFixed(0) ?? '—'} ms, node-stats.ts ${walk ? (walk.share * 100).toFixed(2) : '—'}% of busy`,
    );
    for (const f of summary.byFunction) console.log(`  ${(f.share * 100).toFixed(1).padStart(5)}%  ${f.name}`);
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
