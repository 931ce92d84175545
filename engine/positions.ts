// LogPositions: the seqnos that move along the log — commit, applied, durable, matched, reported,
// and a leader's term barrier — with the order between them asserted where they move (TigerBeetle's
// way: at the boundary, so a bad move throws at its cause, not a step later). The engine reads them
// here and moves them only through these methods; truncation, a reseed's wipe and a snapshot's
// install change the log and its positions together.
import { assert, assertFrontiers } from './assert.js';
import type { RaftLog } from './log.js';
import type { Entry } from './types.js';
import { isCarriableSeq } from './values.js';

export class LogPositions {
  /** durable: the last seq our own disk holds (entriesPersisted). */
  private durable: number;
  /** matched: the last seq known to match the leader's log (a leader: its own log end). */
  private matched: number;
  private commit: number;
  private applied: number;
  /**
   * reported: the frontier last sent to the leader in ReportApplied; -1 = none yet from an engine that restarted
   * holding entries past the commit seqno its hard state kept, so it reports once even a frontier that has not
   * moved (core.ts onHeartbeat: its leader may count it as told a commit its hard state did not keep), unless a
   * pull is in flight then, whose first chunk makes it report.
   */
  private reported: number;
  /** barrier: the seq of this leader's term-barrier entry (a commit of our term has happened once commit reaches it). */
  private barrier = 0;

  /** The restored positions: what recovery handed us, within the log it rebuilt. */
  constructor(
    private readonly log: RaftLog,
    restoredAppliedSeq: number,
    restoredCommitSeq: number,
  ) {
    this.durable = log.lastSeq();
    this.applied = Math.max(restoredAppliedSeq, log.baseSeq);
    this.commit = Math.max(this.applied, Math.min(restoredCommitSeq, log.lastSeq()));
    this.matched = this.commit;
    this.reported = log.lastSeq() > this.commit ? -1 : 0;
  }

  get commitSeq(): number {
    return this.commit;
  }
  get appliedSeq(): number {
    return this.applied;
  }
  get durableSeq(): number {
    return this.durable;
  }
  get matchedSeq(): number {
    return this.matched;
  }
  get reportedSeq(): number {
    return this.reported;
  }
  get barrierSeq(): number {
    return this.barrier;
  }

  /** reportable: the durable, matched frontier that applied_seqno means on the wire (decision 6). */
  reportable(): number {
    return Math.min(this.durable, this.matched);
  }

  /** termCommitted: an entry of the leader's own term (its barrier) is committed (Raft §6.4, Figure 8). */
  termCommitted(): boolean {
    return this.commit >= this.barrier;
  }

  /**
   * appendOwn is a leader's own append. A leader's log is the one to match, so its matched frontier
   * moves to the log end with every append, whatever the kind: its commit may pass its own sync on its
   * followers' durable frontiers, and a leader demoted in its own term (check-quorum) keeps that
   * frontier as a follower, where commit <= matched is asserted.
   */
  appendOwn(entries: readonly Entry[]): void {
    const last = entries[entries.length - 1]!.seq;
    assert(isCarriableSeq(last), () => `seqno ${last} is not carriable (values.ts)`);
    this.log.append(entries);
    this.matched = this.log.lastSeq();
  }

  /** startTerm: a new leader's term barrier goes next in the log, at `barrierSeq`. */
  startTerm(barrierSeq: number): void {
    assert(
      barrierSeq === this.log.lastSeq() + 1,
      () => `term barrier ${barrierSeq} does not follow the log end ${this.log.lastSeq()}`,
    );
    this.barrier = barrierSeq;
  }

  /** forgetMatch: a new term; only what is committed is known to match the next leader's log. */
  forgetMatch(): void {
    this.matched = this.commit;
  }

  /** matchThrough: the leader's log is known to hold ours through `seq` (a segment we took). */
  matchThrough(seq: number): void {
    assert(seq <= this.log.lastSeq(), () => `matched frontier ${seq} is beyond the log end ${this.log.lastSeq()}`);
    this.matched = Math.max(this.matched, seq);
  }

  /** matchLogEnd: a leader's own log end is its matched frontier. */
  matchLogEnd(): void {
    this.matched = this.log.lastSeq();
  }

  /** persisted: our disk holds the log through `seq`; false when it is not news or not our log. */
  persisted(seq: number, term: number): boolean {
    if (seq > this.log.lastSeq() || this.log.termAt(seq) !== term || seq <= this.durable) return false;
    this.durable = seq;
    return true;
  }

  /** commitTo raises the commit seqno; only within what is matched (a leader: its log end). */
  commitTo(seq: number): void {
    assert(seq > this.commit, () => `commit seqno ${seq} does not advance ${this.commit}`);
    assert(seq <= this.matched, () => `commit seqno ${seq} is above the matched frontier ${this.matched}`);
    this.commit = seq;
  }

  /** appliedThrough: entries through `seq` went to the state machine; only committed ones may. */
  appliedThrough(seq: number): void {
    assert(seq > this.applied, () => `applied seqno ${seq} does not advance ${this.applied}`);
    assert(seq <= this.commit, () => `applied seqno ${seq} is above the commit seqno ${this.commit}`);
    this.applied = seq;
  }

  /**
   * reportedSinceStart: false only on an engine that restarted with entries past its saved commit seqno and has
   * sent no ReportApplied since (a wipe, or a log that starts empty, has no commit to lose).
   */
  get reportedSinceStart(): boolean {
    return this.reported >= 0;
  }

  /** reportedThrough: `seq` went to the leader in ReportApplied. */
  reportedThrough(seq: number): void {
    this.reported = seq;
  }

  /** truncateFrom drops seq and after; never at or below the commit seqno (the caller checked; asserted). */
  truncateFrom(seq: number): void {
    assert(
      seq > this.commit,
      () => `truncating from ${seq} would drop committed entries (commit seqno ${this.commit})`,
    );
    this.log.truncateFrom(seq);
    this.durable = Math.min(this.durable, seq - 1);
    this.matched = Math.min(this.matched, seq - 1);
    this.reported = Math.min(this.reported, seq - 1);
  }

  /** wipe empties the log and every position (a reseed reinstalls everything from the leader). */
  wipe(): void {
    this.log.resetTo(0, 0);
    this.commit = 0;
    this.applied = 0;
    this.durable = 0;
    this.matched = 0;
    this.reported = 0;
  }

  /**
   * installSnapshot: the driver swapped the state machine to a snapshot at (seq, term); the log keeps
   * what follows it when it holds that very entry, else restarts empty on it. True when it restarted
   * (the driver's log must restart too).
   */
  installSnapshot(seq: number, term: number): boolean {
    const log = this.log;
    let restarted = false;
    if (log.termAt(seq) === term && seq <= log.lastSeq() && seq > log.baseSeq) {
      log.compactThrough(seq);
    } else if (seq !== log.baseSeq || term !== log.baseTerm || log.lastSeq() !== seq) {
      log.resetTo(seq, term);
      this.durable = seq;
      restarted = true;
    }
    this.applied = seq;
    this.commit = Math.max(seq, Math.min(this.commit, log.lastSeq()));
    this.matched = Math.max(seq, Math.min(this.matched, log.lastSeq()));
    this.durable = Math.max(this.durable, seq);
    return restarted;
  }

  /** assertOrdered: the order every step ends with (assert.ts); a leader's own log is the one to match. */
  assertOrdered(isLeader: boolean): void {
    assertFrontiers({
      appliedSeq: this.applied,
      commitSeq: this.commit,
      matchedSeq: isLeader ? this.log.lastSeq() : this.matched,
      durableSeq: this.durable,
      lastSeq: this.log.lastSeq(),
    });
  }
}
