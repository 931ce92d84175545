// Trace hashes every event line as it happens (SHA-256, incremental) and can
// also write the lines to a file. Lines are built from numbers and fixed-order
// fields only, so the same seed gives the same hash on any machine.
import { createHash, type Hash } from 'node:crypto';
import { openSync, writeSync, closeSync } from 'node:fs';

export class Trace {
  private readonly hash: Hash = createHash('sha256');
  private fd: number | null = null;
  private buffered: string[] = [];
  private bufferedChars = 0;
  eventCount = 0;

  /** toFile also writes each line to `path` (one JSON object per line). */
  toFile(path: string): void {
    this.fd = openSync(path, 'w');
  }

  get writesFile(): boolean {
    return this.fd !== null;
  }

  record(line: string): void {
    this.eventCount++;
    this.hash.update(line);
    this.hash.update('\n');
    if (this.fd !== null) {
      this.buffered.push(line);
      this.bufferedChars += line.length + 1;
      if (this.bufferedChars > 1 << 20) this.flush();
    }
  }

  /** finish returns the hex digest and closes the file; the trace takes no lines after it. */
  finish(): string {
    this.flush();
    if (this.fd !== null) closeSync(this.fd);
    this.fd = null;
    return this.hash.digest('hex');
  }

  private flush(): void {
    if (this.fd === null || this.buffered.length === 0) return;
    writeSync(this.fd, this.buffered.join('\n') + '\n');
    this.buffered = [];
    this.bufferedChars = 0;
  }
}
