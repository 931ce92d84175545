// What the flight recorder's encoding costs per engine step, beside what the engine's step itself costs,
// measured on real steps (not a test): a 3-node cluster records under load (or --from DIR takes members'
// recording directories), each member's recording is replayed to get every step's input and effects, and
// then the recorder's per-step work (the line: input with values redacted, effects digest, effect texts)
// and the engine's steps are each timed over the same steps, in the same process. Ratios of CPU work in one
// process are steadier on a shared machine than throughput (bench/recording.ts measures that).
//
//   npx tsx bench/recording-cost.ts [--writers 64] [--seconds 3] [--repeat 20] [--from DIR...]
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { encodeLine } from '../recording/codec.js';
import { describeEffect } from '../recording/describe.js';
import { effectsDigest } from '../recording/digest.js';
import { readRecording } from '../recording/reader.js';
import { replayRun, type ReplayedStep } from '../sim/replay/replay.js';
import { Engine } from '../engine/engine.js';
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

async function main(): Promise<void> {
  const repeat = numberArg('repeat', 20);
  const from = process.argv.indexOf('--from');
  const dir = await mkdtemp(join(tmpdir(), 'svc-bench-recording-cost-'));
  try {
    const paths =
      from >= 0
        ? process.argv.slice(from + 1).filter((a) => !a.startsWith('--'))
        : await recordCluster(dir, numberArg('writers', 64), numberArg('seconds', 3));
    console.log(
      '| member | steps | engine µs/step | recorder µs/step | input line | digest | effect texts | recorder / engine |',
    );
    console.log('|---|---|---|---|---|---|---|---|');
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
        const inputUs = timeUs(repeat, steps.length, () => {
          for (const s of steps) encodeLine({ t: 'step', n: s.n, tick: s.tick, at: s.atMs, in: s.input }, mode, KEY);
        });
        const digestUs = timeUs(repeat, steps.length, () => {
          for (const s of steps) effectsDigest(s.effects, mode);
        });
        const textUs = timeUs(repeat, steps.length, () => {
          for (const s of steps) JSON.stringify(s.effects.map(describeEffect));
        });
        const recorderUs = inputUs + digestUs + textUs;
        const f = (us: number): string => us.toFixed(1);
        console.log(
          `| ${run.node} | ${steps.length} | ${f(engineUs)} | ${f(recorderUs)} | ${f(inputUs)} | ${f(digestUs)} | ${f(textUs)} | ${(recorderUs / engineUs).toFixed(2)} |`,
        );
      }
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

await main();
