// The flight recorder's ring (transports/node/recorder.ts) on real files: it never holds more than its
// bound on disk, a restart appends a new run beside the old ones, and the store's values enter it only as
// keyed hashes (their lengths survive, so a replay feeds the engine zeros of the same size and a valid frame).
import assert from 'node:assert/strict';
import { readdir, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import fc from 'fast-check';
import { readRecording, readSegmentLines } from '../../recording/reader.js';
import { DEFAULT_LIMITS } from '../../engine/limits.js';
import { emptyRestoredState } from '../../engine/restored.js';
import { bootstrapRoster, encodeRoster } from '../../engine/roster.js';
import { decodeSegmentFrame, encodeSegmentFrame } from '../../engine/segment-frame.js';
import { EntryKind, type EngineConfig, type Input } from '../../engine/types.js';
import { Engine, type EngineState } from '../../engine/engine.js';
import { Driver, type DriverPorts } from '../../transports/node/driver.js';
import {
  CHECKPOINT_AT_SEGMENT_SHARE,
  FlightRecorder,
  recordingLimits,
  type RecordingLimits,
} from '../../transports/node/recorder.js';
import { replayRun } from '../../sim/replay/replay.js';
import { removeDir, tempDir, waitFor } from './harness.js';
import { soloConfig } from '../recording/solo-config.js';

const config: EngineConfig = soloConfig();
const roster = bootstrapRoster([{ name: 'solo', grpcAddr: '127.0.0.1:1', httpAddr: 'http://127.0.0.1:2' }]);

function open(
  dir: string,
  limits: Partial<RecordingLimits> = {},
  payloads: 'hashed' | 'full' = 'hashed',
  exportState?: () => EngineState,
  logEntryCount?: () => number,
) {
  return FlightRecorder.open({
    dir: join(dir, 'recording'),
    keyFile: join(dir, 'recording.key'),
    node: 'solo',
    build: 'test',
    tickMs: 100,
    payloads,
    config,
    restored: emptyRestoredState(),
    exportState,
    logEntryCount,
    limits: recordingLimits(limits),
  });
}

async function diskBytes(dir: string): Promise<number> {
  let total = 0;
  for (const name of await readdir(join(dir, 'recording'))) total += (await stat(join(dir, 'recording', name))).size;
  return total;
}

const text = (s: string): Uint8Array => new TextEncoder().encode(s);

describe('flight recorder: the ring on disk', function () {
  let dir: string;
  beforeEach(async () => {
    dir = await tempDir('recorder');
  });
  afterEach(async () => {
    await removeDir(dir);
  });

  it('never holds more than recordingBytesMax, whatever the steps and restarts (property)', async function () {
    const limits = { recordingBytesMax: 16_384, recordingSegmentBytesMax: 4_096, recordingFlushMs: 1 };
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.array(fc.integer({ min: 0, max: 2_700 }), { minLength: 1, maxLength: 60 }), {
          minLength: 1,
          maxLength: 3,
        }),
        // A checkpoint's size (a stand-in state): written at a segment's start, or skipped when too big.
        fc.integer({ min: 0, max: 3_000 }),
        async (runs, checkpointChars) => {
          const runDir = await tempDir('ring');
          const state = (): EngineState => ({ v: 1, tree: { pad: 'x'.repeat(checkpointChars) } });
          try {
            for (const sizes of runs) {
              const recorder = await open(runDir, limits, 'full', state);
              for (const [i, size] of sizes.entries()) {
                recorder.record({ type: 'propose', proposalId: i, data: new Uint8Array(size) }, [], i);
                recorder.carriedOut(); // as the driver does: a due checkpoint is taken here
                if (i % 7 === 0) {
                  await recorder.settled();
                  assert.ok((await diskBytes(runDir)) <= limits.recordingBytesMax);
                }
              }
              await recorder.close();
              assert.ok((await diskBytes(runDir)) <= limits.recordingBytesMax);
            }
          } finally {
            await removeDir(runDir);
          }
        },
      ),
      { numRuns: 15 },
    );
  });

  it('rotates by segment and deletes the oldest: the newest steps stay readable', async function () {
    const recorder = await open(dir, { recordingBytesMax: 16_384, recordingSegmentBytesMax: 4_096 });
    for (let i = 0; i < 2_000; i++) recorder.record({ type: 'tick' }, [], i);
    await recorder.close();
    assert.ok((await diskBytes(dir)) <= 16_384);
    const files = await readdir(join(dir, 'recording'));
    assert.ok(files.length >= 3, `rotated into several segments (${files.join(', ')})`);
    assert.ok(!files.includes('seg-000000000001.rec'), 'the oldest segment was deleted');
    const [run] = readRecording(join(dir, 'recording'));
    assert.equal(run!.head, null, 'the run line went with the first segment');
    assert.equal(run!.steps[run!.steps.length - 1]!.n, 2_000, 'the last step is there');
  });

  it('a restart appends a new run; the earlier run stays whole', async function () {
    const first = await open(dir);
    first.record({ type: 'start' }, [], 0);
    first.record({ type: 'tick' }, [], 1);
    await first.close();
    const second = await open(dir);
    second.record({ type: 'start' }, [], 0);
    await second.close();
    const runs = readRecording(join(dir, 'recording'));
    assert.equal(runs.length, 2);
    assert.notEqual(runs[0]!.run, runs[1]!.run);
    assert.deepEqual(
      runs.map((r) => [r.head?.node, r.steps.length]),
      [
        ['solo', 2],
        ['solo', 1],
      ],
    );
  });

  it("records the store's values as keyed hashes, never their bytes; lengths and frames survive for replay", async function () {
    const secret = text('the-secret-value-0123456789');
    const membership = encodeRoster(roster);
    const frame = encodeSegmentFrame({
      prevSeq: 0,
      prevTerm: 0,
      commitSeq: 0,
      entries: [
        { seq: 1, term: 1, kind: EntryKind.Membership, data: membership },
        { seq: 2, term: 1, kind: EntryKind.EventBatch, data: secret },
      ],
    });
    const inputs: Input[] = [
      { type: 'propose', proposalId: 1, data: secret },
      { type: 'proposeBatch', proposals: [{ proposalId: 2, data: Buffer.from(secret) }] },
      {
        type: 'request',
        callId: 1,
        request: {
          method: 'ShipSegment',
          body: {
            id: { regionId: 0, shardId: 0, seqno: 1 },
            payload: frame,
            eventCount: 2,
            leaderLastSeq: 2,
            streamBaseline: 0,
            term: 1,
            leaderRegion: 1,
          },
        },
      },
    ];
    const recorder = await open(dir);
    inputs.forEach((input, i) => recorder.record(input, [], i));
    await recorder.close();
    const files = await readdir(join(dir, 'recording'));
    // Format 5 is binary: the file's bytes are searched, for the value's bytes as well as their base64.
    const raw = await readFile(join(dir, 'recording', files[0]!));
    for (const form of ['the-secret-value', Buffer.from(secret).toString('base64').slice(0, 20)])
      assert.ok(!raw.includes(form), `the value is not in the recording (${form})`);
    const key = await readFile(join(dir, 'recording.key'));
    assert.ok(!raw.includes(key) && !raw.includes(key.toString('base64')), 'nor the key');

    const [run] = readRecording(join(dir, 'recording'));
    const [propose, batch, request] = run!.steps.map((s) => s.in);
    assert.deepEqual(propose, { type: 'propose', proposalId: 1, data: new Uint8Array(secret.length) });
    assert.equal((batch as Extract<Input, { type: 'proposeBatch' }>).proposals[0]!.data.length, secret.length);
    const payload = (request as Extract<Input, { type: 'request' }>).request.body as { payload: Uint8Array };
    const decoded = decodeSegmentFrame(payload.payload);
    assert.ok(decoded.ok, 'the replayed payload is a valid frame');
    assert.deepEqual(decoded.frame.entries[0]!.data, membership, 'a membership record is kept whole');
    assert.deepEqual(decoded.frame.entries[1]!.data, new Uint8Array(secret.length), 'a value is zeros of its length');
    assert.equal(payload.payload.length, frame.length);
  });

  it('a segment cut inside its last record (kill -9) loses that record only; a bad record inside is refused, naming it', async function () {
    const recorder = await open(dir);
    for (let i = 0; i < 5; i++) recorder.record({ type: 'propose', proposalId: i, data: text(`v${i}`) }, [], i);
    await recorder.close();
    const file = join(dir, 'recording', (await readdir(join(dir, 'recording')))[0]!);
    const whole = await readFile(file);
    for (const torn of [whole.subarray(0, whole.length - 3), Buffer.concat([whole, Buffer.alloc(7)])]) {
      await writeFile(file, torn);
      const [run] = readRecording(join(dir, 'recording'));
      assert.equal(run!.torn, 1);
      assert.equal(run!.steps.length, torn.length < whole.length ? 4 : 5);
    }
    // The third step's record with an input code no build writes: refused, with the file and the record's number.
    const bad = Buffer.from(whole);
    let at = 0;
    for (let record = 0; record < 4; record++) at += 5 + bad.readUInt32LE(at + 1);
    bad[at + 5 + 1 + 1 + 8 + 8] = 250;
    await writeFile(file, bad);
    assert.throws(
      () => readRecording(join(dir, 'recording')),
      /seg-000000000001\.rec record 5 is not a recording record: unknown input code 250/,
    );
  });

  it('with full payloads the values are recorded as they are', async function () {
    const recorder = await open(dir, {}, 'full');
    recorder.record({ type: 'propose', proposalId: 1, data: text('visible') }, [], 0);
    await recorder.close();
    const [run] = readRecording(join(dir, 'recording'));
    assert.deepEqual(run!.steps[0]!.in, { type: 'propose', proposalId: 1, data: text('visible') });
    assert.equal(run!.head!.payloads, 'full');
  });

  it('a step over the segment size ends the run with a gap line, and the node goes on', async function () {
    const recorder = await open(dir, { recordingSegmentBytesMax: 4_096, recordingBytesMax: 8_192 }, 'full');
    recorder.record({ type: 'tick' }, [], 1);
    recorder.record({ type: 'propose', proposalId: 1, data: new Uint8Array(10_000) }, [], 1);
    recorder.record({ type: 'tick' }, [], 2);
    await recorder.close();
    const [run] = readRecording(join(dir, 'recording'));
    assert.equal(run!.steps.length, 1);
    assert.equal(run!.gap?.n, 2);
    assert.match(run!.gap!.reason, /over recordingSegmentBytesMax/);
    const lines = readSegmentLines(join(dir, 'recording', (await readdir(join(dir, 'recording')))[0]!));
    assert.deepEqual(
      lines.map((l) => l.t),
      ['seg', 'run', 'step', 'gap'],
    );
  });

  it('a gap on the last step is written when the recorder closes', async function () {
    const recorder = await open(dir, { recordingSegmentBytesMax: 4_096, recordingBytesMax: 8_192 }, 'full');
    recorder.record({ type: 'tick' }, [], 1);
    recorder.record({ type: 'propose', proposalId: 1, data: new Uint8Array(10_000) }, [], 1);
    await recorder.close();
    const [run] = readRecording(join(dir, 'recording'));
    assert.equal(run!.gap?.n, 2);
  });

  /** openTimed opens a recorder with its own clock and limits (the batch and flush tests). */
  function openTimed(limits: Partial<RecordingLimits>, now: () => number) {
    return FlightRecorder.open({
      dir: join(dir, 'recording'),
      keyFile: join(dir, 'recording.key'),
      node: 'solo',
      build: 'test',
      tickMs: 100,
      payloads: 'hashed',
      config,
      restored: emptyRestoredState(),
      limits: recordingLimits(limits),
      now,
    });
  }
  const turn = (): Promise<void> => new Promise<void>((resolve) => setImmediate(resolve));

  it('record() only queues: fewer than recordingEncodeBatchSteps carried-out steps are encoded by the flush timer, in one batch, with the wall times they ran at; a step not yet carried out is not', async function () {
    let clock = 5_000;
    const recorder = await openTimed({ recordingEncodeBatchSteps: 4, recordingFlushMs: 20 }, () => clock);
    const before = recorder.bytesOnDisk;
    recorder.record({ type: 'propose', proposalId: 1, data: text('queued') }, [], 3);
    // The driver carries out the step's effects after record(), then says so: nothing is encoded before.
    assert.equal(recorder.bytesOnDisk, before, 'record() encoded the step on the spot');
    clock = 9_000;
    recorder.carriedOut();
    recorder.record({ type: 'tick' }, [], 4);
    recorder.carriedOut();
    // A third step whose effects wait on its hard-state sync: queued, not carried out.
    recorder.record({ type: 'tick' }, [], 5);
    await turn();
    assert.equal(recorder.bytesOnDisk, before, 'two steps (under the batch) were encoded at the end of their turn');
    await waitFor(() => recorder.bytesOnDisk > before, 'the flush timer to encode the carried-out steps');
    await recorder.settled();
    const [run] = readRecording(join(dir, 'recording'));
    assert.deepEqual(
      run!.steps.map((s) => [s.n, s.tick, s.at]),
      [
        [1, 3, 5_000],
        [2, 4, 9_000],
        [3, 5, 9_000],
      ],
    );
    await recorder.close();
  });

  it('the flush timer leaves a step whose effects are not carried out queued; carriedOut() lets the next flush take it', async function () {
    const recorder = await openTimed({ recordingEncodeBatchSteps: 64, recordingFlushMs: 5 }, () => 1_000);
    recorder.record({ type: 'tick' }, [], 1);
    recorder.carriedOut();
    recorder.record({ type: 'tick' }, [], 2);
    const afterRun = recorder.bytesOnDisk;
    await waitFor(() => recorder.bytesOnDisk > afterRun, 'the flush timer to encode the first step');
    const oneStep = recorder.bytesOnDisk;
    // Several flushes go by (counted, not slept through): the second step (its sync still running) stays queued.
    const flushes = recorder.timerFlushes;
    await waitFor(() => recorder.timerFlushes >= flushes + 3, 'three more runs of the flush timer');
    assert.equal(recorder.bytesOnDisk, oneStep, 'a step was encoded before its effects were carried out');
    recorder.carriedOut();
    await waitFor(() => recorder.bytesOnDisk > oneStep, 'the flush timer to encode the second step');
    await recorder.close();
    const [run] = readRecording(join(dir, 'recording'));
    assert.deepEqual(
      run!.steps.map((s) => [s.n, s.tick]),
      [
        [1, 1],
        [2, 2],
      ],
    );
  });

  it('recordingEncodeBatchSteps carried-out steps are encoded at the end of their turn, without the flush timer', async function () {
    const recorder = await openTimed(
      // A flush timer that never fires within the test.
      { recordingEncodeBatchSteps: 3, recordingFlushMs: 3_600_000 },
      () => 7_000,
    );
    const before = recorder.bytesOnDisk;
    for (let i = 1; i <= 3; i++) {
      recorder.record({ type: 'tick' }, [], i);
      recorder.carriedOut(); // once armed, the turn's further steps ride the same encoding
    }
    assert.equal(recorder.bytesOnDisk, before, 'carriedOut() encoded within the turn');
    await turn();
    assert.ok(recorder.bytesOnDisk > before, 'a batch was not encoded at the end of its turn');
    await recorder.close();
    const [run] = readRecording(join(dir, 'recording'));
    assert.deepEqual(
      run!.steps.map((s) => s.n),
      [1, 2, 3],
    );
  });

  it("takes a due checkpoint once the step's effects are carried out, not in record() (the export's pause stays behind them)", async function () {
    let exports = 0;
    const state = (): EngineState => {
      exports++;
      return { v: 1, tree: {} };
    };
    const recorder = await open(dir, { recordingSegmentBytesMax: 4_096, recordingBytesMax: 16_384 }, 'full', state);
    let i = 0;
    // Steps of 500 bytes until the segment is seven eighths full: a checkpoint is then due.
    while (recorder.bytesOnDisk < 4_096 * CHECKPOINT_AT_SEGMENT_SHARE) {
      recorder.record({ type: 'propose', proposalId: ++i, data: new Uint8Array(500) }, [], i);
      recorder.carriedOut();
      await recorder.settled();
    }
    assert.equal(exports, 0);
    recorder.record({ type: 'propose', proposalId: ++i, data: new Uint8Array(500) }, [], i);
    assert.equal(exports, 0, 'record() exported the state before the step was carried out');
    recorder.carriedOut();
    assert.equal(exports, 1);
    await recorder.close();
    const runs = readRecording(join(dir, 'recording'));
    assert.equal(runs.length, 1);
    assert.equal(recorder.checkpoints.written, 1);
  });

  /** checkpointRig: a recorder whose state export counts itself, stepped one ~550-byte propose at a time. */
  async function checkpointRig(
    limits: Partial<RecordingLimits>,
    logEntryCount: () => number,
    afterStep: () => void = () => undefined,
  ) {
    let exports = 0;
    const state = (): EngineState => {
      exports++;
      return { v: 1, tree: {} };
    };
    const recorder = await open(dir, limits, 'full', state, logEntryCount);
    let steps = 0;
    const step = async (): Promise<void> => {
      recorder.record({ type: 'propose', proposalId: ++steps, data: new Uint8Array(500) }, [], steps);
      recorder.carriedOut();
      await recorder.settled();
      afterStep();
    };
    return { recorder, step, exports: () => exports, steps: () => steps };
  }

  it("a due checkpoint waits while the engine's log is over recordingCheckpointLogEntriesMax, and is taken at the first step after it shrinks", async function () {
    let logEntries = 50_000;
    const limits = {
      recordingSegmentBytesMax: 4_096,
      recordingBytesMax: 8_192,
      recordingCheckpointLogEntriesMax: 1_000,
    };
    const { recorder, step, exports, steps } = await checkpointRig(limits, () => logEntries);
    // Steps of ~550 bytes: past the point where a checkpoint is due (7/8 of the first segment), and on through
    // three more segments, so the run's start rotates out of the two-segment ring.
    while (steps() < 30) await step();
    assert.equal(exports(), 0, 'the state was exported while the log was over the limit');
    assert.equal(recorder.checkpoints.deferred, 1);
    logEntries = 1_000;
    await step();
    assert.equal(exports(), 1, 'the checkpoint was not taken once the log was short again');
    await step();
    assert.equal(exports(), 1);
    await recorder.close();
    assert.equal(recorder.checkpoints.written, 1);
    assert.equal(recorder.checkpoints.deferred, 1);
    // The run's start is gone from the ring; the checkpoint taken late is what a replay starts from.
    const runs = readRecording(join(dir, 'recording'));
    assert.equal(runs.length, 1);
    assert.equal(runs[0]!.head, null);
    assert.equal(
      runs[0]!.checkpoint?.after,
      steps() - 1,
      'the checkpoint is not the state after the step that took it',
    );
  });

  it('a waiting checkpoint is taken at the first step after the log shrank, even when it is still over the limit', async function () {
    // A sustained load: the log grows by 100 entries a step, and a compaction leaves it at 30,000 (the entries
    // applied while the snapshot was staged), over the limit of 10,000.
    let logEntries = 100_000;
    const limits = { recordingSegmentBytesMax: 4_096, recordingBytesMax: 8_192 };
    const { recorder, step, exports, steps } = await checkpointRig(
      limits,
      () => logEntries,
      () => (logEntries += 100),
    );
    while (steps() < 30) await step();
    assert.equal(exports(), 0, 'the state was exported while the log only grew');
    assert.equal(recorder.checkpoints.deferred, 1);
    logEntries = 30_000;
    await step();
    assert.equal(exports(), 1, 'the checkpoint still waited after a compaction left the log over the limit');
    await step();
    assert.equal(exports(), 1);
    await recorder.close();
    const runs = readRecording(join(dir, 'recording'));
    assert.equal(
      runs[0]!.checkpoint?.after,
      steps() - 1,
      'the checkpoint is not the state after the step that took it',
    );
  });

  it('refuses a batch larger than the queue it must fit in', function () {
    assert.throws(
      () => recordingLimits({ recordingEncodeBatchSteps: 10, recordingPendingStepsMax: 5 }),
      /recordingEncodeBatchSteps must be at most recordingPendingStepsMax/,
    );
  });

  it('more steps queued in one turn than recordingPendingStepsMax end the run with a gap', async function () {
    const recorder = await open(dir, { recordingPendingStepsMax: 5, recordingEncodeBatchSteps: 5 });
    for (let i = 0; i < 9; i++) recorder.record({ type: 'tick' }, [], i);
    await recorder.close();
    const [run] = readRecording(join(dir, 'recording'));
    assert.equal(run!.steps.length, 5);
    assert.equal(run!.gap?.n, 6);
    assert.match(run!.gap!.reason, /recordingPendingStepsMax/);
  });

  it('refuses limits that cannot hold a bound', function () {
    assert.throws(() => recordingLimits({ recordingBytesMax: 4_096, recordingSegmentBytesMax: 4_096 }), /twice/);
    assert.throws(() => recordingLimits({ recordingSegmentBytesMax: 100 }), /at least 4096/);
  });

  it('records every step the driver runs, in order, and the run replays with the same digest at every step', async function () {
    const { steps } = await driveSolo(dir, recordingLimits(), () => false, 20);
    const [run] = readRecording(join(dir, 'recording'));
    assert.equal(run!.steps.length, steps, 'one line per step');
    assert.deepEqual(
      run!.steps.map((s) => s.n),
      run!.steps.map((_, i) => i + 1),
    );
    const replay = replayRun(run!);
    assert.equal(replay.divergence, null);
    assert.equal(replay.matched, steps);
    assert.equal(replay.fromCheckpoint, 0);
  });

  it('starts each later segment with a checkpoint: once the run start rotates out, the rest replays from the earliest one', async function () {
    const limits = recordingLimits({ recordingSegmentBytesMax: 128 * 1024, recordingBytesMax: 320 * 1024 });
    const { steps, recorder } = await driveSolo(dir, limits, (r) => r.checkpoints.written >= 2, 20_000);
    assert.ok(recorder.checkpoints.written >= 2, `checkpoints written: ${recorder.checkpoints.written}`);
    const files = (await readdir(join(dir, 'recording'))).sort();
    const [run] = readRecording(join(dir, 'recording'));
    assert.equal(run!.head, null, 'the run line rotated out of the ring');
    // Every segment left starts with its checkpoint, right after the segment line.
    for (const name of files) {
      const lines = readSegmentLines(join(dir, 'recording', name));
      assert.equal(lines[1]!.t, 'ckpt', `${name} starts with a checkpoint`);
    }
    const replay = replayRun(run!);
    assert.equal(replay.divergence, null);
    assert.ok(replay.fromCheckpoint > 0);
    assert.equal(replay.matched, steps - replay.fromCheckpoint, 'every step after the checkpoint replays');
    assert.equal(run!.steps[run!.steps.length - 1]!.n, steps);
    process.stdout.write(
      `      ${steps} steps, ${files.length} segments left, replayed from the checkpoint after step ${replay.fromCheckpoint}: ${replay.matched} identical; last checkpoint ${recorder.checkpoints.lastBytes} bytes, export ${recorder.checkpoints.lastExportMs.toFixed(2)} ms, encode ${recorder.checkpoints.lastEncodeMs.toFixed(2)} ms\n`,
    );
  });
});

/**
 * driveSolo runs a one-node driver with a recorder (checkpoints on when `enough` can say yes) and proposes
 * until `enough` or `proposalsMax`, then stops both.
 */
async function driveSolo(
  dir: string,
  limits: RecordingLimits,
  enough: (recorder: FlightRecorder) => boolean,
  proposalsMax: number,
): Promise<{ steps: number; recorder: FlightRecorder }> {
  const checkpoints = proposalsMax > 100;
  // With checkpoints, snapshots keep the log (and so each checkpoint) short, as on a real node: a state that
  // grew with every segment would soon be over half a segment, and not be written.
  const engineConfig = {
    ...config,
    limits: checkpoints
      ? {
          ...DEFAULT_LIMITS,
          electionTimeoutTicks: 2,
          snapshotEntryCountThreshold: 100,
          snapshotLogBytesPercentMin: 0,
          compactionRetainEntryCount: 20,
        }
      : { ...DEFAULT_LIMITS, electionTimeoutTicks: 2 },
  };
  const engine = new Engine(engineConfig, emptyRestoredState());
  const recorder = await FlightRecorder.open({
    dir: join(dir, 'recording'),
    keyFile: join(dir, 'recording.key'),
    node: 'solo',
    build: 'test',
    tickMs: 2,
    payloads: 'hashed',
    config: engineConfig,
    restored: emptyRestoredState(),
    exportState: checkpoints ? () => engine.exportState() : undefined,
    limits,
  });
  const results: string[] = [];
  const ports: DriverPorts = {
    saveHardState: () => Promise.resolve(),
    resetStateMachine: () => undefined,
    appendLog: () => Promise.resolve(),
    send: () => undefined,
    answer: () => undefined,
    fetchSnapshot: () => undefined,
    apply: () => undefined,
    // A snapshot is staged at once (there is no state machine to capture here).
    stageSnapshot: (meta) =>
      driver.submit({
        type: 'snapshotStaged',
        meta,
        header: { needed: true, snapshotSeq: meta.seq, term: meta.entryTerm, leaderRegion: 0, files: [] },
      }),
    compactLog: () => undefined,
    pollStatus: () => undefined,
    observe: (effect) => {
      if (effect.type === 'proposalResult') results.push(effect.code);
    },
    stats: () => ({ entityCount: 0, signalThroughputEps: 0, diskBytes: 0, nowNs: String(Date.now() * 1e6) }),
    stepped: () => undefined,
    fail: (err) => assert.fail(err),
  };
  const driver = new Driver(engine, ports, { tickMs: 2, inputQueueCountMax: 1_000, recorder });
  driver.start();
  await waitFor(() => driver.status().role === 'leader', 'the single node to lead', 10_000);
  let proposals = 0;
  while (proposals < proposalsMax && !enough(recorder)) {
    driver.submit({ type: 'propose', proposalId: ++proposals, data: text(`value-${proposals}`) });
    // A few at a time: the driver's input queue is bounded.
    if (proposals % 100 === 0) {
      await waitFor(() => results.length === proposals, 'the proposals so far answered', 10_000);
      await recorder.settled();
    }
  }
  await waitFor(() => results.length === proposals, `${proposals} proposals answered`, 20_000);
  await driver.stop();
  await recorder.close();
  assert.deepEqual(new Set(results), new Set(['committed']));
  return { steps: driver.steps, recorder };
}
