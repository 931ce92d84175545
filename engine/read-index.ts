// ReadIndex: linearizable reads without writing to the log (Raft dissertation §6.4; etcd's
// read_only.go is the model). A read asks the leader for a read index: the commit seqno when the
// read arrived, handed back only once
//   1. the leader has committed an entry of its own term (its barrier), so that commit seqno covers
//      every write any earlier leader acknowledged — a read arriving before that waits for it; and
//   2. a heartbeat round started after the read arrived was accepted by a majority of the voters,
//      so no other leader of a newer term existed when those voters answered.
// A driver then serves the read from its state machine once it has applied up to the index; a
// follower asks the leader for the index and waits for its own apply (see docs/protocol.md).
//
// Heartbeats carry no field a round number could ride in (HeartbeatRequest is the spec's), so a
// round is the engine's own: every heartbeat broadcast is one round, remembered in the call context
// of each Heartbeat call, and an accepted answer to that call is a voter's ack of the round. Reads
// arriving together share one round; while a round is in flight, later reads wait for the next,
// which starts as soon as the one in flight is confirmed (or at the next periodic heartbeat when an
// answer was lost), so at most one extra round is in flight however many reads arrive.
//
// A round the reads start goes only to as many voters as a majority needs besides the leader (one of
// two followers in a three-member cluster): a Heartbeat is a unary call, the dearest thing a read
// costs the leader, and the answers of the others would confirm nothing more. The voters asked are
// those that acked the newest round, the first to ack it first (so the quickest follower of the last
// periodic heartbeat, which goes to every member and re-ranks them). A voter that stops answering
// leaves the reads waiting at most until the next periodic heartbeat (heartbeatIntervalTicks): that
// round goes to every member, its quorum confirms every read of an earlier round, and the silent
// voter's acks then rank it last.
//
// The lease fast path (limits.readLeaseEnabled, off by default) answers without a round while a
// round confirmed at most readLeaseTicks() ago holds. It rests on voters refusing non-transfer votes
// for an election timeout after a heartbeat (the check-quorum lease) and is safe only if clocks run
// within clockDriftPercentMax of nominal, no process pauses (SIGSTOP, GC, swapping) longer than
// the slack, and no voter restarts during the lease (a restarted voter has forgotten its lease and
// votes at once). A leadership transfer skips the voters' lease, so any TimeoutNow sent in a term
// ends lease reads for the rest of that term.
import { majority, quorumValue } from './quorum.js';
import type { Effect, EngineLimits, ReadIndexRefusal } from './types.js';

/** ReadIndexHost is what the read index needs from the engine around it. */
export interface ReadIndexHost {
  isLeader(): boolean;
  selfId(): number;
  /** voterIds of the current configuration (the leader's newest roster). */
  voterIds(): readonly number[];
  commitSeq(): number;
  /** termCommitted: the leader has committed an entry of its current term (its barrier). */
  termCommitted(): boolean;
  /** leaderHint: the known leader's gRPC address, '' when none. */
  leaderHint(): string;
  ticks(): number;
  /** broadcastHeartbeat sends one heartbeat round now (it calls startRound): to toIds, or to every member when omitted. */
  broadcastHeartbeat(toIds?: readonly number[]): void;
  emit(effect: Extract<Effect, { type: 'readIndexResult' }>): void;
}

interface WaitingRead {
  readId: number;
  index: number;
  /** round: the first heartbeat round that started after the read arrived. */
  round: number;
}

/** readLeaseTicks: how long a confirmed round vouches for reads; 0 = no lease (see the file comment). */
export function readLeaseTicks(limits: EngineLimits): number {
  if (limits.readLeaseEnabled !== 1) return 0;
  const drift = Math.min(Math.max(limits.clockDriftPercentMax, 0), 50) / 100;
  // A voter refuses votes for electionTimeoutTicks of its own ticks after a heartbeat, the first of
  // which may follow at once: (electionTimeoutTicks - 1) periods of its clock at least. The leader's
  // ticks may run fast and the voter's slow by up to the drift bound.
  return Math.max(0, Math.floor(((limits.electionTimeoutTicks - 1) * (1 - drift)) / (1 + drift)));
}

export class ReadIndex {
  /** sentRound: the newest heartbeat round broadcast (rounds only grow, across terms too). */
  private sentRound = 0;
  /** confirmedRound: the newest round a majority of voters accepted in this leadership. */
  private confirmedRound = 0;
  private readonly ackedRound = new Map<number, number>();
  /** ackOrder: when (in acks received) each voter's ackedRound last rose, to rank equal rounds. */
  private readonly ackOrder = new Map<number, number>();
  private ackCount = 0;
  private readonly roundSentTick = new Map<number, number>();
  /** waiting reads, oldest first; their rounds never decrease along the queue. */
  private waiting: WaitingRead[] = [];
  /** postponed reads arrived before the leader committed an entry of its term. */
  private postponed: number[] = [];
  private leaseUntilTick = -1;
  private leaseBlocked = false;

  constructor(
    private readonly limits: EngineLimits,
    private readonly host: ReadIndexHost,
  ) {}

  get pendingCount(): number {
    return this.waiting.length + this.postponed.length;
  }

  /** onRequest: a readIndex input. */
  onRequest(readId: number): void {
    if (!this.host.isLeader()) return this.refuse(readId, 'not-leader');
    if (this.pendingCount >= this.limits.readIndexPendingCountMax) return this.refuse(readId, 'queue-full');
    if (!this.host.termCommitted()) {
      this.postponed.push(readId);
      return;
    }
    this.admit(readId);
  }

  /** onBecomeLeader: a new leadership starts with no acks and no lease. */
  onBecomeLeader(): void {
    this.ackedRound.clear();
    this.ackOrder.clear();
    this.roundSentTick.clear();
    this.confirmedRound = this.sentRound;
    this.leaseUntilTick = -1;
    this.leaseBlocked = false;
  }

  /** onCommit: the commit seqno moved; reads waiting for the leader's first commit of its term go on. */
  onCommit(): void {
    if (this.postponed.length === 0 || !this.host.termCommitted()) return;
    const released = this.postponed;
    this.postponed = [];
    for (const readId of released) this.admit(readId);
  }

  /** onTransferStarted: a TimeoutNow went out; voters' leases no longer protect this term. */
  onTransferStarted(): void {
    this.leaseBlocked = true;
    this.leaseUntilTick = -1;
  }

  /** abandon: leadership is lost; every pending read fails (the caller may retry at the new leader). */
  abandon(): void {
    const failed = [...this.postponed, ...this.waiting.map((w) => w.readId)];
    this.postponed = [];
    this.waiting = [];
    this.leaseUntilTick = -1;
    for (const readId of failed) this.refuse(readId, 'stepped-down');
  }

  /** startRound numbers a heartbeat broadcast; the engine keeps the number in each call's context. */
  startRound(): number {
    this.sentRound++;
    if (readLeaseTicks(this.limits) > 0) this.roundSentTick.set(this.sentRound, this.host.ticks());
    return this.sentRound;
  }

  /** onAck: voter `fromId` accepted the heartbeat of `round` at the leader's current term. */
  onAck(fromId: number, round: number): void {
    if (!this.host.isLeader()) return;
    if ((this.ackedRound.get(fromId) ?? 0) < round) {
      this.ackedRound.set(fromId, round);
      this.ackOrder.set(fromId, ++this.ackCount);
    }
    this.advance();
  }

  private admit(readId: number): void {
    const index = this.host.commitSeq();
    const voters = this.host.voterIds();
    const alone = voters.length === 1 && voters[0] === this.host.selfId();
    if (alone || this.leaseHolds()) {
      this.answer(readId, index);
      return;
    }
    this.waiting.push({ readId, index, round: this.sentRound + 1 });
    // Start a round now unless one is in flight; the reads that arrive meanwhile share the next.
    if (this.confirmedRound >= this.sentRound) this.startReadRound();
  }

  private advance(): void {
    const confirmed = this.quorumRound();
    if (confirmed <= this.confirmedRound) return;
    this.confirmedRound = confirmed;
    if (readLeaseTicks(this.limits) > 0 && !this.leaseBlocked) {
      this.leaseUntilTick = (this.roundSentTick.get(confirmed) ?? -1) + readLeaseTicks(this.limits);
    }
    for (const r of [...this.roundSentTick.keys()]) if (r <= confirmed) this.roundSentTick.delete(r);
    let served = 0;
    while (served < this.waiting.length && this.waiting[served]!.round <= confirmed) served++;
    const ready = this.waiting.slice(0, served);
    this.waiting = this.waiting.slice(served);
    for (const w of ready) this.answer(w.readId, w.index);
    if (this.waiting.length > 0 && this.confirmedRound >= this.sentRound) this.startReadRound();
  }

  /** startReadRound sends a round to the voters a majority needs besides this leader (see the file comment). */
  private startReadRound(): void {
    this.host.broadcastHeartbeat(this.readRoundTargets());
  }

  /** readRoundTargets: the fewest other voters that make a majority with this leader, the most responsive first. */
  readRoundTargets(): number[] {
    const self = this.host.selfId();
    const voters = this.host.voterIds();
    const others = voters.filter((id) => id !== self);
    const needed = majority(voters.length) - (others.length < voters.length ? 1 : 0);
    const rank = (id: number): [number, number] => [
      this.ackedRound.get(id) ?? 0,
      this.ackOrder.get(id) ?? Number.MAX_SAFE_INTEGER,
    ];
    return others
      .map((id) => ({ id, rank: rank(id) }))
      .sort((a, b) => b.rank[0] - a.rank[0] || a.rank[1] - b.rank[1] || a.id - b.id)
      .slice(0, needed)
      .map((o) => o.id);
  }

  /** quorumRound: the newest round a majority of the voters (the leader counting itself) accepted. */
  private quorumRound(): number {
    const self = this.host.selfId();
    return quorumValue(this.host.voterIds(), (id) => (id === self ? this.sentRound : (this.ackedRound.get(id) ?? 0)));
  }

  private leaseHolds(): boolean {
    return !this.leaseBlocked && this.host.ticks() < this.leaseUntilTick;
  }

  private answer(readId: number, index: number): void {
    this.host.emit({ type: 'readIndexResult', readId, index, refusal: null, leaderHint: '' });
  }

  private refuse(readId: number, refusal: ReadIndexRefusal): void {
    this.host.emit({ type: 'readIndexResult', readId, index: 0, refusal, leaderHint: this.host.leaderHint() });
  }
}
