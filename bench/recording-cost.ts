// What the flight recorder's encoding costs per engine step, beside what the engine's step itself costs,
// measured on real steps (not a test): a 3-node cluster records under load (or --from DIR takes members'
// recording directories), each member's recording is replayed to get every step's input and effects, and
// then the recorder's per-step work (format 6's step record: input with values redacted, effects digest;
// effect texts, on by default, recording.effectTexts) and the engine's steps are each timed over the same steps,
// in the same process; `whole recorder` runs a real FlightRecorder (record, carriedOut, encode, buffered
// writes to a scratch folder) over the steps, which is what a node pays. Then one checkpoint of the engine
// at the last step is timed (exportState and its line), what the recorder pays once per segment. Ratios of CPU work in one
// process are steadier on a shared machine than throughput (bench/recording.ts measures that).
//
//   npx tsx bench/recording-cost.ts [--writers 64] [--seconds 3] [--repeat 20] [--keep DIR] [--from DIR...]
//   (--keep DIR records the cluster there and leaves it, for --from runs of another build on the same steps)
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { encodeLine } from '../recording/codec.js';
import { stepDigestV5Words } from '../recording/step-digest.js';
import { writeStepRecord } from '../recording/step-record.js';
import { RecordingLines } from '../transports/node/recording-lines.js';
import { readRecording } from '../recording/reader.js';
import { replayRun, type ReplayedStep } from '../sim/replay/replay.js';
import { Engine } from '../engine/engine.js';
import { FlightRecorder, recordingLimits } from '../transports/node/recorder.js';
import { closedLoop, payload } from './cluster/load.js';
import { startSvcCluster } from './cluster/svc-cluster.js';

const VALUE_CHARS = 96 - '{"d":""}'.length;
const KEY = new Uint8Array(32);

function numberArg(name: string, fallback: number): number {
  const at = process.argv.indexOf(`--${name}`);
  return at < 0 ? fallback : Number(process.argv[at + 1]);
}

async function recordCluster(dir: string, writers: number, seconds: number): Promise<string[]> {
  const cluster = await startSvcCluster(join(dir, 'cluster'));
  try {
    await closedLoop(writers, 1, seconds, (w, i) => cluster.put(`cost/w${w}/${i}`, payload(VALUE_CHARS, i)));
  } finally {
    await cluster.stop();
  }
  return cluster.cluster.members.map((m) => join(dir, 'cluster', m.name, 'data', 'recording'));
}

/** timeUs is the CPU time (user + system, not wall time: steadier on a shared machine) per step of `work`. */
function timeUs(repeat: number, steps: number, work: () => void): number {
  work();
  const began = process.cpuUsage();
  for (let r = 0; r < repeat; r++) work();
  const used = process.cpuUsage(began);
  return (used.user + used.system) / (repeat * steps);
}

/** wholeRecorderUs is the CPU per step of a real FlightRecorder recording `steps` (one step per turn). */
async function wholeRecorderUs(
  dir: string,
  head: NonNullable<ReturnType<typeof readRecording>[number]['head']>,
  steps: ReplayedStep[],
  repeat: number,
): Promise<number> {
  let total = 0;
  for (let r = 0; r <= repeat; r++) {
    const recorder = await FlightRecorder.open({
      dir: join(dir, `whole-${r}`),
      keyFile: join(dir, 'whole.key'),
      node: head.node,
      build: head.build,
      tickMs: head.tickMs,
      payloads: head.payloads,
      config: head.config,
      restored: head.restored,
      limits: recordingLimits({
        recordingBytesMax: 1 << 30,
        recordingSegmentBytesMax: 64 << 20,
        recordingBufferBytesMax: 256 << 20,
      }),
    });
    const began = process.cpuUsage();
    for (let i = 0; i < steps.length; i++) {
      const s = steps[i]!;
      recorder.record(s.input, s.effects, s.tick);
      recorder.carriedOut();
      // The driver steps one input per turn at most a few times in a row: yield every 16 steps.
      if (i % 16 === 15) await new Promise((resolve) => setImmediate(resolve));
    }
    await recorder.close();
    const used = process.cpuUsage(began);
    if (r > 0) total += used.user + used.system; // the first is the warm-up
    await rm(join(dir, `whole-${r}`), { recursive: true, force: true });
  }
  return total / (repeat * steps.length);
}

/** checkpointMs times Engine.exportState and the checkpoint's encoding at the end of the steps (once per segment). */
function checkpointMs(engine: Engine): { exportMs: number; encodeMs: number; bytes: number } {
  if (typeof (engine as { exportState?: unknown }).exportState !== 'function')
    return { exportMs: 0, encodeMs: 0, bytes: 0 };
  engine.exportState();
  const a = performance.now();
  const state = engine.exportState();
  const b = performance.now();
  const text = encodeLine({ t: 'ckpt', config: engine.config, state }, 'hashed', null);
  return { exportMs: b - a, encodeMs: performance.now() - b, bytes: text.length };
}

async function main(): Promise<void> {
  const repeat = numberArg('repeat', 20);
  const from = process.argv.indexOf('--from');
  const keep = process.argv.indexOf('--keep');
  const dir = await mkdtemp(join(tmpdir(), 'svc-bench-recording-cost-'));
  try {
    const paths =
      from >= 0
        ? process.argv.slice(from + 1).filter((a) => !a.startsWith('--'))
        : await recordCluster(
            keep >= 0 ? process.argv[keep + 1]! : dir,
            numberArg('writers', 64),
            numberArg('seconds', 3),
          );
    console.log(
      '| member | steps | engine µs/step | whole recorder µs/step | input record | digest | effect texts | whole recorder / engine | checkpoint: export ms, encode ms, bytes, log entries |',
    );
    console.log('|---|---|---|---|---|---|---|---|---|');
    for (const path of paths) {
      for (const run of readRecording(path)) {
        const head = run.head;
        if (!head) continue;
        const replay = replayRun(run, { keepSteps: true });
        const steps: ReplayedStep[] = replay.steps;
        if (steps.length === 0) continue;
        const mode = head.payloads;
        const engineUs = timeUs(repeat, steps.length, () => {
          const engine = new Engine(head.config, head.restored);
          for (const s of steps) engine.step(s.input);
        });
        // Format 5's parts: the step record without effect texts (its input), the digest, and what the
        // texts add to the record (recording/step-record.ts, recording/step-digest.ts).
        const lines = new RecordingLines();
        const words = new Int32Array(2);
        const recordUs = (texts: boolean): number =>
          timeUs(repeat, steps.length, () => {
            for (const s of steps) {
              // The step's effects either way, as the recorder passes them (a shipped frame's checksum is not
              // computed again when they show the engine took the frame).
              writeStepRecord(
                lines.begin(),
                s.n,
                s.tick,
                s.atMs,
                s.input,
                words,
                texts ? s.effects : null,
                mode,
                KEY,
                s.effects,
              );
              lines.commit();
              lines.take();
            }
          });
        const inputUs = recordUs(false);
        const digestUs = timeUs(repeat, steps.length, () => {
          for (const s of steps) stepDigestV5Words(s.effects, mode, words);
        });
        const textUs = Math.max(0, recordUs(true) - inputUs);
        const wholeUs = await wholeRecorderUs(dir, head, steps, Math.max(1, Math.floor(repeat / 4)));
        const last = new Engine(head.config, head.restored);
        for (const s of steps) last.step(s.input);
        const ckpt = checkpointMs(last);
        const f = (us: number): string => us.toFixed(1);
        console.log(
          `| ${run.node} | ${steps.length} | ${f(engineUs)} | ${f(wholeUs)} | ${f(inputUs)} | ${f(digestUs)} | ${f(textUs)} | ${(wholeUs / engineUs).toFixed(2)} | ${ckpt.exportMs.toFixed(1)}, ${ckpt.encodeMs.toFixed(1)}, ${ckpt.bytes}, ${last.entries().length} |`,
        );
      }
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

await main();
