// Format 2 changed how a step's digest and a value's hash are computed, format 4 the digest again, format
// 5 the digest and the file (binary records), format 6 a proposed batch's value hashes (one per batch);
// recordings of formats 1 to 5 (made by earlier builds, e.g. in
// a bundle a user sent) must still replay, each with its own digest, and a format this build does not know
// is refused with a message naming both.
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { encodeLine } from '../../recording/codec.js';
import { effectsDigest, effectsDigestV1 } from '../../recording/digest.js';
import { describeEffect } from '../../recording/describe.js';
import { segmentFileName } from '../../recording/format.js';
import { stepDigest, stepDigestV5 } from '../../recording/step-digest.js';
import { writeStepRecord } from '../../recording/step-record.js';
import { RecordingLines } from '../../transports/node/recording-lines.js';
import { readRecording } from '../../recording/reader.js';
import { replayRun } from '../../sim/replay/replay.js';
import { Engine } from '../../engine/engine.js';
import { emptyRestoredState } from '../../engine/restored.js';
import { soloConfig, soloHeadLines } from './solo-config.js';
import type { Effect, Input } from '../../engine/types.js';

const config = soloConfig({ electionTimeoutTicks: 2 });

/** recordingOf runs a single-node engine and writes its steps as a recording of `version`, digested by `digest`. */
async function recordingOf(
  dir: string,
  version: number,
  digest: (effects: readonly Effect[], mode: 'hashed') => string,
): Promise<number> {
  const key = new Uint8Array(32);
  const engine = new Engine(config, emptyRestoredState());
  const inputs: Input[] = [{ type: 'start' }];
  const effectsOf: Effect[][] = [];
  for (let i = 0; i < 12; i++) inputs.push({ type: 'tick' });
  for (let i = 1; i <= 5; i++) inputs.push({ type: 'propose', proposalId: i, data: new TextEncoder().encode(`v${i}`) });
  if (version >= 6) {
    const proposals = [6, 7, 8].map((i) => ({ proposalId: i, data: new TextEncoder().encode(`value ${i}`) }));
    inputs.push({ type: 'proposeBatch', proposals });
  }
  const lines = [
    ...soloHeadLines(version, config),
    ...inputs.map((input, i) => {
      const effects = engine.step(input);
      effectsOf.push(effects);
      return {
        t: 'step',
        n: i + 1,
        tick: i,
        at: 1_000 + i,
        in: input,
        d: digest(effects, 'hashed'),
        fx: effects.map(describeEffect),
      };
    }),
  ];
  if (version < 5) {
    await writeFile(join(dir, segmentFileName(1)), lines.map((l) => `${encodeLine(l, 'hashed', key)}\n`).join(''));
    return inputs.length;
  }
  // Format 5: records (recording/step-record.ts), written as the recorder writes them.
  const records = new RecordingLines();
  for (const line of lines) {
    if (line.t !== 'step') records.stage(encodeLine(line, 'hashed', key));
    else {
      const step = line as { n: number; tick: number; at: number; in: Input; d: string };
      const words = new Int32Array([parseInt(step.d.slice(0, 8), 16) | 0, parseInt(step.d.slice(8), 16) | 0]);
      writeStepRecord(
        records.begin(),
        step.n,
        step.tick,
        step.at,
        step.in,
        words,
        effectsOf[step.n - 1]!,
        'hashed',
        key,
      );
    }
    records.commit();
  }
  await writeFile(join(dir, segmentFileName(1)), records.take()!);
  return inputs.length;
}

describe('recording: format versions', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'svc-recording-format-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('a format 1 recording replays with format 1 digests at every step', async () => {
    const steps = await recordingOf(dir, 1, effectsDigestV1);
    const [run] = readRecording(dir);
    assert.equal(run!.version, 1);
    const replay = replayRun(run!);
    assert.equal(replay.divergence, null);
    assert.equal(replay.matched, steps);
  });

  it('a format 2 recording replays with format 2 digests, and a digest of the other format is a divergence', async () => {
    const steps = await recordingOf(dir, 2, effectsDigest);
    assert.equal(replayRun(readRecording(dir)[0]!).matched, steps);
    await recordingOf(dir, 1, effectsDigest);
    const mismatched = replayRun(readRecording(dir)[0]!);
    assert.equal(mismatched.divergence?.step, 1);
  });

  it('a format 3 recording replays with format 3 (format 2) digests; format 4 (JSON lines) with its own', async () => {
    const steps = await recordingOf(dir, 3, effectsDigest);
    assert.equal(replayRun(readRecording(dir)[0]!).matched, steps);
    await recordingOf(dir, 4, stepDigest);
    assert.equal(replayRun(readRecording(dir)[0]!).matched, steps);
    await recordingOf(dir, 4, effectsDigest);
    assert.equal(replayRun(readRecording(dir)[0]!).divergence?.step, 1);
  });

  it("format 5 (the recorder's binary records) replays with its own digests, texts and all; another digest is a divergence", async () => {
    const steps = await recordingOf(dir, 5, stepDigestV5);
    const [run] = readRecording(dir);
    assert.equal(run!.version, 5);
    assert.ok(run!.steps.every((s) => s.fx !== undefined && s.fx.length >= 0));
    const replay = replayRun(run!);
    assert.equal(replay.divergence, null);
    assert.equal(replay.matched, steps);
    await recordingOf(dir, 5, stepDigest);
    const mismatched = replayRun(readRecording(dir)[0]!);
    assert.equal(mismatched.divergence?.step, 1);
    // The node's own effect texts, read back from their facts, beside the replay's.
    assert.deepEqual(mismatched.divergence.recorded.effects, mismatched.divergence.replayed.effects);
  });

  it('format 6 (one keyed hash per proposed batch) replays with format 5 digests; another digest is a divergence', async () => {
    const steps = await recordingOf(dir, 6, stepDigestV5);
    const [run] = readRecording(dir);
    assert.equal(run!.version, 6);
    assert.equal(replayRun(run!).matched, steps);
    await recordingOf(dir, 6, stepDigest);
    assert.equal(replayRun(readRecording(dir)[0]!).divergence?.step, 1);
  });

  it('refuses a format it does not know, naming it and the ones it reads', async () => {
    await recordingOf(dir, 7, stepDigest);
    assert.throws(() => readRecording(dir), /is format 7; this build reads formats 1, 2, 3, 4, 5 and 6/);
  });
});
