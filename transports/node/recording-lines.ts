// RecordingLines: the flight recorder's lines waiting for the disk, as UTF-8 in a reused chunk of memory
// rather than as strings. A line is written into the chunk as soon as it is encoded, so its string dies
// young (held as strings for up to recordingFlushMs, a leader's lines outlived the young generation and
// were copied by the collector, then joined, then encoded again by the file write); a flush hands the
// lines written since the last one to the file as one slice of the chunk, no copy. A slice handed on is
// never written over: lines only go after it, and a full chunk is replaced by a new one.
//
// A line is staged (written after the buffered lines, with its newline) before it is taken in (commit),
// so the recorder can check its exact size against its bounds, and flush the lines before it into the
// segment they belong to, before deciding where it goes.

/** RECORDING_CHUNK_BYTES: the size of a chunk (a longer line gets a chunk of its own size). */
export const RECORDING_CHUNK_BYTES = 256 * 1024;

const NEWLINE = 0x0a;

export class RecordingLines {
  private chunk: Buffer;
  /** start: the first byte not yet handed on; end: the end of the lines taken in; staged: the staged line's bytes. */
  private start = 0;
  private end = 0;
  private staged = 0;

  constructor(private readonly chunkBytes = RECORDING_CHUNK_BYTES) {
    this.chunk = Buffer.allocUnsafeSlow(chunkBytes);
  }

  /** bytes counts the lines taken in and not yet handed on. */
  get bytes(): number {
    return this.end - this.start;
  }

  /** stage writes `line` and a newline after the lines taken in (replacing any staged line): its bytes. */
  stage(line: string): number {
    // UTF-8 takes at most three bytes per UTF-16 unit (a surrogate pair, two units, takes four).
    const most = line.length * 3 + 1;
    if (this.chunk.length - this.end < most) this.renew(most);
    const written = this.chunk.write(line, this.end);
    this.chunk[this.end + written] = NEWLINE;
    this.staged = written + 1;
    return this.staged;
  }

  /** commit takes the staged line in. */
  commit(): void {
    this.end += this.staged;
    this.staged = 0;
  }

  /** take hands on the lines taken in since the last take (a slice never written over), or null. */
  take(): Buffer | null {
    if (this.end === this.start) return null;
    const lines = this.chunk.subarray(this.start, this.end);
    this.start = this.end;
    return lines;
  }

  /** renew moves the lines not yet handed on (and the staged one, dropped) to a new chunk with room for `room` more. */
  private renew(room: number): void {
    const kept = this.end - this.start;
    // Twice what it keeps: lines piling up between flushes (a slow disk) are copied a bounded number of times.
    const next = Buffer.allocUnsafeSlow(Math.max(this.chunkBytes, 2 * kept + room));
    this.chunk.copy(next, 0, this.start, this.end);
    this.chunk = next;
    this.start = 0;
    this.end = kept;
    this.staged = 0;
  }
}
