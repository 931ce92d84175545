// The write timeline as a tool: opt-in stamps of where one write's time goes (docs/operations.md, "Where a
// single write's time goes"), published on a node:diagnostics_channel. Off (nobody subscribed) a stamp costs
// one boolean check, so the stamps stay in the code; bench/write-timeline.ts turns them on in every node of a
// cluster (SVC_WRITE_TRACE_DIR, read by `svc node`) and prints the median of each phase.
//
// A stamp is the phase, the log seqno it is about (0 when it has none yet) and the time on the machine's
// monotonic clock (process.hrtime: CLOCK_MONOTONIC on Linux, shared by every process of the machine), so the
// stamps of a client and three node processes line up on one time axis.
import { channel } from 'node:diagnostics_channel';
import { appendFileSync } from 'node:fs';

/** WRITE_TRACE_CHANNEL is the diagnostics channel the stamps are published on. */
export const WRITE_TRACE_CHANNEL = 'svc:write-trace';
/** WRITE_TRACE_FLUSH_MS is how often a recorder appends its buffered stamps to its file. */
export const WRITE_TRACE_FLUSH_MS = 250;

/** WritePhase names a point on a write's path, in path order; `peer` says which member a stamp concerns. */
export type WritePhase =
  | 'propose.received' // the leader's Store handler has a client's (or a follower's forwarded) command
  | 'append' // a node's engine step handed entries through `seq` to its WAL
  | 'wal.round' // the WAL started the write round holding `seq`
  | 'wal.synced' // that round's fdatasync returned
  | 'ship.sent' // the leader handed a ShipSegment ending at `seq` to the peer pool (`peer`: its address), or a
  //               live-stream chunk to the follower's StreamSegments call (`peer`: the follower's name)
  | 'ship.received' // a follower's server decoded that ShipSegment, or its client that chunk (before the engine's step)
  | 'ship.acked' // the leader has a ShipSegment answer whose applied_seqno is `seq`
  | 'persisted.stepped' // a node's engine stepped entriesPersisted through `seq`
  | 'report.sent' // a follower handed ReportApplied(applied_seqno `seq`) to the peer pool
  | 'report.received' // the leader's server decoded a ReportApplied (before the engine's step)
  | 'apply' // a node applied entries through `seq` to its state machine
  | 'propose.answered' // the leader's Store handler has the outcome of the command at `seq`
  | 'answer.given' // a lean-served call's handler gave its answer to node:http2 (`peer`: the call's path)
  | 'answer.flushed' // node:http2 is writing a lean-served call's headers and message (`peer`: the call's path)
  | 'answer.closed' // its stream closed (`peer`: the path): a few ticks after node:http2 flushed its trailers
  | 'answer.written' // a lean connection's call handed its whole answer to the socket in one write (`peer`: the path)
  // A read's path (bench/read-timeline.ts; seq 0 on each: a read names no seqno until it is answered):
  | 'read.received' // a node's Store handler has a client's unary Get
  | 'readindex.stepped' // a node's engine stepped a readIndex input
  | 'heartbeat.sent' // the leader handed a Heartbeat to the peer pool (`peer`: its address)
  | 'heartbeat.received' // a follower's server decoded a Heartbeat (before the engine's step)
  | 'heartbeat.answered' // a follower handed its Heartbeat answer to the served call
  | 'heartbeat.acked' // the leader's client decoded a Heartbeat answer (`peer`: its address)
  | 'heartbeat.stepped' // the leader's engine stepped that answer
  | 'readindex.answered' // a node's engine answered a readIndex input (`seq`: the index)
  | 'read.answered'; // the Store handler has the Get's value

export interface WriteStamp {
  /** phase is a WritePhase, or 'cpu' on the recorder's own lines (cpuUs: the process's CPU time so far). */
  phase: WritePhase | 'cpu';
  cpuUs?: number;
  seq: number;
  /** atUs is microseconds on the monotonic clock. */
  atUs: number;
  peer?: string;
}

const stamps = channel(WRITE_TRACE_CHANNEL);

/** tracing says whether anyone listens: a caller with work to do before stamping (a seqno to compute) asks first. */
export function tracing(): boolean {
  return stamps.hasSubscribers;
}

/** stamp publishes one stamp when someone listens; otherwise it returns at the first check. */
export function stamp(phase: WritePhase, seq: number, peer?: string): void {
  if (!stamps.hasSubscribers) return;
  const at: WriteStamp = { phase, seq, atUs: monotonicUs() };
  if (peer !== undefined) at.peer = peer;
  stamps.publish(at);
}

/** monotonicUs is the machine's monotonic clock in microseconds (exact in a double for centuries). */
export function monotonicUs(): number {
  return Number(process.hrtime.bigint() / 1000n);
}

/**
 * recordWriteTrace subscribes and appends every stamp as a JSON line to `file` (a first line names the node),
 * buffered and written every WRITE_TRACE_FLUSH_MS and at stop, each batch ending with a 'cpu' line (the
 * process's CPU time then). It returns stop.
 */
export function recordWriteTrace(file: string, node: { name: string; grpcAddr: () => string }): () => void {
  let lines: string[] = [];
  let headed = false;
  const flush = (): void => {
    if (!headed) {
      lines.unshift(JSON.stringify({ node: node.name, grpcAddr: node.grpcAddr() }));
      headed = true;
    }
    // The process's CPU time so far, so a reader can divide the CPU a span of writes took by their count.
    const cpu = process.cpuUsage();
    lines.push(JSON.stringify({ phase: 'cpu', seq: 0, atUs: monotonicUs(), cpuUs: cpu.user + cpu.system }));
    appendFileSync(file, `${lines.join('\n')}\n`);
    lines = [];
  };
  const onStamp = (message: unknown): void => {
    lines.push(JSON.stringify(message));
  };
  stamps.subscribe(onStamp);
  const timer = setInterval(() => {
    if (node.grpcAddr() !== '') flush();
  }, WRITE_TRACE_FLUSH_MS);
  timer.unref();
  let stopped = false;
  return () => {
    if (stopped) return;
    stopped = true;
    clearInterval(timer);
    stamps.unsubscribe(onStamp);
    flush();
  };
}
