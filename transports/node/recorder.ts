// FlightRecorder: every Engine.step of this node, written to a bounded ring of segment files under
// <data-dir>/recording/ (the format: recording/format.ts; replay: `npm run sim -- --replay DIR`).
//
// It sits beside the write path, never on it: record() only queues the step (its input, effects, tick and
// wall time) and returns; once the driver has carried out the step's effects (sends, replies, appends,
// after the hard-state sync when the step has one) it calls carriedOut(), and the carried-out steps are
// encoded in batches, in step order, as format 6's binary records (recording/step-record.ts), straight into a
// reused buffer (recording-lines.ts): by the flush timer every recordingFlushMs, or at the end of the turn
// (setImmediate: after that turn's sends, answers and held commit notices) once recordingEncodeBatchSteps are
// waiting. The same timer then hands the encoded records to one asynchronous file write at a time, without
// fsync. Encoding later is sound because a step's input and effects are not changed after the
// step: the engine builds fresh effect objects each step and the driver's ports only read them (replay,
// which digests each step's effects at once, finds any step where that stops being true). A crash loses
// at most the last recordingFlushMs of recording, never the node's data, and a slow or failing disk
// under the recording drops recording (a `gap` line says so), never slows or stops the node.
//
// The ring's bound is kept by arithmetic, not by watching the disk: a segment is closed before a line
// would take it past segmentBytesMax, and before a segment opens, the oldest ones are deleted until the
// recording fits in bytesMax with a whole new segment.
//
// Checkpoints (format 3): once a segment is seven eighths full, the next carriedOut() takes the engine's
// whole state (Engine.exportState, right after that step, once its effects are carried out: the only time
// the recorder touches the engine) and the next segment starts with it, so every segment replays without
// the run's start. That costs one export and one encoding per segment, never anything per step; both
// pause the event loop for a time that grows with the engine's log (docs/operations.md gives it).
import { randomBytes } from 'node:crypto';
import { mkdir, open, readdir, readFile, stat, unlink, writeFile, type FileHandle } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { encodeLine, LENGTHS_ONLY, type RedactKey } from '../../recording/codec.js';
import { stepDigestV5Words } from '../../recording/step-digest.js';
import { jsonRecord, RECORD_HEADER_BYTES, writeStepRecord } from '../../recording/step-record.js';
import { RecordingLines } from './recording-lines.js';
import {
  RECORDING_FORMAT_VERSION,
  SEGMENT_FILE,
  segmentFileName,
  type CheckpointLine,
  type GapLine,
  type PayloadMode,
  type RunLine,
  type SegmentLine,
} from '../../recording/format.js';
import type { EngineState } from '../../engine/engine.js';
import type { Effect, EngineConfig, Input, RestoredState } from '../../engine/types.js';

/** StepRecorder is what the driver calls for every step (transports/node/driver.ts). */
export interface StepRecorder {
  /** record is called right after Engine.step returns: it takes the step's wall time and queues it. */
  record(input: Input, effects: readonly Effect[], tick: number): void;
  /**
   * carriedOut is called once the step's effects are carried out, before the next step: the queue may be
   * encoded from then on, and a due checkpoint takes the engine's state (still the one right after the step).
   */
  carriedOut(): void;
}

export interface RecordingLimits {
  /** recordingBytesMax bounds the whole ring on disk. */
  recordingBytesMax: number;
  /** recordingSegmentBytesMax is the size at which a segment is closed and the next opened. */
  recordingSegmentBytesMax: number;
  /** recordingBufferBytesMax bounds the lines waiting for the disk; past it steps are dropped (a gap). */
  recordingBufferBytesMax: number;
  /** recordingFlushMs paces the writes of buffered lines. */
  recordingFlushMs: number;
  /** recordingPendingStepsMax bounds the steps queued for encoding (a batch and one event-loop turn's worth); past it, a gap. */
  recordingPendingStepsMax: number;
  /**
   * recordingEncodeBatchSteps: this many carried-out steps are encoded at the end of their turn; fewer wait for
   * the flush timer (recordingFlushMs). Batches keep the encoder's code and data warm: one step at a time, between
   * a node's other work, cost a 1-writer node about three times the CPU (docs/operations.md, "Flight recorder").
   */
  recordingEncodeBatchSteps: number;
  /**
   * recordingCheckpointLogEntriesMax: a due checkpoint waits while the engine's log holds more entries than this,
   * and is taken at the first step after it holds fewer or after it shrank (the next snapshot's compaction),
   * starting a segment then;
   * segments that fill meanwhile start without one. Why: the export and the encoding walk every entry of the log
   * on the event loop, 50-90 ms and 40-150 ms at 100,000 entries (bench/recording-checkpoint-pause.ts), and at
   * thousands of writes a second every member rotated a segment, so paid that pause, every few seconds: the c64
   * writers' worst stalls (docs/operations.md, "The c64 tail"). At this many entries each is a few ms.
   */
  recordingCheckpointLogEntriesMax: number;
}

/** CHECKPOINT_AT_SEGMENT_SHARE: a segment this full asks for the checkpoint the next one starts with. */
export const CHECKPOINT_AT_SEGMENT_SHARE = 7 / 8;
/** CHECKPOINT_SEGMENT_SHARE_MAX: a checkpoint line over this share of a segment is not written. */
export const CHECKPOINT_SEGMENT_SHARE_MAX = 1 / 2;

export const DEFAULT_RECORDING_LIMITS: Readonly<RecordingLimits> = Object.freeze({
  recordingBytesMax: 256 * 1024 * 1024,
  recordingSegmentBytesMax: 16 * 1024 * 1024,
  recordingBufferBytesMax: 8 * 1024 * 1024,
  recordingFlushMs: 100,
  recordingPendingStepsMax: 65_536,
  recordingEncodeBatchSteps: 64,
  recordingCheckpointLogEntriesMax: 10_000,
});

export function recordingLimits(overrides: Partial<RecordingLimits> = {}): RecordingLimits {
  const limits = { ...DEFAULT_RECORDING_LIMITS, ...overrides };
  for (const [name, value] of Object.entries(limits)) {
    if (!Number.isSafeInteger(value) || value < 1)
      throw new RangeError(`recording limit ${name} must be a positive integer, got ${String(value)}`);
  }
  if (limits.recordingSegmentBytesMax < 4096)
    throw new RangeError('recording limit recordingSegmentBytesMax must be at least 4096');
  if (limits.recordingBytesMax < 2 * limits.recordingSegmentBytesMax)
    throw new RangeError('recording limit recordingBytesMax must be at least twice recordingSegmentBytesMax');
  if (limits.recordingEncodeBatchSteps > limits.recordingPendingStepsMax)
    throw new RangeError('recording limit recordingEncodeBatchSteps must be at most recordingPendingStepsMax');
  return limits;
}

export interface RecorderStart {
  /** dir is <data-dir>/recording. */
  dir: string;
  /** keyFile holds the key of the value hashes; it lives outside `dir` so a recording handed on never carries it. */
  keyFile: string;
  node: string;
  build: string;
  tickMs: number;
  payloads: PayloadMode;
  /** effectTexts: each step line also carries its effects as text (`fx`), for a person reading a divergence. */
  effectTexts?: boolean;
  config: EngineConfig;
  restored: RestoredState;
  /** exportState is the engine's Engine.exportState: the checkpoints' source (none are written without it). */
  exportState?: () => EngineState;
  /** logEntryCount is how many entries the engine's log holds now (a due checkpoint waits while it is large). */
  logEntryCount?: () => number;
  limits: RecordingLimits;
  /** now is the wall clock (ms since the epoch); tests may pass their own. */
  now?: () => number;
  /** onError is told of a recording write that failed (the recorder then stops recording; the node runs on). */
  onError?: (err: Error) => void;
}

/** PendingStep is a step recorded but not yet encoded (its wall time taken when it ran). */
interface PendingStep {
  input: Input;
  effects: readonly Effect[];
  tick: number;
  at: number;
}

/** PendingCheckpoint is the engine's state taken right after the step queued before it. */
interface PendingCheckpoint {
  state: EngineState;
  at: number;
  exportMs: number;
}

/** CheckpointStats: what the checkpoints cost (tests, the bench, docs/operations.md). */
export interface CheckpointStats {
  written: number;
  /** skipped counts checkpoints not written: an export that threw, or a state over half a segment. */
  skipped: number;
  /** deferred counts due checkpoints that waited for the engine's log to shrink (recordingCheckpointLogEntriesMax). */
  deferred: number;
  lastExportMs: number;
  lastEncodeMs: number;
  lastBytes: number;
}

type Op = { write: Buffer } | { open: number; first: Buffer } | { unlink: string[] };

/** digestWords receives each step's digest (one step is encoded at a time). */
const digestWords = new Int32Array(2);

export class FlightRecorder implements StepRecorder {
  private readonly sizes = new Map<number, number>();
  private segment: number;
  private segmentBytes = 0;
  private stepNumber = 0;
  private pending: Array<PendingStep | PendingCheckpoint> = [];
  /** carried: how many of the pending steps (from the first) have had their effects carried out. */
  private carried = 0;
  /** checkpointDue: the segment is nearly full; the next carriedOut() takes the engine's state. */
  private checkpointDue = false;
  /** segmentSteps counts the step lines in the open segment (a checkpoint is asked for once it has some). */
  private segmentSteps = 0;
  /** checkpointAsked: this segment has asked for its successor's checkpoint (once per segment). */
  private checkpointAsked = false;
  readonly checkpoints: CheckpointStats = {
    written: 0,
    skipped: 0,
    deferred: 0,
    lastExportMs: 0,
    lastEncodeMs: 0,
    lastBytes: 0,
  };
  /** checkpointQueued: a checkpoint is taken and waits in `pending` for its encoding. */
  private checkpointQueued = false;
  /**
   * waitingLogEntryCount: while the due checkpoint waits for the log to shrink (counted in checkpoints.deferred
   * once), the log's length at the last step; null when none waits.
   */
  private waitingLogEntryCount: number | null = null;
  /** encodeArmed: an encoding of the carried-out steps is scheduled at the end of this event-loop turn (setImmediate). */
  private encodeArmed = false;
  /** overflow: why steps stopped being queued ('' while they are); the gap is noted after the queue's steps. */
  private overflow = '';
  /** lines: the encoded lines waiting for the next flush, as UTF-8 (recording-lines.ts). */
  private readonly lines = new RecordingLines();
  /** queuedBytes: bytes handed to ops not yet written (the buffer's bound counts them too). */
  private queuedBytes = 0;
  private readonly ops: Op[] = [];
  private pumping: Promise<void> | null = null;
  private handle: FileHandle | null = null;
  private gapFrom = 0;
  private gapReason = '';
  private stopped = false;
  private closed = false;
  private failed = false;
  private readonly timer: NodeJS.Timeout;
  private readonly now: () => number;
  /** timerFlushes counts the flush timer's runs (encode the carried-out steps, then write): tests wait on it. */
  timerFlushes = 0;

  private constructor(
    private readonly start: RecorderStart,
    private readonly key: RedactKey,
    existing: Map<number, number>,
    readonly run: string,
    private readonly startedAtMs: number,
  ) {
    this.now = start.now ?? Date.now;
    for (const [index, size] of existing) this.sizes.set(index, size);
    this.segment = Math.max(0, ...existing.keys());
    this.timer = setInterval(() => {
      this.encodeCarried();
      this.flush();
      this.timerFlushes++;
    }, start.limits.recordingFlushMs);
    this.timer.unref();
  }

  /** open starts a new run: a new segment holding the run line (the engine's config and start state). */
  static async open(start: RecorderStart): Promise<FlightRecorder> {
    await mkdir(start.dir, { recursive: true });
    const key = await loadKey(start.keyFile);
    const existing = new Map<number, number>();
    for (const name of await readdir(start.dir)) {
      const match = SEGMENT_FILE.exec(name);
      if (match) existing.set(Number(match[1]), (await stat(join(start.dir, name))).size);
    }
    const startedAtMs = (start.now ?? Date.now)();
    const run = `${startedAtMs.toString(36)}-${randomBytes(4).toString('hex')}`;
    const recorder = new FlightRecorder(start, key, existing, run, startedAtMs);
    const head: RunLine = {
      t: 'run',
      v: RECORDING_FORMAT_VERSION,
      run,
      node: start.node,
      build: start.build,
      startedAtMs,
      tickMs: start.tickMs,
      payloads: start.payloads,
      config: start.config,
      restored: start.restored,
    };
    recorder.openSegment();
    recorder.append(encodeLine(head, start.payloads, key), 'the run line is over recordingSegmentBytesMax');
    return recorder;
  }

  /** record queues one step for encoding (never throws: a recording problem must not stop the node). */
  record(input: Input, effects: readonly Effect[], tick: number): void {
    if (this.stopped || this.failed || this.overflow !== '') return;
    if (this.pending.length >= this.start.limits.recordingPendingStepsMax) {
      this.overflow = 'the queue of steps to encode was full (recordingPendingStepsMax before an encoding)';
      return;
    }
    this.pending.push({ input, effects, tick, at: this.now() });
  }

  /**
   * takeCheckpoint queues the engine's state as it is after the steps queued so far (once per segment). It is
   * taken once the last step's effects are carried out (carriedOut), not in record(): the export is a pause
   * of the event loop that grows with the engine's log (tens of ms at 50,000 entries, about 90 at 100,000:
   * bench/recording-checkpoint-pause.ts), and taken in record() it held back that step's sends, answers
   * and appends behind it. The driver steps one input at a time (its serial queue) and runs no step between
   * a step's record() and its carriedOut(), so the state is still the one right after that step.
   */
  private takeCheckpoint(): void {
    this.checkpointDue = false;
    const exportState = this.start.exportState;
    if (!exportState) return;
    try {
      const began = performance.now();
      const state = exportState();
      this.pending.push({ state, at: this.now(), exportMs: performance.now() - began });
      this.checkpointQueued = true;
    } catch {
      this.checkpoints.skipped++;
    }
  }

  /**
   * carriedOut: the driver has carried out the last step's effects (after its hard-state sync, when it had
   * one), so the steps queued so far may be encoded. They wait for the flush timer, which encodes them in one
   * batch just before it writes them, unless recordingEncodeBatchSteps are waiting: then at the end of this
   * event-loop turn (one setImmediate, however many steps the turn ran), behind the turn's sends and answers
   * and the commit notices the driver holds back a setImmediate. Why batches: a step encoded alone, at the end
   * of each turn, between the node's gRPC, TLS and engine work, ran its encoder cold, about three times the CPU
   * of the same step in a batch (CPU profiles of 1-writer runs: 50-120 µs a write on each node against 12-30;
   * docs/operations.md). Why no timer of its own: format 5's encoding 1 ms later woke an idle node's process
   * once more for nearly every step (bench/recorder-step.ts --paced counts wake-ups); the flush timer wakes it
   * every recordingFlushMs anyway. A step never reaches the encoder before its effects are carried out (a
   * hard-state sync still running holds it back); close() encodes whatever is queued.
   */
  carriedOut(): void {
    if (this.checkpointDue && !this.stopped && !this.failed && this.overflow === '' && this.logShortEnough())
      this.takeCheckpoint();
    this.carried = this.pending.length;
    if (this.carried < this.start.limits.recordingEncodeBatchSteps || this.encodeArmed || this.stopped) return;
    this.encodeArmed = true;
    setImmediate(this.encodeCarried);
  }

  /**
   * logShortEnough: the engine's log is small enough for a checkpoint now: at most recordingCheckpointLogEntriesMax
   * entries, or shorter than at the last step while a checkpoint waited (a compaction ran: the log is as short as
   * it gets until the next one). Why the second: under a sustained load the log after a compaction still holds
   * every entry applied while the snapshot was staged (tens of thousands at 10,000 writes a second), so waiting
   * for the limit alone never ended, and the ring rotated its last checkpoint out: nothing left to replay from.
   */
  private logShortEnough(): boolean {
    const count = this.start.logEntryCount?.() ?? 0;
    const waitedAt = this.waitingLogEntryCount;
    if (count <= this.start.limits.recordingCheckpointLogEntriesMax || (waitedAt !== null && count < waitedAt)) {
      this.waitingLogEntryCount = null;
      return true;
    }
    if (waitedAt === null) this.checkpoints.deferred++;
    this.waitingLogEntryCount = count;
    return false;
  }

  /** encodeCarried encodes the carried-out steps, in order, into the buffer of records. */
  private readonly encodeCarried = (): void => {
    this.encodeArmed = false;
    this.encodePending(this.carried);
  };

  /** encodePending encodes the first `count` queued steps (all by default) in order into the buffer of records. */
  private encodePending(count = this.pending.length): void {
    const queued = this.pending;
    if (count === 0) return;
    const steps = count === queued.length ? queued : queued.slice(0, count);
    this.pending = count === queued.length ? [] : queued.slice(count);
    this.carried = 0;
    for (const step of steps) {
      if (this.stopped || this.failed) return;
      if ('state' in step) this.encodeCheckpoint(step);
      else this.encodeStep(step);
    }
    // The overflow's gap follows every step queued before it (those not yet carried out included).
    if (this.overflow !== '' && this.pending.length === 0 && !this.stopped) {
      this.stepNumber++;
      this.noteGap(this.overflow);
      this.writeGap();
    }
  }

  private encodeStep(step: PendingStep): void {
    this.stepNumber++;
    if (this.gapFrom > 0 && !this.writeGap()) return;
    try {
      const mode = this.start.payloads;
      stepDigestV5Words(step.effects, mode, digestWords);
      writeStepRecord(
        this.lines.begin(),
        this.stepNumber,
        step.tick,
        step.at,
        step.input,
        digestWords,
        // The node's own effect list, for the person reading a divergence beside the replay's: it cannot be
        // rebuilt from the digest. Off by recording.effectTexts (bench/recorder-step.ts gives its share).
        this.start.effectTexts === false ? null : step.effects,
        mode,
        this.key,
        // Whether or not their texts are written: they show which shipped frames the engine took (step-record.ts).
        step.effects,
      );
    } catch (error) {
      this.noteGap(`a step did not encode: ${(error as Error).message}`);
      return;
    }
    if (!this.admitStaged('a step record is over recordingSegmentBytesMax')) return;
    this.segmentSteps++;
    const limits = this.start.limits;
    // A checkpoint already queued (taken late, after a wait for the log to shrink) opens the next segment itself.
    if (
      !this.checkpointAsked &&
      !this.checkpointQueued &&
      this.segmentBytes >= limits.recordingSegmentBytesMax * CHECKPOINT_AT_SEGMENT_SHARE
    ) {
      this.checkpointAsked = true;
      this.checkpointDue = this.start.exportState !== undefined;
    }
  }

  /**
   * encodeCheckpoint starts a new segment with the checkpoint (after the steps encoded so far, which the
   * state includes). A state over half a segment is not written: segments would hold little else.
   */
  private encodeCheckpoint(pending: PendingCheckpoint): void {
    this.checkpointQueued = false;
    const began = performance.now();
    const start = this.start;
    const line: CheckpointLine = {
      t: 'ckpt',
      v: RECORDING_FORMAT_VERSION,
      run: this.run,
      node: start.node,
      build: start.build,
      startedAtMs: this.startedAtMs,
      tickMs: start.tickMs,
      payloads: start.payloads,
      after: this.stepNumber,
      at: pending.at,
      config: start.config,
      state: pending.state,
    };
    let text: string;
    try {
      // The state's values by their length alone (a replay has zeros in their place either way).
      text = encodeLine(line, start.payloads, LENGTHS_ONLY);
    } catch {
      this.checkpoints.skipped++;
      return;
    }
    const bytes = Buffer.byteLength(text) + RECORD_HEADER_BYTES;
    // Not over half a segment (segments would hold little else), and never a reason for a gap: a
    // checkpoint the buffer has no room for is skipped, and the steps go on being recorded.
    const room = start.limits.recordingBufferBytesMax - this.lines.bytes - this.queuedBytes;
    if (bytes > start.limits.recordingSegmentBytesMax * CHECKPOINT_SEGMENT_SHARE_MAX || bytes > room) {
      this.checkpoints.skipped++;
      return;
    }
    if (this.segmentSteps > 0) this.openSegment();
    this.append(text, 'the checkpoint line is over recordingSegmentBytesMax');
    Object.assign(this.checkpoints, {
      written: this.checkpoints.written + 1,
      lastExportMs: pending.exportMs,
      lastEncodeMs: performance.now() - began,
      lastBytes: bytes,
    });
  }

  get bytesOnDisk(): number {
    let total = 0;
    for (const size of this.sizes.values()) total += size;
    return total;
  }

  /** settled resolves once every line recorded so far is written (tests and close). */
  async settled(): Promise<void> {
    this.encodePending();
    this.flush();
    await this.pump();
  }

  /** close writes what is buffered and closes the segment (no fsync: a recording is not the node's data). */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.encodePending();
    // A gap noted on the last steps still gets its line, so a replay says where the recording stops.
    if (this.gapFrom > 0 && !this.stopped) this.writeGap();
    this.flush();
    this.stopped = true;
    clearInterval(this.timer);
    await this.pump();
    await this.handle?.close().catch(() => undefined);
    this.handle = null;
  }

  /** append takes in `line` (a JSON line, without its newline) as a record, in this segment or the next, or notes a gap. */
  private append(line: string, oversize: string): void {
    if (this.gapFrom > 0 && !this.writeGap()) return;
    // A line has at least as many bytes as chars: one surely over the segment is not staged at all.
    if (line.length + 512 > this.start.limits.recordingSegmentBytesMax) {
      this.noteGap(oversize);
      return;
    }
    this.lines.stage(line);
    this.admitStaged(oversize);
  }

  /** admitStaged takes in the staged record, in this segment or the next; false (a gap noted) when it cannot. */
  private admitStaged(oversize: string): boolean {
    const limits = this.start.limits;
    const bytes = this.lines.staged;
    if (bytes + 512 > limits.recordingSegmentBytesMax) {
      this.noteGap(oversize);
      return false;
    }
    if (this.lines.bytes + this.queuedBytes + bytes > limits.recordingBufferBytesMax) {
      this.noteGap('the recording buffer was full (the disk under the recording is slow)');
      return false;
    }
    // The records before this one are flushed into the segment they belong to; the staged one stays staged.
    if (this.segmentBytes + bytes > limits.recordingSegmentBytesMax) this.openSegment();
    this.lines.commit();
    this.segmentBytes += bytes;
    this.sizes.set(this.segment, this.segmentBytes);
    return true;
  }

  /** noteGap: steps from this one on are lost to the recording; the run cannot be replayed past it. */
  private noteGap(reason: string): void {
    if (this.gapFrom === 0) {
      this.gapFrom = this.stepNumber;
      this.gapReason = reason;
    }
  }

  /** writeGap writes the pending gap line once there is room; false while there is none. */
  private writeGap(): boolean {
    const gap: GapLine = { t: 'gap', n: this.gapFrom, at: this.now(), reason: this.gapReason };
    const bytes = this.lines.stage(JSON.stringify(gap));
    if (this.lines.bytes + this.queuedBytes + bytes > this.start.limits.recordingBufferBytesMax) return false;
    if (this.segmentBytes + bytes > this.start.limits.recordingSegmentBytesMax) this.openSegment();
    this.lines.commit();
    this.segmentBytes += bytes;
    this.sizes.set(this.segment, this.segmentBytes);
    // After a gap nothing of this run replays: stop recording it (a restart starts a new run).
    this.stopped = true;
    this.gapFrom = 0;
    this.flush();
    return false;
  }

  /** openSegment closes the current segment and opens the next, deleting the oldest to keep the bound. */
  private openSegment(): void {
    this.flush();
    const limits = this.start.limits;
    const index = this.segment + 1;
    const evict: string[] = [];
    let total = this.bytesOnDisk;
    for (const old of [...this.sizes.keys()].sort((a, b) => a - b)) {
      if (total + limits.recordingSegmentBytesMax <= limits.recordingBytesMax) break;
      total -= this.sizes.get(old)!;
      this.sizes.delete(old);
      evict.push(join(this.start.dir, segmentFileName(old)));
    }
    if (evict.length > 0) this.ops.push({ unlink: evict });
    const seg: SegmentLine = {
      t: 'seg',
      v: RECORDING_FORMAT_VERSION,
      run: this.run,
      node: this.start.node,
      index,
      firstStep: this.stepNumber + 1,
    };
    const first = jsonRecord(JSON.stringify(seg));
    this.segment = index;
    this.segmentSteps = 0;
    this.checkpointAsked = false;
    this.segmentBytes = first.length;
    this.sizes.set(index, this.segmentBytes);
    this.queuedBytes += this.segmentBytes;
    this.ops.push({ open: index, first });
    void this.pump();
  }

  private flush(): void {
    const lines = this.lines.take();
    if (lines === null) return;
    this.queuedBytes += lines.length;
    this.ops.push({ write: lines });
    void this.pump();
  }

  private pump(): Promise<void> {
    this.pumping ??= this.drain().finally(() => {
      this.pumping = null;
    });
    return this.pumping;
  }

  private async drain(): Promise<void> {
    while (this.ops.length > 0) {
      const op = this.ops.shift()!;
      try {
        if ('unlink' in op) {
          for (const file of op.unlink) await unlink(file).catch(() => undefined);
        } else if ('open' in op) {
          await this.handle?.close();
          this.handle = await open(join(this.start.dir, segmentFileName(op.open)), 'a');
          await writeAll(this.handle, op.first);
          this.queuedBytes -= op.first.length;
        } else {
          if (this.handle) await writeAll(this.handle, op.write);
          this.queuedBytes -= op.write.length;
        }
      } catch (error) {
        this.failed = true;
        this.ops.length = 0;
        this.start.onError?.(error as Error);
      }
    }
  }
}

/** writeAll writes every byte of `bytes` (a file write may take fewer than it was given). */
async function writeAll(handle: FileHandle, bytes: Buffer): Promise<void> {
  for (let at = 0; at < bytes.length;) at += (await handle.write(bytes, at, bytes.length - at)).bytesWritten;
}

/** loadKey reads the node's value-hash key, making one (mode 0600) at the first start. */
async function loadKey(file: string): Promise<RedactKey> {
  try {
    const key = await readFile(file);
    if (key.length >= 32) return key;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  const key = randomBytes(32);
  await mkdir(dirname(file), { recursive: true });
  await writeFile(file, key, { mode: 0o600 });
  return key;
}
