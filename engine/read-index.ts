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
// two followers in a three-member cluster): a Heartbeat round trip is the dearest thing a read costs
// the leader (the node carries it as a message each way on an open call, transports/grpc/
// heartbeat-stream.ts, or as a unary call; the engine sees the same request and answer either way),
// and the answers of the others would confirm nothing more. The voters asked are
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
//
// The asker's ack. A follower's reads reach the leader as one readIndex input per forwarding request,
// naming the asker (ReadIndexAsker: the member its peer certificate names, and the term the request says
// it held when it sent it). Such an asker counts as one ack of those reads' confirmation round when it
// is a voter of the leader's current configuration (never a learner or filtered member: neither votes),
// not the leader itself, and its term equals the leader's. In a cluster of three voters the leader and
// the asker are a majority: a follower's read needs no heartbeat round at all; in five, one ack fewer.
// Why that is sound, in the terms of the round's own argument. A read begins at t0; its follower sends
// the request at s >= t0 holding term T_F; the leader of term T admits it at t1 >= s, having committed
// an entry of T, and takes index = its commit seqno at t1. Say a majority M of the voters each had, at
// some moment >= t0, granted no vote in any term > T. A write acknowledged before t0 was committed
// before t0 by a leader of some term U. If U <= T, the entry is in this leader's log (Leader
// Completeness) and at or below its commit seqno at t1: below its barrier for U < T, committed by
// itself before t1 for U = T. If U > T, the leader of U was elected before t0 by a majority granting
// votes in U; it meets M (one-at-a-time configuration changes keep any two majorities intersecting, as
// for the round), and the common voter granted a vote in U > T before t0 yet at a moment >= t0 had
// granted none above T — impossible, votes being durable. So index covers the write. Who is in M:
//   - the leader: at t1 >= t0 its term is T, and a member grants votes only in a term it has adopted,
//     terms never going down;
//   - each voter that accepted a heartbeat of term T in a round started after t1 (its term was T then);
//   - the asker, at s >= t0: its term was T_F = T, so it had granted no vote in a term above T.
// Hence the conditions, each a test's mutation (test/sim/reads.test.ts, bench/mutation-list.ts):
//   - a term above the leader's does not count: the asker may have voted, before t0, for the leader of
//     a newer term that committed and acknowledged a write (and this leader, cut off, not yet deposed);
//     the read falls back to the round, which such a voter refuses (it stepped past this term), so the
//     leader steps down when it hears it. (svc.store.v1 is not the spec's replication service: its
//     requests carry no term the spec's term rule applies to, so the leader does not step down on one.)
//   - a term below the leader's does not count either. That asker granted no vote above T_F < T, so the
//     argument would hold; it is refused to keep the rule to one comparison (an asker behind the
//     leader's term is rare: it names this leader from a hint of an older term) and its reads take the round.
//   - only the asker's own reads, which began before its request was sent: a read that began after s is
//     not covered (the asker may have voted in a newer term between s and its t0). So the ack never
//     raises the asker's ackedRound, which would confirm other reads waiting on the same round.
//   - the asker is the certificate's member and a voter: a learner or a name in a request field would
//     stand for no vote at all.
import { majority, quorumValue } from './quorum.js';
import type { Effect, EngineLimits, ReadIndexAsker, ReadIndexRefusal } from './types.js';

/** ReadIndexHost is what the read index needs from the engine around it. */
export interface ReadIndexHost {
  isLeader(): boolean;
  selfId(): number;
  /** term: the engine's current term (the leader's, while it leads). */
  term(): number;
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
  /** ackFrom: the asker whose request counts as its ack of `round` for this read only (0 = none; file comment). */
  ackFrom: number;
}

/** PostponedRead arrived before the leader committed an entry of its term; its asker is judged at admission. */
interface PostponedRead {
  readId: number;
  asker: ReadIndexAsker | undefined;
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
  private postponed: PostponedRead[] = [];
  private leaseUntilTick = -1;
  private leaseBlocked = false;

  constructor(
    private readonly limits: EngineLimits,
    private readonly host: ReadIndexHost,
  ) {}

  get pendingCount(): number {
    return this.waiting.length + this.postponed.length;
  }

  /** onRequest: a readIndex input; asker: the member that forwarded it, if any (file comment, "The asker's ack"). */
  onRequest(readId: number, asker?: ReadIndexAsker): void {
    if (!this.host.isLeader()) return this.refuse(readId, 'not-leader');
    if (this.pendingCount >= this.limits.readIndexPendingCountMax) return this.refuse(readId, 'queue-full');
    if (!this.host.termCommitted()) {
      this.postponed.push({ readId, asker });
      return;
    }
    this.admit(readId, asker);
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
    for (const r of released) this.admit(r.readId, r.asker);
  }

  /** onTransferStarted: a TimeoutNow went out; voters' leases no longer protect this term. */
  onTransferStarted(): void {
    this.leaseBlocked = true;
    this.leaseUntilTick = -1;
  }

  /** abandon: leadership is lost; every pending read fails (the caller may retry at the new leader). */
  abandon(): void {
    const failed = [...this.postponed.map((r) => r.readId), ...this.waiting.map((w) => w.readId)];
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

  private admit(readId: number, asker: ReadIndexAsker | undefined): void {
    const index = this.host.commitSeq();
    const voters = this.host.voterIds();
    const alone = voters.length === 1 && voters[0] === this.host.selfId();
    if (alone || this.leaseHolds()) {
      this.answer(readId, index);
      return;
    }
    const read: WaitingRead = { readId, index, round: this.sentRound + 1, ackFrom: this.askerAck(asker) };
    if (read.ackFrom !== 0 && this.confirmedFor(read)) {
      this.answer(readId, index); // the leader and its asker are a majority (three voters): no round
      return;
    }
    this.waiting.push(read);
    // Start a round now unless one is in flight; the reads that arrive meanwhile share the next.
    if (this.confirmedRound >= this.sentRound) this.startReadRound();
  }

  /** askerAck: the asker's id when its request counts as an ack of its reads' round (file comment), else 0. */
  private askerAck(asker: ReadIndexAsker | undefined): number {
    if (asker === undefined || asker.term !== this.host.term() || asker.id === this.host.selfId()) return 0;
    return this.host.voterIds().includes(asker.id) ? asker.id : 0;
  }

  /**
   * confirmedFor: a majority of the voters accepted the read's round, its asker counting for this read alone
   * (and only while it is still a voter: the configuration may have changed since it was admitted).
   */
  private confirmedFor(w: WaitingRead): boolean {
    if (w.round <= this.confirmedRound) return true;
    if (w.ackFrom === 0) return false;
    const self = this.host.selfId();
    const voters = this.host.voterIds();
    if (!voters.includes(w.ackFrom)) return false;
    const acked = quorumValue(voters, (id) =>
      id === self || id === w.ackFrom ? this.sentRound + 1 : (this.ackedRound.get(id) ?? 0),
    );
    return acked >= w.round;
  }

  private advance(): void {
    const confirmed = this.quorumRound();
    const rose = confirmed > this.confirmedRound;
    if (rose) {
      this.confirmedRound = confirmed;
      if (readLeaseTicks(this.limits) > 0 && !this.leaseBlocked) {
        this.leaseUntilTick = (this.roundSentTick.get(confirmed) ?? -1) + readLeaseTicks(this.limits);
      }
      for (const r of [...this.roundSentTick.keys()]) if (r <= confirmed) this.roundSentTick.delete(r);
    }
    if (this.waiting.length === 0) return;
    // Reads with an asker's ack may be confirmed before the round is (one ack fewer), so out of queue order.
    const ready: WaitingRead[] = [];
    const still: WaitingRead[] = [];
    for (const w of this.waiting) (this.confirmedFor(w) ? ready : still).push(w);
    if (ready.length === 0 && !rose) return;
    this.waiting = still;
    for (const w of ready) this.answer(w.readId, w.index);
    // Reads left waiting for a round after the one just confirmed get theirs now; so do they when the round in
    // flight was its asker's reads' alone and has served them (it asked one voter fewer than a majority needs, so
    // it may never confirm for the others: they would wait for the next periodic heartbeat).
    const askersServed = ready.some((w) => w.round > this.confirmedRound);
    const roundFree =
      this.confirmedRound >= this.sentRound || (askersServed && still.every((w) => w.round > this.sentRound));
    if (this.waiting.length > 0 && roundFree) this.startReadRound();
  }

  /** startReadRound sends a round to the voters a majority needs besides this leader (see the file comment). */
  private startReadRound(): void {
    this.host.broadcastHeartbeat(this.readRoundTargets(this.roundAsker()));
  }

  /**
   * roundAsker: the one asker whose ack every read of the next round carries (0 if any read has none, or another):
   * then that round needs one ack fewer, and not the asker's.
   */
  private roundAsker(): number {
    const next = this.sentRound + 1;
    let asker = -1;
    for (const w of this.waiting) {
      if (w.round !== next) continue;
      if (asker === -1) asker = w.ackFrom;
      else if (w.ackFrom !== asker) return 0;
    }
    return Math.max(asker, 0);
  }

  /**
   * readRoundTargets: the fewest other voters that make a majority with this leader (and with `asker`, a voter
   * whose ack the round's reads carry, if any), the most responsive first.
   */
  readRoundTargets(asker = 0): number[] {
    const self = this.host.selfId();
    const voters = this.host.voterIds();
    const counted = asker !== 0 && asker !== self && voters.includes(asker) ? asker : 0;
    const others = voters.filter((id) => id !== self && id !== counted);
    const needed = majority(voters.length) - (voters.includes(self) ? 1 : 0) - (counted !== 0 ? 1 : 0);
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
