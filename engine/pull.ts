// FollowerPull: a follower's one pull from its leader at a time — a StreamSegments stream, or a
// FetchSnapshot when the stream says the leader's log no longer holds what we miss — and the rules
// for starting one, hearing its chunks, and giving it up. Engine sends the calls and applies the
// segments; this holds what is in flight and decides.
import type { ShipSegmentRequest } from './rpc.js';
import { decodeSegmentFrame, type SegmentFrame } from './segment-frame.js';
import { requestValueProblem } from './values.js';

export type PullKind = 'stream' | 'snapshot';

/**
 * ChunkReading is what a stream chunk is to the follower: invalid (a value without room, values.ts:
 * the stream is given up), foreign (not from our leader in our term: ignored), undecodable (the
 * frame is corrupt: the stream is given up) or a frame to receive.
 */
export type ChunkReading =
  | { verdict: 'invalid'; problem: string }
  | { verdict: 'foreign' }
  | { verdict: 'undecodable' }
  | { verdict: 'frame'; frame: SegmentFrame };

/** readChunk judges one stream chunk against our term and the leader we follow. */
export function readChunk(chunk: ShipSegmentRequest, term: number, leaderId: number): ChunkReading {
  const problem = requestValueProblem({ method: 'ShipSegment', body: chunk });
  if (problem) return { verdict: 'invalid', problem };
  if (chunk.term !== term || chunk.leaderRegion !== leaderId) return { verdict: 'foreign' };
  const decoded = decodeSegmentFrame(chunk.payload);
  return decoded.ok ? { verdict: 'frame', frame: decoded.frame } : { verdict: 'undecodable' };
}

export class FollowerPull {
  private current: { requestId: number; kind: PullKind; startedTick: number } | null = null;
  /** lastAcceptTick: when a segment from the leader (shipped or streamed) was last accepted. */
  private lastAcceptTick = 0;
  /** lastStreamTick: when our last StreamSegments pull started (-Infinity: never). */
  private lastStreamTick = Number.NEGATIVE_INFINITY;
  /** lastFetchTick: when our last FetchSnapshot started (-Infinity: never). */
  private lastFetchTick = Number.NEGATIVE_INFINITY;
  /** frontier: the furthest log end our leader told us of, in its term (a new term or leader starts again from 0). */
  private frontier = { term: 0, leaderId: 0, seq: 0 };

  /**
   * heardFrontier: leader `leaderId` said at `term` that its log reaches `seq` (a heartbeat's
   * leader_last_seq or stream_baseline, a segment's end). A leader's log only grows in its term.
   */
  heardFrontier(term: number, leaderId: number, seq: number): void {
    if (this.frontier.term !== term || this.frontier.leaderId !== leaderId) this.frontier = { term, leaderId, seq: 0 };
    if (seq > this.frontier.seq) this.frontier.seq = seq;
  }

  /**
   * target: what a pull from `leaderId` at `term` must reach, 0 = nothing known: its frontier in that
   * term only. Never an earlier term's (the lag gauge keeps those, Readiness rules, 1): a node that leads
   * again after its uncommitted tail was truncated holds less, and a target it never reaches again would
   * have its followers open and end streams forever.
   */
  target(term: number, leaderId: number): number {
    return this.frontier.term === term && this.frontier.leaderId === leaderId ? this.frontier.seq : 0;
  }

  /** active: a pull is in flight. */
  get active(): boolean {
    return this.current !== null;
  }

  /** isFor: `requestId` is the pull in flight (an answer to an abandoned pull is ignored). */
  isFor(requestId: number): boolean {
    return this.current?.requestId === requestId;
  }

  started(requestId: number, kind: PullKind, tick: number): void {
    this.current = { requestId, kind, startedTick: tick };
    if (kind === 'stream') this.lastStreamTick = tick;
    else this.lastFetchTick = tick;
  }

  /** wiped: our log was dropped; a fetch made for what it held no longer paces the next one. */
  wiped(): void {
    this.current = null;
    this.lastFetchTick = Number.NEGATIVE_INFINITY;
  }

  /** fetchDue: our last snapshot fetch started at least `quietTicks` ago (a filtered member's rate of asking). */
  fetchDue(tick: number, quietTicks: number): boolean {
    return tick - this.lastFetchTick >= quietTicks;
  }

  /**
   * streamDue: a caught-up follower may open a stream to stay on (live streams) — none in flight, and the last
   * stream started at least `quietTicks` ago, so a leader that ends each stream after its burst (an older
   * one, or one that keeps ours only while it is caught up) is asked at most once per `quietTicks`.
   */
  streamDue(tick: number, quietTicks: number): boolean {
    return !this.current && tick - this.lastStreamTick >= quietTicks;
  }

  /** stop gives the pull up (ended, failed, refused, or no longer ours to make); a new one may start. */
  stop(): void {
    this.current = null;
  }

  /** progressed: a chunk from our leader arrived, so the pull is alive at `tick`. */
  progressed(tick: number): void {
    if (this.current) this.current.startedTick = tick;
  }

  /** expire gives up a pull silent for more than `timeoutTicks` (the stream or the fetch hung). */
  expire(tick: number, timeoutTicks: number): void {
    if (this.current && tick - this.current.startedTick > timeoutTicks) this.current = null;
  }

  /** accepted: a segment from the leader was accepted at `tick`. */
  accepted(tick: number): void {
    this.lastAcceptTick = tick;
  }

  /**
   * due: a follower found behind should pull now — none in flight, and either `urgent` (a reseed
   * reinstalls by pulling) or no segment accepted for more than `quietTicks` (shipping stalled).
   */
  due(tick: number, quietTicks: number, urgent: boolean): boolean {
    return !this.current && (urgent || tick - this.lastAcceptTick > quietTicks);
  }
}
