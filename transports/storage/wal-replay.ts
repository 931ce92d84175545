// LogReplay folds WAL records, in file order, into the live log they describe. Segment scanning
// (wal-scan.ts) and the writer's bookkeeping (wal.ts) share its rules, so both agree on what a
// truncate record means.
import type { Entry } from '../../engine/types.js';
import type { WalRecord } from './wal-record.js';

export class LogReplay {
  /** entries is the live log, contiguous, ending at lastSeq. */
  entries: Entry[] = [];
  /** lastSeq is where the log ends (it may be past entries when a restart left no entries yet). */
  lastSeq = 0;
  private started = false;

  /** apply folds one record in; it returns a reason when the record cannot follow the log. */
  apply(record: WalRecord): string | null {
    if (record.type === 'truncate') {
      this.truncate(record.fromSeq);
      return null;
    }
    const { seq } = record.entry;
    if (this.started && seq !== this.lastSeq + 1) return `entry ${seq} does not follow the log's end ${this.lastSeq}`;
    // The first record after compaction may start anywhere: earlier segments were deleted whole.
    this.started = true;
    this.entries.push(record.entry);
    this.lastSeq = seq;
    return null;
  }

  private truncate(fromSeq: number): void {
    this.started = true;
    if (fromSeq > this.lastSeq + 1 || this.entries.length === 0 || fromSeq <= this.entries[0]!.seq) {
      // A restart past the end (after a snapshot install) or a cut below what we hold: nothing stays.
      this.entries = [];
    } else {
      this.entries.length = fromSeq - this.entries[0]!.seq;
    }
    this.lastSeq = fromSeq - 1;
  }
}
