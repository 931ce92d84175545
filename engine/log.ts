// RaftLog: the in-memory log after the compaction point. Entries are numbered
// by one global seqno; `baseSeq`/`baseTerm` name the last compacted entry, so
// the log-matching check still works right after a snapshot or compaction.
import { assert } from './assert.js';
import { EntryKind, type Entry } from './types.js';

export class RaftLog {
  private list: Entry[];
  /** membershipSeqs lists, ascending, the seqs of the kind-4 records in the log: roster look-ups stay O(log n). */
  private membershipSeqs: number[] = [];
  baseSeq: number;
  baseTerm: number;

  constructor(baseSeq: number, baseTerm: number, entries: readonly Entry[]) {
    this.baseSeq = baseSeq;
    this.baseTerm = baseTerm;
    this.list = [];
    for (const e of entries) {
      if (e.seq !== this.lastSeq() + 1) break; // recovery hands us a contiguous run; anything else is cut
      this.list.push(e);
      if (e.kind === EntryKind.Membership) this.membershipSeqs.push(e.seq);
    }
  }

  lastSeq(): number {
    return this.baseSeq + this.list.length;
  }

  lastTerm(): number {
    return this.list.length > 0 ? this.list[this.list.length - 1]!.term : this.baseTerm;
  }

  /** termAt returns the term at seq, or undefined when seq is compacted away or beyond the end. */
  termAt(seq: number): number | undefined {
    if (seq === this.baseSeq) return this.baseTerm;
    if (seq === 0) return 0;
    const entry = this.entryAt(seq);
    return entry?.term;
  }

  entryAt(seq: number): Entry | undefined {
    if (seq <= this.baseSeq) return undefined;
    return this.list[seq - this.baseSeq - 1];
  }

  /** slice returns entries [from, to] bounded by count and payload bytes (always at least one when any). */
  slice(from: number, to: number, countMax: number, bytesMax: number): Entry[] {
    const out: Entry[] = [];
    let bytes = 0;
    for (
      let seq = Math.max(from, this.baseSeq + 1);
      seq <= Math.min(to, this.lastSeq()) && out.length < countMax;
      seq++
    ) {
      const e = this.list[seq - this.baseSeq - 1]!;
      bytes += e.data.length + 32;
      if (out.length > 0 && bytes > bytesMax) break;
      out.push(e);
    }
    return out;
  }

  /** truncateFrom drops seq and everything after it. */
  truncateFrom(seq: number): void {
    this.membershipSeqs = this.membershipSeqs.filter((s) => s < seq);
    if (seq <= this.baseSeq) {
      this.list = [];
      return;
    }
    this.list.length = Math.min(this.list.length, seq - this.baseSeq - 1);
  }

  append(entries: readonly Entry[]): void {
    for (const e of entries) {
      assert(e.seq === this.lastSeq() + 1, () => `log append out of order: ${e.seq} after ${this.lastSeq()}`);
      this.list.push(e);
      if (e.kind === EntryKind.Membership) this.membershipSeqs.push(e.seq);
    }
  }

  /** compactThrough drops entries up to and including seq (which must be in the log). */
  compactThrough(seq: number): void {
    if (seq <= this.baseSeq) return;
    const term = this.termAt(seq);
    assert(term !== undefined, () => `compact beyond log end: ${seq} > ${this.lastSeq()}`);
    this.list = this.list.slice(seq - this.baseSeq);
    this.membershipSeqs = this.membershipSeqs.filter((s) => s > seq);
    this.baseSeq = seq;
    this.baseTerm = term;
  }

  /** resetTo empties the log onto a new base (a snapshot install or a reseed). */
  resetTo(seq: number, term: number): void {
    this.list = [];
    this.membershipSeqs = [];
    this.baseSeq = seq;
    this.baseTerm = term;
  }

  /** lastMembershipAtOrBefore returns the newest kind-4 record with seq <= the given one still in the log. */
  lastMembershipAtOrBefore(seq: number): Entry | undefined {
    const seqs = this.membershipSeqs;
    let lo = 0;
    let hi = seqs.length - 1;
    let found = -1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if (seqs[mid]! <= seq) {
        found = mid;
        lo = mid + 1;
      } else {
        hi = mid - 1;
      }
    }
    return found < 0 ? undefined : this.entryAt(seqs[found]!);
  }

  /** lastSeqBelowTerm: the newest seq whose entry's term is below `term` (terms never decrease along a log), or baseSeq. */
  lastSeqBelowTerm(term: number): number {
    let lo = 0;
    let hi = this.list.length - 1;
    let found = -1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if (this.list[mid]!.term < term) {
        found = mid;
        lo = mid + 1;
      } else {
        hi = mid - 1;
      }
    }
    return found < 0 ? this.baseSeq : this.baseSeq + 1 + found;
  }

  /** hasMembershipAfter tells whether a kind-4 record with seq > the given one is in the log. */
  hasMembershipAfter(seq: number): number {
    const last = this.membershipSeqs[this.membershipSeqs.length - 1];
    return last !== undefined && last > seq ? last : 0;
  }

  entries(): readonly Entry[] {
    return this.list;
  }
}

/** logUpToDate is Raft's vote rule: (term, seq) compared lexicographically. */
export function logUpToDate(candidateTerm: number, candidateSeq: number, ownTerm: number, ownSeq: number): boolean {
  return candidateTerm > ownTerm || (candidateTerm === ownTerm && candidateSeq >= ownSeq);
}
