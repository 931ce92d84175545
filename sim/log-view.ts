// LogView is one node's log as a driver sees it: entries after `base` (the seq
// a snapshot or compaction covers), with the term at `base` kept for the
// log-matching check of the entry right after it.
import type { Entry } from '../engine/types.js';

export class LogView {
  base = 0;
  baseTerm = 0;
  entries: Entry[] = [];

  get lastSeq(): number {
    return this.base + this.entries.length;
  }

  get lastTerm(): number {
    return this.entries.length > 0 ? this.entries[this.entries.length - 1]!.term : this.baseTerm;
  }

  /** termAt is the term of the entry at seq, 0 at seq 0, undefined where the view has nothing. */
  termAt(seq: number): number | undefined {
    if (seq === this.base) return this.baseTerm;
    if (seq === 0) return 0;
    return this.entryAt(seq)?.term;
  }

  entryAt(seq: number): Entry | undefined {
    if (seq <= this.base) return undefined;
    return this.entries[seq - this.base - 1];
  }

  /**
   * write truncates at fromSeq (dropping fromSeq and after) and appends entries; entries at or
   * below `base` are already covered by a snapshot and skipped. It returns an error text for a
   * write that would leave a hole or is not contiguous, and changes nothing then.
   */
  write(fromSeq: number, entries: readonly Entry[]): string | null {
    if (!Number.isInteger(fromSeq) || fromSeq < 1) return `append fromSeq ${fromSeq} is not a seqno >= 1`;
    for (let i = 0; i < entries.length; i++) {
      if (entries[i]!.seq !== fromSeq + i)
        return `append entries not contiguous from ${fromSeq} (entry ${i} has seq ${entries[i]!.seq})`;
    }
    if (fromSeq > this.lastSeq + 1) return `append fromSeq ${fromSeq} leaves a hole after lastSeq ${this.lastSeq}`;
    const keep = Math.max(0, fromSeq - this.base - 1);
    if (keep < this.entries.length) this.entries.length = keep;
    for (const e of entries) if (e.seq > this.base) this.entries.push(e);
    return null;
  }

  /**
   * compact drops entries up to throughSeq (never past the last entry). `committedTermAt`, when
   * given, names the term the covering snapshot holds at a seq (see SimStorage.compact).
   */
  compact(throughSeq: number, committedTermAt?: (seq: number) => number | undefined): void {
    const through = Math.min(throughSeq, this.lastSeq);
    if (through <= this.base) return;
    const term = committedTermAt?.(through) ?? this.termAt(through)!;
    this.entries.splice(0, through - this.base);
    this.base = through;
    this.baseTerm = term;
  }

  /** resetTo replaces the whole view (restart, snapshot install). */
  resetTo(base: number, baseTerm: number, entries: readonly Entry[]): void {
    this.base = base;
    this.baseTerm = baseTerm;
    this.entries = [...entries];
  }

  clone(): LogView {
    const copy = new LogView();
    copy.resetTo(this.base, this.baseTerm, this.entries);
    return copy;
  }
}
