// RecordingLines: the flight recorder's records waiting for the disk (recording/step-record.ts, formats 5 and 6),
// written straight into a reused chunk of memory: no string is built for a step (a leader's lines held as
// strings for up to recordingFlushMs outlived the young generation and were copied by the collector, then
// joined, then encoded again by the file write); a flush hands the records written since the last one to
// the file as one slice of the chunk, no copy. A slice handed on is never written over: records only go
// after it, and a chunk without room is replaced by a new one.
//
// A record is staged (written after the records taken in: begin, then the record's writer) before it is
// taken in (commit), so the recorder can check its exact size against its bounds, and flush the records
// before it into the segment they belong to, before deciding where it goes.
//
// A record longer than a chunk (a checkpoint, a step with a large input) gets a chunk of its own size; the
// next take, once that record is handed on (or dropped), goes back to a chunk of chunkBytes, so memory held
// past a flush is a chunk (and any staged record), never the largest record seen.
import { writeJsonRecord, type RecordSink } from '../../recording/step-record.js';

/** RECORDING_CHUNK_BYTES: the size of a chunk (a longer record gets a chunk of its own size). */
export const RECORDING_CHUNK_BYTES = 256 * 1024;

export class RecordingLines implements RecordSink {
  /** buf, pos, mark: the record sink (the chunk, where the staged record ends, where it starts). */
  buf: Buffer;
  pos = 0;
  mark = 0;
  /** start: the first byte not yet handed on; end: the end of the records taken in. */
  private start = 0;
  private end = 0;

  constructor(private readonly chunkBytes = RECORDING_CHUNK_BYTES) {
    this.buf = Buffer.allocUnsafeSlow(chunkBytes);
  }

  /** bytes counts the records taken in and not yet handed on. */
  get bytes(): number {
    return this.end - this.start;
  }

  /** begin drops any staged record: the next is written after the records taken in. */
  begin(): RecordSink {
    this.pos = this.end;
    this.mark = this.end;
    return this;
  }

  /** staged: the bytes written since begin (the staged record). */
  get staged(): number {
    return this.pos - this.end;
  }

  /** stage writes `line` as a JSON record (replacing any staged record): its bytes. */
  stage(line: string): number {
    writeJsonRecord(this.begin(), line);
    return this.staged;
  }

  /** commit takes the staged record in. */
  commit(): void {
    this.end = this.pos;
  }

  /** capacity: the bytes of the chunk being written (chunkBytes, unless a longer record needed more). */
  get capacity(): number {
    return this.buf.length;
  }

  /** take hands on the records taken in since the last take (a slice never written over), or null. */
  take(): Buffer | null {
    const records = this.end === this.start ? null : this.buf.subarray(this.start, this.end);
    // A staged record stays staged (after `end`): it may go into the next segment, after this slice.
    this.start = this.end;
    if (this.buf.length > this.chunkBytes) this.shrink();
    return records;
  }

  /**
   * shrink goes back to a chunk of chunkBytes (or of the staged record's size, when that is longer) once
   * everything before the staged record is handed on: the longer chunk stays alive only while the slices
   * handed on from it are being written.
   */
  private shrink(): void {
    const staged = this.pos - this.end;
    const size = Math.max(this.chunkBytes, staged);
    if (size >= this.buf.length) return;
    const next = Buffer.allocUnsafeSlow(size);
    this.buf.copy(next, 0, this.end, this.pos);
    const shift = this.end;
    this.buf = next;
    this.start = 0;
    this.end = 0;
    this.pos -= shift;
    this.mark = Math.max(0, this.mark - shift);
  }

  /** grow moves what is not yet handed on, the staged record included, to a new chunk with room for `bytes` more. */
  grow(bytes: number): void {
    const kept = this.pos - this.start;
    // Twice what it keeps: records piling up between flushes (a slow disk) are copied a bounded number of times.
    const next = Buffer.allocUnsafeSlow(Math.max(this.chunkBytes, 2 * kept + bytes));
    this.buf.copy(next, 0, this.start, this.pos);
    const shift = this.start;
    this.buf = next;
    this.start = 0;
    this.end -= shift;
    this.pos -= shift;
    this.mark -= shift;
  }
}
