// A replay that starts from a checkpoint taken between two ships of one segment frame. A leader encodes a
// frame once and hands the same bytes to every follower it ships those entries to (engine/core.ts
// framePayload, its memo). A checkpoint keeps byte strings as their lengths (the store's values must not
// enter a recording), so a memo that outlived its step rode in the checkpoint as zeros, and a replay from
// there shipped zeros where the node shipped the frame: a false divergence at the second ship. The memo is
// cleared as each step begins; this test finds such boundaries in simulated runs (every member's steps,
// recorded as the node's recorder records them: format 5 step records and a checkpoint line with values by
// length) and replays from each of them, in both payload modes.
//
// It passes with the memo kept between steps too (checked by reverting engine/core.ts's clearing): a
// checkpoint keeps a frame as its skeleton (recording/frame-redact.ts), which a replay re-encodes with zeros
// for the values and a valid checksum, the very bytes a replay from the run's start ships there, and the
// digest reads a frame's skeleton; in `full` mode the checkpoint keeps the bytes whole. So this pins that
// such a boundary replays exactly, whichever way the memo is kept.
import assert from 'node:assert/strict';
import { decodeLine, encodeLine, LENGTHS_ONLY } from '../../recording/codec.js';
import {
  RECORDING_FORMAT_VERSION,
  type CheckpointLine,
  type PayloadMode,
  type StepLine,
} from '../../recording/format.js';
import type { RecordedRun } from '../../recording/reader.js';
import { stepDigestV5Words } from '../../recording/step-digest.js';
import { readStepRecord, RECORD_HEADER_BYTES, writeStepRecord } from '../../recording/step-record.js';
import { Engine } from '../../engine/engine.js';
import type { Effect, EngineConfig, Input, RestoredState } from '../../engine/types.js';
import { optionsFor } from '../../sim/options.js';
import { replayRun } from '../../sim/replay/replay.js';
import { runSim } from '../../sim/run.js';
import type { EngineLike } from '../../sim/node.js';
import { RecordingLines } from '../../transports/node/recording-lines.js';

const KEY = new Uint8Array(32).fill(3);
/** STEPS_AFTER_MAX: how many steps after a boundary each replay runs (the second ship comes right after). */
const STEPS_AFTER_MAX = 40;
/** BOUNDARIES_PER_SEED_MAX bounds the replays a seed contributes. */
const BOUNDARIES_PER_SEED_MAX = 25;
const SEEDS = [2, 3, 4];

/** payloadsOf: the frame bytes a step shipped (stream chunks and ShipSegment calls). */
function payloadsOf(effects: readonly Effect[]): Uint8Array[] {
  const out: Uint8Array[] = [];
  for (const e of effects) {
    if (e.type === 'streamChunk' && e.chunk.payload.length > 0) out.push(e.chunk.payload);
    else if (e.type === 'send' && e.request.method === 'ShipSegment') out.push(e.request.body.payload);
  }
  return out;
}

const same = (a: Uint8Array, b: Uint8Array): boolean => Buffer.from(a).equals(Buffer.from(b));

/** Tape: one engine incarnation's steps, recorded as the node's recorder records them. */
class Tape implements EngineLike {
  readonly engine: Engine;
  readonly steps: StepLine[] = [];
  /** shipped: per step number, the frames it shipped; checkpoints: the state after a step that shipped one. */
  readonly shipped = new Map<number, Uint8Array[]>();
  readonly checkpoints = new Map<number, CheckpointLine>();
  private readonly lines = new RecordingLines();
  private readonly words = new Int32Array(2);

  constructor(
    readonly config: EngineConfig,
    restored: RestoredState,
    readonly mode: PayloadMode,
  ) {
    this.engine = new Engine(config, restored);
  }

  step(input: Input): Effect[] {
    const effects = this.engine.step(input);
    const n = this.steps.length + 1;
    stepDigestV5Words(effects, this.mode, this.words);
    writeStepRecord(this.lines.begin(), n, n, n, input, this.words, null, this.mode, KEY);
    this.lines.commit();
    const record = this.lines.take()!;
    this.steps.push(readStepRecord(record, RECORD_HEADER_BYTES, record.length));
    const payloads = payloadsOf(effects);
    if (payloads.length > 0) {
      this.shipped.set(n, payloads);
      // As the recorder writes it: the state right after the step, values by their length alone.
      const line = {
        t: 'ckpt',
        v: RECORDING_FORMAT_VERSION,
        run: 'r',
        node: this.config.name,
        build: 'test',
        startedAtMs: 0,
        tickMs: 10,
        payloads: this.mode,
        after: n,
        at: n,
        config: this.config,
        state: this.engine.exportState(),
      };
      this.checkpoints.set(n, decodeLine(encodeLine(line, this.mode, LENGTHS_ONLY)) as CheckpointLine);
    }
    return effects;
  }

  status: Engine['status'] = () => this.engine.status();
  entries: Engine['entries'] = () => this.engine.entries();
  snapshot: Engine['snapshot'] = () => this.engine.snapshot();
  snapshotExpectation: Engine['snapshotExpectation'] = () => this.engine.snapshotExpectation();

  /**
   * boundaries: the steps k after which the same frame is shipped again by step k + 1 (the step that
   * shipped it was k, and no other frame was shipped in between): a checkpoint after k is between two ships.
   */
  boundaries(): number[] {
    const out: number[] = [];
    for (const [k, payloads] of this.shipped) {
      const next = this.shipped.get(k + 1);
      if (next && next.some((p) => payloads.some((q) => same(p, q)))) out.push(k);
    }
    return out;
  }
}

describe('recording: a replay from a checkpoint between two ships of one segment frame', function () {
  this.timeout(200_000);

  for (const mode of ['hashed', 'full'] as const)
    it(`replays every step after such a checkpoint with the recorded digests (simulated members, ${mode} values)`, () => {
      let replayed = 0;
      for (const seed of SEEDS) {
        const tapes: Tape[] = [];
        runSim(optionsFor(seed, { 'safety-s': 10 }), {
          engineFactory: (config, restored) => {
            const tape = new Tape(config, restored, mode);
            tapes.push(tape);
            return tape;
          },
        });
        let fromSeed = 0;
        for (const tape of tapes) {
          for (const k of tape.boundaries()) {
            if (fromSeed >= BOUNDARIES_PER_SEED_MAX) break;
            const steps = tape.steps.slice(k, k + STEPS_AFTER_MAX);
            const run: RecordedRun = {
              run: 'r',
              node: tape.config.name,
              version: RECORDING_FORMAT_VERSION,
              head: null,
              checkpoint: tape.checkpoints.get(k)!,
              steps,
              gap: null,
              torn: 0,
              files: [],
            };
            const replay = replayRun(run);
            assert.equal(
              replay.divergence,
              null,
              `seed ${seed}, ${tape.config.name}, from the checkpoint after step ${k}: ${JSON.stringify(replay.divergence)}`,
            );
            assert.equal(replay.fromCheckpoint, k);
            assert.equal(replay.matched, steps.length);
            fromSeed++;
          }
        }
        replayed += fromSeed;
        process.stdout.write(`      seed ${seed}: ${fromSeed} checkpoints between two ships of one frame replayed\n`);
      }
      assert.ok(replayed > 0, 'the runs had checkpoints between two ships of one frame');
    });
});
