// The output of one run on its way into the run's Redis stream: cut at runOutputBytesMax, masked
// (secret-masker.ts), batched into `output` events of at most runOutputChunkBytesMax and appended in order, one
// write after another, every runOutputFlushMs.
import type { Redis } from 'ioredis';
import { runOutputBytesMax, runOutputChunkBytesMax, runOutputFlushMs } from '../limits.js';
import { appendRunEvent } from './run-records.js';
import type { SecretMasker } from './secret-masker.js';

export type OutputStreamName = 'stdout' | 'stderr';

export class RunOutputStream {
  private readonly pending: Array<{ stream: OutputStreamName; text: string }> = [];
  /** writes chains the appends so events land in the order they were queued; a failed append is dropped. */
  private writes = Promise.resolve();
  private outputBytes = 0;
  private truncated = false;
  private readonly flushTimer: NodeJS.Timeout;

  constructor(
    private readonly redis: Redis,
    private readonly runId: string,
    private readonly masker: SecretMasker,
  ) {
    this.flushTimer = setInterval(() => this.flush(), runOutputFlushMs);
  }

  /** collect is the `data` listener of one of the process's streams. */
  collect(stream: OutputStreamName): (chunk: Buffer) => void {
    return (chunk) => {
      if (this.outputBytes >= runOutputBytesMax) {
        if (!this.truncated) {
          this.truncated = true;
          this.noteTruncated();
        }
        return;
      }
      const kept = chunk.subarray(0, runOutputBytesMax - this.outputBytes);
      this.outputBytes += kept.length;
      this.queueText(stream, this.masker.push(stream, kept.toString('utf8')));
    };
  }

  /** pushStderr queues a line the worker writes itself (not the command's: it is not masked or counted). */
  pushStderr(text: string): void {
    this.pending.push({ stream: 'stderr', text });
  }

  /** stopFlushing ends the periodic flush (the run's process is gone). */
  stopFlushing(): void {
    clearInterval(this.flushTimer);
  }

  /** end queues what the masker still holds, flushes, and resolves once every append is done. */
  end(): Promise<void> {
    for (const stream of ['stdout', 'stderr'] as const) this.queueText(stream, this.masker.end(stream));
    this.flush();
    return this.writes;
  }

  private flush(): void {
    const batch = this.pending.splice(0);
    this.writes = this.writes
      .then(async () => {
        for (const item of batch) await appendRunEvent(this.redis, this.runId, { event: 'output', data: item });
      })
      .catch(() => undefined);
  }

  private queueText(stream: OutputStreamName, text: string): void {
    for (let offset = 0; offset < text.length; offset += runOutputChunkBytesMax) {
      const piece = text.slice(offset, offset + runOutputChunkBytesMax);
      const last = this.pending.at(-1);
      if (last && last.stream === stream && last.text.length + piece.length <= runOutputChunkBytesMax)
        last.text += piece;
      else this.pending.push({ stream, text: piece });
    }
  }

  private noteTruncated(): void {
    this.writes = this.writes
      .then(() =>
        appendRunEvent(this.redis, this.runId, {
          event: 'notice',
          data: { message: `output beyond ${runOutputBytesMax} bytes was dropped` },
        }),
      )
      .then(
        () => undefined,
        () => undefined,
      );
  }
}
