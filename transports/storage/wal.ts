// Wal is the node's write-ahead log: numbered segment files of checksummed records
// (wal-record.ts), appended with group commit and made durable with fdatasync before any append
// is reported durable.
//
// Group commit: append() only encodes and enqueues. One writer drains the queue, starting in a
// microtask after the appending code: it writes every append queued so far (up to walBatchBytesMax)
// and syncs once; appends that arrive while it syncs wait for the next round. Throughput therefore
// grows with the number of appends in flight instead of stopping at the disk's sync rate.
//
// Durability order: a segment is synced before the next one is created, and a new segment's name
// is synced in its directory before records go into it, so only the last segment can end in a torn
// write. Recovery cuts such a tail and reports any other damage instead of skipping it.
import { mkdir, open, readFile, unlink, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import type { Entry } from '../../engine/types.js';
import { fsyncDir, listDir, writeAll, writeAllSync } from './durable-fs.js';
import { DEFAULT_STORAGE_LIMITS, type StorageLimits } from './limits.js';
import { encodeRecords, entryRecordBytes, type EncodedRecords } from './wal-record.js';
import { LogReplay } from './wal-replay.js';
import { scanSegment } from './wal-scan.js';
import { stamp } from '../node/write-trace.js';

const SEGMENT_NAME = /^(\d{16})\.wal$/;

export function segmentFileName(index: number): string {
  return `${String(index).padStart(16, '0')}.wal`;
}

/** DurablePoint is the log's end once an append is durable. lastTerm is 0 when the WAL no longer holds lastSeq. */
export interface DurablePoint {
  lastSeq: number;
  lastTerm: number;
}

/** WalCorruption is damage before the tail: the node must not trust its log past `offset`. */
export interface WalCorruption {
  reason: string;
  segment: string;
  offset: number;
}

/** TornTail is an unsynced write cut short by a crash, removed on open. */
export interface TornTail {
  segment: string;
  offset: number;
  bytesCut: number;
  reason: string;
}

export interface WalStats {
  appendCount: number;
  batchCount: number;
  /** syncCount counts fdatasync calls on segment files. */
  syncCount: number;
  bytesWritten: number;
  segmentCount: number;
}

export type WalErrorCode = 'invalid-argument' | 'queue-full' | 'corrupt' | 'failed' | 'closed' | 'busy';

export class WalError extends Error {
  constructor(
    readonly code: WalErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'WalError';
  }
}

export interface WalOpenResult {
  wal: Wal;
  /** entries is the live log recovered, contiguous (a prefix of it when corruption was found). */
  entries: Entry[];
  corruption: WalCorruption | null;
  tornTail: TornTail | null;
}

interface Segment {
  index: number;
  path: string;
  bytes: number;
  /** liveMaxSeq is the highest seq among the segment's entries that no durable truncate has dropped. */
  liveMaxSeq: number;
}

interface PendingAppend {
  encoded: EncodedRecords;
  truncateFromSeq: number | null;
  point: DurablePoint;
  resolve: (point: DurablePoint) => void;
  reject: (err: Error) => void;
}

interface TermRun {
  startSeq: number;
  term: number;
}

type DurableListener = (lastSeq: number, lastTerm: number) => void;
type FailureListener = (err: Error) => void;

export class Wal {
  private readonly segments: Segment[];
  private handle: FileHandle | null;
  private readonly queue: PendingAppend[] = [];
  private queuedBytes = 0;
  /** queuedLastSeq is the log's end once every queued append is applied. */
  private queuedLastSeq: number;
  /** termRuns say which term each seq of the queued log carries (a run per term change). */
  private termRuns: TermRun[];
  private durable: DurablePoint;
  private lastAppend: Promise<DurablePoint> | null = null;
  private writing = false;
  private corruption: WalCorruption | null;
  private failure: Error | null = null;
  private closed = false;
  private compaction: Promise<unknown> = Promise.resolve();
  private readonly durableListeners: DurableListener[] = [];
  private readonly failureListeners: FailureListener[] = [];
  private readonly counters = { appendCount: 0, batchCount: 0, syncCount: 0, bytesWritten: 0 };

  private constructor(
    private readonly dir: string,
    private readonly limits: StorageLimits,
    segments: Segment[],
    handle: FileHandle | null,
    entries: Entry[],
    lastSeq: number,
    corruption: WalCorruption | null,
  ) {
    this.segments = segments;
    this.handle = handle;
    this.queuedLastSeq = lastSeq;
    this.termRuns = termRunsOf(entries);
    this.durable = { lastSeq, lastTerm: entries.length > 0 ? entries[entries.length - 1]!.term : 0 };
    this.corruption = corruption;
  }

  /** open recovers the WAL in `dir` (created when missing), cutting a torn tail and reporting corruption. */
  static async open(dir: string, limits: StorageLimits = DEFAULT_STORAGE_LIMITS): Promise<WalOpenResult> {
    await mkdir(dir, { recursive: true });
    const indexes = await segmentIndexes(dir);
    const segments: Segment[] = [];
    const replay = new LogReplay();
    let corruption: WalCorruption | null = null;
    let tornTail: TornTail | null = null;

    for (let i = 0; i < indexes.length && corruption === null; i++) {
      const index = indexes[i]!;
      const name = segmentFileName(index);
      const path = join(dir, name);
      if (i > 0 && index !== indexes[i - 1]! + 1) {
        corruption = { reason: `segment ${segmentFileName(indexes[i - 1]! + 1)} is missing`, segment: name, offset: 0 };
        break;
      }
      const bytes = await readFile(path);
      const scan = scanSegment(bytes, limits.walRecordBytesMax);
      const isLast = i === indexes.length - 1;
      const segment: Segment = { index, path, bytes: scan.goodBytes, liveMaxSeq: 0 };
      segments.push(segment);
      for (const { record, end } of scan.records) {
        const problem = replay.apply(record);
        if (problem !== null) {
          corruption = { reason: problem, segment: name, offset: end };
          break;
        }
        if (record.type === 'truncate') clampLiveMaxSeq(segments, record.fromSeq - 1);
        else segment.liveMaxSeq = Math.max(segment.liveMaxSeq, record.entry.seq);
      }
      if (corruption !== null || scan.bad === null) continue;
      if (!isLast || scan.bad.validRecordAfter) {
        const where = isLast ? 'before a valid record' : 'in a segment that was synced before the next one began';
        corruption = { reason: `${scan.bad.reason} ${where}`, segment: name, offset: scan.bad.offset };
        continue;
      }
      await truncateFile(path, scan.goodBytes);
      tornTail = {
        segment: name,
        offset: scan.goodBytes,
        bytesCut: bytes.length - scan.goodBytes,
        reason: scan.bad.reason,
      };
    }

    let handle: FileHandle | null = null;
    if (corruption === null) {
      if (segments.length === 0) {
        const first = await createSegment(dir, 1);
        segments.push(first.segment);
        handle = first.handle;
      } else {
        handle = await open(segments[segments.length - 1]!.path, 'r+');
      }
    }
    const wal = new Wal(dir, limits, segments, handle, replay.entries, replay.lastSeq, corruption);
    return { wal, entries: replay.entries, corruption, tornTail };
  }

  /**
   * append enqueues "truncate the log at fromSeq (dropping fromSeq and after), then append
   * entries" and resolves once it is durable; appends resolve in order. Bad arguments, a full
   * queue, or a corrupt, failed or closed WAL throw a WalError at once.
   */
  append(fromSeq: number, entries: readonly Entry[]): Promise<DurablePoint> {
    this.checkWritable();
    checkAppend(fromSeq, entries, this.limits);
    const truncateFromSeq = fromSeq === this.queuedLastSeq + 1 ? null : fromSeq;
    const encoded = encodeRecords(truncateFromSeq, entries);
    if (this.queuedBytes + encoded.bytes.length > this.limits.walQueuedBytesMax) {
      throw new WalError(
        'queue-full',
        `WAL queue holds ${this.queuedBytes} bytes; ${encoded.bytes.length} more would pass walQueuedBytesMax (${this.limits.walQueuedBytesMax})`,
      );
    }
    this.applyToTermRuns(fromSeq, entries);
    this.queuedLastSeq = entries.length > 0 ? entries[entries.length - 1]!.seq : fromSeq - 1;
    const point = { lastSeq: this.queuedLastSeq, lastTerm: this.termAt(this.queuedLastSeq) };
    let resolve!: (p: DurablePoint) => void;
    let reject!: (e: Error) => void;
    const promise = new Promise<DurablePoint>((res, rej) => {
      resolve = res;
      reject = rej;
    });
    // Failures also reach onFailure listeners; a caller that drops this promise must not crash the process.
    promise.catch(() => undefined);
    this.queue.push({ encoded, truncateFromSeq, point, resolve, reject });
    this.queuedBytes += encoded.bytes.length;
    this.counters.appendCount++;
    this.lastAppend = promise;
    this.kick();
    return promise;
  }

  /** onDurable is called after each group commit with the log's durable end. */
  onDurable(listener: DurableListener): void {
    this.durableListeners.push(listener);
  }

  /** onFailure is called once if a write or sync fails; the WAL then refuses appends (fail-stop). */
  onFailure(listener: FailureListener): void {
    this.failureListeners.push(listener);
  }

  /** sync resolves when every append queued so far is durable. */
  sync(): Promise<DurablePoint> {
    if (this.failure !== null) return Promise.reject(this.failure);
    return this.lastAppend ?? Promise.resolve(this.durable);
  }

  /** durablePoint is the log's end as of the last group commit. */
  durablePoint(): DurablePoint {
    return { ...this.durable };
  }

  stats(): WalStats {
    return { ...this.counters, segmentCount: this.segments.length };
  }

  /** corrupted is the damage found on open, null when the log is whole (or was reset). */
  corrupted(): WalCorruption | null {
    return this.corruption;
  }

  /**
   * compact deletes whole segments, oldest first, whose live entries are all <= throughSeq. The
   * segment being written is kept. It returns how many segments it deleted.
   */
  compact(throughSeq: number): Promise<number> {
    if (!Number.isSafeInteger(throughSeq) || throughSeq < 0) {
      return Promise.reject(
        new WalError(
          'invalid-argument',
          `compact throughSeq must be a non-negative integer, got ${String(throughSeq)}`,
        ),
      );
    }
    if (this.corruption !== null)
      return Promise.reject(new WalError('corrupt', 'a corrupt WAL is not compacted; reset it'));
    const run = this.compaction.then(() => this.deleteSegmentsThrough(throughSeq));
    this.compaction = run.catch(() => undefined);
    return run;
  }

  /**
   * reset drops the whole log (after corruption, or when a snapshot install supersedes it) and
   * starts an empty segment. The WAL must be idle: await sync() first.
   */
  async reset(): Promise<void> {
    if (this.closed) throw new WalError('closed', 'WAL is closed');
    if (this.failure !== null)
      throw new WalError('failed', `WAL failed earlier and cannot be reset: ${this.failure.message}`);
    if (this.writing || this.queue.length > 0)
      throw new WalError('busy', 'WAL reset needs an idle log: await sync() first');
    await this.compaction;
    await this.handle?.close();
    this.handle = null;
    // The directory, not this.segments: recovery stops listing segments at the first damage.
    const indexes = await segmentIndexes(this.dir);
    const nextIndex = indexes.length > 0 ? indexes[indexes.length - 1]! + 1 : 1;
    this.segments.splice(0);
    // Oldest first: a crash part-way leaves a contiguous run of segments, never a hole.
    for (const index of indexes) await unlink(join(this.dir, segmentFileName(index)));
    await fsyncDir(this.dir);
    const created = await createSegment(this.dir, nextIndex);
    this.segments.push(created.segment);
    this.handle = created.handle;
    this.queuedLastSeq = 0;
    this.termRuns = [];
    this.durable = { lastSeq: 0, lastTerm: 0 };
    this.lastAppend = null;
    this.corruption = null;
  }

  /** close waits for queued appends, then closes the segment file. */
  async close(): Promise<void> {
    if (this.closed) return;
    await this.sync().catch(() => undefined);
    await this.compaction;
    this.closed = true;
    await this.handle?.close();
    this.handle = null;
  }

  private checkWritable(): void {
    if (this.closed) throw new WalError('closed', 'WAL is closed');
    if (this.failure !== null) throw new WalError('failed', `WAL failed earlier: ${this.failure.message}`);
    if (this.corruption !== null)
      throw new WalError(
        'corrupt',
        `WAL is corrupt (${this.corruption.reason} in ${this.corruption.segment} at ${this.corruption.offset}); reset it first`,
      );
  }

  private kick(): void {
    if (this.writing || this.queue.length === 0) return;
    this.writing = true;
    // Start in a microtask, neither at once nor on a later loop turn: the rest of the appending
    // code runs first (a driver step's other appends and its sends, appenders woken by the last
    // commit, whose callbacks are already queued), so those ride one batch, but a lone append does
    // not wait out a loop turn. A leader's propose step runs in a setImmediate callback: a
    // setImmediate here waited a whole turn of other I/O (measured: median 2.3 ms of a 16 ms
    // write on 2 shared cores; docs/operations.md, "Benchmarks").
    queueMicrotask(() => void this.drain());
  }

  private async drain(): Promise<void> {
    while (this.queue.length > 0 && this.failure === null) {
      const batch = this.takeBatch();
      try {
        await this.writeBatch(batch);
      } catch (err) {
        this.fail(err instanceof Error ? err : new Error(String(err)), batch);
        break;
      }
      for (const append of batch) {
        this.queuedBytes -= append.encoded.bytes.length;
        append.resolve(append.point);
      }
      this.durable = batch[batch.length - 1]!.point;
      this.notifyDurable(this.durable);
    }
    this.writing = false;
  }

  /** takeBatch takes every queued append up to walBatchBytesMax, and always at least one. */
  private takeBatch(): PendingAppend[] {
    let bytes = 0;
    let count = 0;
    while (count < this.queue.length) {
      const next = this.queue[count]!.encoded.bytes.length;
      if (count > 0 && bytes + next > this.limits.walBatchBytesMax) break;
      bytes += next;
      count++;
    }
    return this.queue.splice(0, count);
  }

  private async writeBatch(batch: PendingAppend[]): Promise<void> {
    const batchLastSeq = batch[batch.length - 1]!.point.lastSeq;
    stamp('wal.round', batchLastSeq);
    // Live-seq bookkeeping waits for the sync: compaction must not act on a truncate that a crash could still undo.
    const settle: Array<() => void> = [];
    let active = this.segments[this.segments.length - 1]!;
    let pending: Buffer[] = [];
    let pendingBytes = 0;
    const flush = async (): Promise<void> => {
      if (pendingBytes === 0) return;
      const bytes = pending.length === 1 ? pending[0]! : Buffer.concat(pending, pendingBytes);
      if (pendingBytes <= this.limits.walInlineWriteBytesMax) writeAllSync(this.handle!.fd, bytes, active.bytes);
      else await writeAll(this.handle!, bytes, active.bytes);
      active.bytes += pendingBytes;
      this.counters.bytesWritten += pendingBytes;
      pending = [];
      pendingBytes = 0;
    };
    const note = (segment: Segment, seq: number): void => {
      if (seq > 0)
        settle.push(() => {
          segment.liveMaxSeq = Math.max(segment.liveMaxSeq, seq);
        });
    };

    for (const append of batch) {
      const { bytes, recordEnds, seqs } = append.encoded;
      const fromSeq = append.truncateFromSeq;
      if (fromSeq !== null) settle.push(() => clampLiveMaxSeq(this.segments, fromSeq - 1));
      if (active.bytes + pendingBytes + bytes.length <= this.limits.walSegmentBytesMax) {
        pending.push(bytes);
        pendingBytes += bytes.length;
        note(active, seqs[seqs.length - 1] ?? 0);
        continue;
      }
      let start = 0;
      for (let i = 0; i < recordEnds.length; i++) {
        const end = recordEnds[i]!;
        const size = end - start;
        if (active.bytes + pendingBytes > 0 && active.bytes + pendingBytes + size > this.limits.walSegmentBytesMax) {
          await flush();
          active = await this.roll();
        }
        pending.push(bytes.subarray(start, end));
        pendingBytes += size;
        note(active, seqs[i]!);
        start = end;
      }
    }
    await flush();
    await this.handle!.datasync();
    stamp('wal.synced', batchLastSeq);
    this.counters.syncCount++;
    this.counters.batchCount++;
    for (const apply of settle) apply();
  }

  /** roll syncs the full segment, then starts the next one and makes its name durable. */
  private async roll(): Promise<Segment> {
    const full = this.segments[this.segments.length - 1]!;
    await this.handle!.datasync();
    this.counters.syncCount++;
    await this.handle!.close();
    this.handle = null;
    const created = await createSegment(this.dir, full.index + 1);
    this.handle = created.handle;
    this.segments.push(created.segment);
    return created.segment;
  }

  private async deleteSegmentsThrough(throughSeq: number): Promise<number> {
    let count = 0;
    while (count < this.segments.length - 1 && this.segments[count]!.liveMaxSeq <= throughSeq) count++;
    if (count === 0) return 0;
    const doomed = this.segments.splice(0, count);
    for (const segment of doomed) await unlink(segment.path);
    await fsyncDir(this.dir);
    while (this.termRuns.length >= 2 && this.termRuns[1]!.startSeq <= throughSeq) this.termRuns.shift();
    return count;
  }

  private fail(err: Error, batch: PendingAppend[]): void {
    this.failure = new WalError('failed', `WAL write failed: ${err.message}`);
    for (const append of [...batch, ...this.queue.splice(0)]) append.reject(this.failure);
    this.queuedBytes = 0;
    for (const listener of this.failureListeners) callListener(() => listener(this.failure!));
  }

  private notifyDurable(point: DurablePoint): void {
    for (const listener of this.durableListeners) callListener(() => listener(point.lastSeq, point.lastTerm));
  }

  private applyToTermRuns(fromSeq: number, entries: readonly Entry[]): void {
    if (fromSeq > this.queuedLastSeq + 1) this.termRuns = [];
    while (this.termRuns.length > 0 && this.termRuns[this.termRuns.length - 1]!.startSeq >= fromSeq)
      this.termRuns.pop();
    for (const e of entries) {
      const last = this.termRuns[this.termRuns.length - 1];
      if (last === undefined || last.term !== e.term) this.termRuns.push({ startSeq: e.seq, term: e.term });
    }
  }

  private termAt(seq: number): number {
    for (let i = this.termRuns.length - 1; i >= 0; i--) {
      if (this.termRuns[i]!.startSeq <= seq) return this.termRuns[i]!.term;
    }
    return 0;
  }
}

function checkAppend(fromSeq: number, entries: readonly Entry[], limits: StorageLimits): void {
  if (!Number.isSafeInteger(fromSeq) || fromSeq < 1)
    throw new WalError('invalid-argument', `append fromSeq must be a positive integer, got ${String(fromSeq)}`);
  if (!Array.isArray(entries)) throw new WalError('invalid-argument', 'append entries must be an array');
  for (let i = 0; i < entries.length; i++) {
    const e = entries[i]!;
    if (e.seq !== fromSeq + i)
      throw new WalError(
        'invalid-argument',
        `append entry ${i} has seq ${String(e.seq)}, expected ${fromSeq + i} (entries start at fromSeq, contiguous)`,
      );
    if (!Number.isSafeInteger(e.term) || e.term < 0)
      throw new WalError('invalid-argument', `entry ${e.seq} has a bad term ${String(e.term)}`);
    if (!Number.isInteger(e.kind) || e.kind < 0 || e.kind > 255)
      throw new WalError('invalid-argument', `entry ${e.seq} has a bad kind ${String(e.kind)}`);
    if (!(e.data instanceof Uint8Array))
      throw new WalError('invalid-argument', `entry ${e.seq} data must be a Uint8Array`);
    if (entryRecordBytes(e.data.length) > limits.walRecordBytesMax) {
      throw new WalError(
        'invalid-argument',
        `entry ${e.seq} needs a ${entryRecordBytes(e.data.length)}-byte record, above walRecordBytesMax (${limits.walRecordBytesMax})`,
      );
    }
  }
}

async function segmentIndexes(dir: string): Promise<number[]> {
  return (await listDir(dir))
    .map((name) => SEGMENT_NAME.exec(name))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => Number(m[1]))
    .sort((a, b) => a - b);
}

function clampLiveMaxSeq(segments: Segment[], lastSeq: number): void {
  for (const segment of segments) segment.liveMaxSeq = Math.min(segment.liveMaxSeq, lastSeq);
}

function termRunsOf(entries: readonly Entry[]): TermRun[] {
  const runs: TermRun[] = [];
  for (const e of entries) {
    if (runs.length === 0 || runs[runs.length - 1]!.term !== e.term) runs.push({ startSeq: e.seq, term: e.term });
  }
  return runs;
}

async function createSegment(dir: string, index: number): Promise<{ segment: Segment; handle: FileHandle }> {
  const path = join(dir, segmentFileName(index));
  const handle = await open(path, 'wx');
  await fsyncDir(dir);
  return { segment: { index, path, bytes: 0, liveMaxSeq: 0 }, handle };
}

async function truncateFile(path: string, length: number): Promise<void> {
  const handle = await open(path, 'r+');
  try {
    await handle.truncate(length);
    await handle.datasync();
  } finally {
    await handle.close();
  }
}

function callListener(call: () => void): void {
  try {
    call();
  } catch (err) {
    // A listener's bug is the listener's: surface it like any uncaught callback error, not as a WAL failure.
    queueMicrotask(() => {
      throw err;
    });
  }
}
