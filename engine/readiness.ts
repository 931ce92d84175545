// Readiness: the sticky readiness latch and what drives it — the spec's "Readiness rules" 1-6
// (docs/spec/replication-grpc.md), all here, every flip of the latch included. The engine feeds in
// what it hears (heartbeat frontiers, status polls, its own durable-and-matched frontier) and says
// when the node won leadership, was removed, halted or latched a reseed; Readiness decides and
// emits the flips.
import type { Effect, ReadinessReason } from './types.js';

type ReadinessEffect = Extract<Effect, { type: 'readiness' }>;

export class Readiness {
  private latched = false;
  /** lagGaugeByShard: per source shard, the monotonic high-water leader_last_seq seen (Readiness rules, 1). */
  readonly lagGaugeByShard = new Map<number, number>();
  /** lagRecord: lagGaugeByShard as status() hands it out, built once per change (null = stale). */
  private lagRecord: Record<number, number> | null = null;
  /** heartbeatLeaderLastSeq: the real leader frontier from this term's heartbeats, 0 = none (Readiness rules, 2). */
  private heartbeatLeaderLastSeq = 0;
  /** statusPollTarget: the leader frontier a status poll returned, 0 = none (Readiness rules, 3). */
  private statusPollTarget = 0;
  /** statusPollMode: the leader sends leader_last_seq = 0, so readiness goes through the status poll (Readiness rules, 3). */
  private statusPollMode = false;
  private statusPollElapsedTicks = 0;

  /**
   * @param emit takes each flip's effect
   * @param stopped tells whether the node is removed or halted for good: it never turns ready again
   */
  constructor(
    private readonly emit: (effect: ReadinessEffect) => void,
    private readonly stopped: () => boolean = () => false,
  ) {}

  /** ready: the latch (sticky: it drops only when the node is removed, halts or latches a reseed). */
  get ready(): boolean {
    return this.latched;
  }

  /** set flips the latch (one readiness effect per flip). */
  private set(ready: boolean, reason: ReadinessReason): void {
    if (this.latched === ready) return;
    this.latched = ready;
    this.emit({ type: 'readiness', ready, reason });
  }

  /** Readiness rules, 4: a node that wins leadership is ready (it holds every committed entry); true when it turned ready. */
  wonLeadership(): boolean {
    return this.converge('won-leadership');
  }

  /** Readiness rules, 6: a removed member answers 503 for good. */
  removed(): void {
    this.set(false, 'removed');
  }

  /** A receiver halted on an entry it cannot apply is not ready, for good. */
  halted(): void {
    this.set(false, 'halted');
  }

  /** A filtered member whose filter changed drops what it held and takes the log again: not ready until it has. */
  refilling(): void {
    this.set(false, 'refilling');
  }

  /** A node whose storage was found damaged is not ready until reinstalled (it converges again then). */
  reseedLatched(): void {
    this.set(false, 'reseed');
  }

  /**
   * tryConverge: Readiness rules, 2, 3 and 5 — `frontier` (our durable, matched one) against a real
   * leader frontier; true when the latch turned ready now.
   */
  tryConverge(frontier: number): boolean {
    if (this.latched) return false;
    const reason = this.convergence(frontier);
    return reason !== null && this.converge(reason);
  }

  /** converge turns the latch ready, never for a node removed or halted; a ready node polls no status. */
  private converge(reason: ReadinessReason): boolean {
    if (this.stopped()) return false;
    this.stopPolling();
    this.set(true, reason);
    return true;
  }

  /** Readiness rules, 1: the gauge folds leader_last_seq per shard and never goes down. */
  foldLagGauge(shard: number, leaderLastSeq: number): void {
    if (leaderLastSeq <= 0) return;
    const prev = this.lagGaugeByShard.get(shard) ?? 0;
    if (leaderLastSeq > prev) {
      this.lagGaugeByShard.set(shard, leaderLastSeq);
      this.lagRecord = null;
    }
  }

  /**
   * lagGauges: the gauges as a record in shard order, one frozen object until a gauge moves, so
   * status() copies no map per step and a watcher may compare two reads by identity.
   */
  lagGauges(): Record<number, number> {
    if (this.lagRecord !== null) return this.lagRecord;
    const lag: Record<number, number> = {};
    for (const [shard, v] of [...this.lagGaugeByShard.entries()].sort((a, b) => a[0] - b[0])) lag[shard] = v;
    this.lagRecord = Object.freeze(lag);
    return this.lagRecord;
  }

  gauge(shard: number): number {
    return this.lagGaugeByShard.get(shard) ?? 0;
  }

  /**
   * onHeartbeatFrontier: Readiness rules, 2 — only a real (non-zero) leader frontier drives the
   * latch; Readiness rules, 3 — a 0 (a leader from before the field) switches to the status poll.
   */
  onHeartbeatFrontier(leaderLastSeq: number): void {
    if (leaderLastSeq > 0) {
      this.heartbeatLeaderLastSeq = leaderLastSeq;
      this.statusPollMode = false;
    } else if (!this.ready) {
      this.statusPollMode = true;
    }
  }

  /** onStatusPolled: Readiness rules, 3 — the status poll's leader frontier; false when it is no frontier. */
  onStatusPolled(leaderLastSeq: number): boolean {
    if (leaderLastSeq <= 0) return false;
    this.statusPollTarget = leaderLastSeq;
    return true;
  }

  /** pollDue counts a follower tick; true when a status poll should go out now (Readiness rules, 3). */
  pollDue(intervalTicks: number): boolean {
    if (!this.statusPollMode || this.ready) return false;
    this.statusPollElapsedTicks++;
    if (this.statusPollElapsedTicks < intervalTicks) return false;
    this.statusPollElapsedTicks = 0;
    return true;
  }

  /** stopPolling: a leader (Readiness rules, 4) or a converged latch needs no status poll. */
  stopPolling(): void {
    this.statusPollMode = false;
  }

  /** forgetHeartbeatFrontier: a new term's leader has not said its frontier yet. */
  forgetHeartbeatFrontier(): void {
    this.heartbeatLeaderLastSeq = 0;
  }

  /** forgetFrontiers: a new term; neither the heartbeat's nor the poll's frontier is the new leader's. */
  forgetFrontiers(): void {
    this.heartbeatLeaderLastSeq = 0;
    this.statusPollTarget = 0;
  }

  /**
   * convergence: Readiness rules, 5 (honest convergence) — the latch converges only once our
   * durable, matched frontier reaches a real leader frontier; null while it has not.
   */
  convergence(frontier: number): ReadinessReason | null {
    if (this.heartbeatLeaderLastSeq > 0 && frontier >= this.heartbeatLeaderLastSeq)
      return 'caught-up-to-heartbeat-frontier';
    else if (this.statusPollTarget > 0 && frontier >= this.statusPollTarget) return 'caught-up-to-polled-status';
    return null;
  }
}
