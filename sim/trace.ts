// Trace hashes every event line as it happens (SHA-256, incremental) and can
// also write the lines to a file. Lines are built from numbers and fixed-order
// fields only, so the same seed gives the same hash on any machine.
// A file also gets view notes (lines starting `{"v":`, for the trace viewer in
// sim/view/): message ids linking a send to its delivery, the run's nodes and
// its failure. Notes are neither hashed nor counted, so a file's non-note lines
// hash to the printed trace= digest.
import { createHash, type Hash } from 'node:crypto';
import { openSync, writeSync, closeSync } from 'node:fs';

/** HASH_BATCH_CHARS: trace text is fed to SHA-256 in batches of about this size. */
const HASH_BATCH_CHARS = 64 * 1024;

export class Trace {
  private readonly hash: Hash = createHash('sha256');
  private fd: number | null = null;
  private buffered: string[] = [];
  private bufferedChars = 0;
  private pendingText = '';
  eventCount = 0;

  /** toFile also writes each line to `path` (one JSON object per line). */
  toFile(path: string): void {
    this.fd = openSync(path, 'w');
  }

  get writesFile(): boolean {
    return this.fd !== null;
  }

  /** takesNotes: only a file gets view notes; callers skip building them otherwise. */
  get takesNotes(): boolean {
    return this.fd !== null;
  }

  /** note writes a view note (a JSON object with a "v" key first) to the file: not hashed, not counted. */
  note(line: string): void {
    if (this.fd === null) return;
    this.buffered.push(line);
    this.bufferedChars += line.length + 1;
    if (this.bufferedChars > 1 << 20) this.flush();
  }

  record(line: string): void {
    this.eventCount++;
    // Lines are hashed in batches: the digest of the concatenation is the same, and one
    // update per batch costs far less than one per line.
    this.pendingText += line + '\n';
    if (this.pendingText.length > HASH_BATCH_CHARS) this.hashPending();
    if (this.fd !== null) {
      this.buffered.push(line);
      this.bufferedChars += line.length + 1;
      if (this.bufferedChars > 1 << 20) this.flush();
    }
  }

  /** finish returns the hex digest and closes the file; the trace takes no lines after it. */
  finish(): string {
    this.hashPending();
    this.flush();
    if (this.fd !== null) closeSync(this.fd);
    this.fd = null;
    return this.hash.digest('hex');
  }

  private hashPending(): void {
    if (this.pendingText.length === 0) return;
    this.hash.update(this.pendingText);
    this.pendingText = '';
  }

  private flush(): void {
    if (this.fd === null || this.buffered.length === 0) return;
    writeSync(this.fd, this.buffered.join('\n') + '\n');
    this.buffered = [];
    this.bufferedChars = 0;
  }
}
