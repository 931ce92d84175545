// The flight recorder's file format (docs/operations.md, "Flight recorder"): what a real node's driver
// writes (transports/node/recorder.ts) and what the simulator replays (sim/replay/). It lives in its
// own folder because both sides need it and neither may import the other (eslint.config.js).
//
// A recording directory holds segment files `seg-<12 digits>.rec`, numbered across runs. Each holds a
// `seg` line first, then, in the first segment of a run, the `run` line (the engine's config and the
// restored state it started from), then one `step` line per Engine.step, in order. A node restart starts
// a new run in a new segment. From format 3 each later segment of a run starts with a `ckpt` line (the
// engine's whole state after the step before it, Engine.exportState): once the run's first segment has
// rotated out of the ring, a replay starts from the earliest checkpoint left. A `gap` line says steps were
// not recorded (the buffer was full, a line was over the segment size, more steps were queued than the
// recorder takes): the run cannot be replayed past it.
//
// Formats 1 to 4 write each line as JSON (recording/codec.ts), a line of text each. Formats 5 and 6 write
// length-prefixed records (recording/step-record.ts): the seg, run, ckpt and gap lines as the same JSON, a
// step as binary fields, read back (recording/reader.ts) as the StepLine below.
import type { EngineState } from '../engine/engine.js';
import type { EngineConfig, Input, RestoredState } from '../engine/types.js';

/**
 * RECORDING_FORMAT_VERSION is what this build writes. 6: format 5 with a proposeBatch's values (hashed
 * mode) recorded as their lengths and one keyed hash of the whole batch (recording/codec.ts
 * batchValueHashLatin1), not a hash per value: one hash call a batch rather than one a write, most of a
 * 64-writer leader's recording CPU (bench/recorder-step.ts). 5: binary step records (recording/step-record.ts) and
 * the step digest read field by field (recording/step-digest.ts stepDigestV5), about half format 4's CPU
 * (bench/recorder-step.ts). 4: the step digest is recording/step-digest.ts stepDigest (the same canonical
 * form in fewer words, about half format 2's CPU). 3: checkpoint lines (a segment replays on its
 * own). 2: the step digest is recording/canonical-hash.ts over the canonical effects and value hashes are
 * keyed SHA-256. 1 (SHA-1 of the canonical JSON, HMAC value hashes). Formats 1 to 5 are still read and
 * replayed (READABLE_FORMAT_VERSIONS); a newer one is refused, naming it (recording/reader.ts).
 */
export const RECORDING_FORMAT_VERSION = 6;
export const READABLE_FORMAT_VERSIONS: readonly number[] = [1, 2, 3, 4, 5, 6];

/** PayloadMode: `hashed` (the default) records the store's values as keyed hashes; `full` records them. */
export type PayloadMode = 'hashed' | 'full';
export const PAYLOAD_MODES: readonly PayloadMode[] = ['hashed', 'full'];

/** SEGMENT_FILE matches a segment file's name; its number orders segments across runs. */
export const SEGMENT_FILE = /^seg-(\d{12})\.rec$/;

export function segmentFileName(index: number): string {
  return `seg-${String(index).padStart(12, '0')}.rec`;
}

export interface SegmentLine {
  t: 'seg';
  v: number;
  /** run names the node run this segment belongs to (a restart starts a new run). */
  run: string;
  /** node is the member name. */
  node: string;
  /** index is the segment's number (its file name). */
  index: number;
  /** firstStep is the step number of the segment's first step line. */
  firstStep: number;
}

/** RunIdentity is what a run line and a checkpoint line both say of the run they belong to. */
export interface RunIdentity {
  v: number;
  run: string;
  node: string;
  /** build is the node's build version: a replay with another engine build may diverge for that reason alone. */
  build: string;
  startedAtMs: number;
  /** tickMs is the wall length of one tick on this node (engine timeouts count ticks). */
  tickMs: number;
  payloads: PayloadMode;
}

export interface RunLine extends RunIdentity {
  t: 'run';
  config: EngineConfig;
  restored: RestoredState;
}

export interface StepLine {
  t: 'step';
  /** n numbers the steps of a run from 1. */
  n: number;
  /** tick is the driver's tick count when the step ran (the engine's clock). */
  tick: number;
  /** at is the wall time of the step, ms since the epoch. */
  at: number;
  in: Input;
  /** d is the effects digest (recording/digest.ts; how it is computed depends on the format version). */
  d: string;
  /**
   * fx describes each effect (recording/describe.ts): for people reading a divergence beside the replay's own
   * list, never compared (the digest is). Optional: a recording may leave it out.
   */
  fx?: string[];
}

export interface GapLine {
  t: 'gap';
  /** n is the first step number not recorded. */
  n: number;
  at: number;
  reason: string;
}

/**
 * CheckpointLine (format 3) is the engine's whole state after step `after` (Engine.exportState, values
 * hashed like the inputs'), with what the run line says of the run: a replay can start from it when the
 * run's start has rotated out. It is written when a segment fills, as the next segment's first line.
 */
export interface CheckpointLine extends RunIdentity {
  t: 'ckpt';
  /** after is the number of the last step the state includes; the replay starts at after + 1. */
  after: number;
  /** at is the wall time the state was taken, ms since the epoch. */
  at: number;
  config: EngineConfig;
  state: EngineState;
}

export type RecordingLine = SegmentLine | RunLine | StepLine | GapLine | CheckpointLine;
