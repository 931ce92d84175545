// The flight recorder's CPU per engine step and per write, on a real leader's steps (not a test). A short
// 3-node cluster (`svc cluster`, mutual TLS, real fdatasync) is written to by --writers closed-loop writers
// with recording on, or --from takes members' recording directories recorded earlier (--keep DIR leaves the
// cluster's, so two builds can be timed on the same steps). Each run is replayed to rebuild every step's
// input and effects exactly as the node had them, and then a real FlightRecorder (record, carriedOut,
// encoding after its delay, buffered writes to a scratch folder, the checkpoint at rotation) is fed those
// steps in order, --runs times; the median CPU (user + system of the whole process, file writes on libuv's
// threads included) is printed per step and per write, with effect texts on (the default) and off.
//
// CPU, not wall time or throughput: on a shared machine a throughput ratio swings by more than the bar
// (bench/recording.ts), CPU time per step much less. The budget line is what the issue's bar allows: at
// most 5% of the CPU a leader spends per write (250–400 µs at 1 writer: bench/recording.ts --cpu-prof).
//
// --paced feeds the steps at the pace they were recorded (their wall times), not back to back: the recorder's
// timers and wake-ups happen as often as on the node (back to back, one timer firing covers hundreds of steps
// and the bench shows less than a node pays; a recorder that wakes the process itself shows here).
//
// --baseline CHECKOUT times another build's recorder in the same process on the same steps (CHECKOUT is a
// checkout of it, e.g. `git worktree add /tmp/base main`, with node_modules reachable): each round runs the
// no-recorder loop, this build's recorder and the baseline's, in turn, and the table gains this build's
// recorder CPU over the baseline's (median of the rounds' ratios), steadier on a shared machine than two
// runs' figures side by side.
//
//   npx tsx bench/recorder-step.ts [--writers 1] [--seconds 5] [--runs 7] [--paced] [--keep DIR] [--from DIR...]
//     [--baseline CHECKOUT]
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { readRecording, type RecordedRun } from '../recording/reader.js';
import { replayRun, type ReplayedStep } from '../sim/replay/replay.js';
import { FlightRecorder, recordingLimits, type StepRecorder } from '../transports/node/recorder.js';
import { closedLoop, payload } from './cluster/load.js';
import { startSvcCluster } from './cluster/svc-cluster.js';

const VALUE_CHARS = 96 - '{"d":""}'.length;
/** NODE_US_PER_WRITE: a leader's CPU per write at 1 writer, the low and high ends seen (the budget's base). */
const NODE_US_PER_WRITE = [250, 400] as const;
const BAR_SHARE = 0.05;
/**
 * STEPS_PER_TURN: a leader at 1 writer steps about one input per event-loop turn (each message arrives on
 * its own); the bench yields after each, and takes off the CPU of the same loop with no recorder.
 */
const STEPS_PER_TURN = 1;
const paced = process.argv.includes('--paced');

function numberArg(name: string, fallback: number): number {
  const at = process.argv.indexOf(`--${name}`);
  if (at < 0) return fallback;
  const value = Number(process.argv[at + 1]);
  if (!Number.isSafeInteger(value) || value <= 0) throw new Error(`--${name} needs a positive whole number`);
  return value;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? 0;
}

/** fromPaths: the arguments after --from, up to the next flag. */
function fromPaths(args: string[]): string[] {
  const end = args.findIndex((a) => a.startsWith('--'));
  return end < 0 ? args : args.slice(0, end);
}

async function recordCluster(dir: string, writers: number, seconds: number): Promise<string[]> {
  const cluster = await startSvcCluster(join(dir, 'cluster'));
  try {
    await closedLoop(writers, 1, seconds, (w, i) => cluster.put(`step/w${w}/${i}`, payload(VALUE_CHARS, i)));
  } finally {
    await cluster.stop();
  }
  return cluster.cluster.members.map((m) => join(dir, 'cluster', m.name, 'data', 'recording'));
}

/** writesIn counts the client writes among the steps' inputs (a propose is one, a batch its proposals). */
function writesIn(steps: readonly ReplayedStep[]): number {
  let writes = 0;
  for (const { input } of steps) {
    if (input.type === 'propose') writes++;
    else if (input.type === 'proposeBatch') writes += input.proposals.length;
  }
  return writes;
}

/** idle stands in for the recorder in the baseline loop (the bench's own turns, taken off each figure). */
const idle: StepRecorder & { close(): Promise<void> } = {
  record: () => undefined,
  carriedOut: () => undefined,
  close: () => Promise.resolve(),
};

/**
 * voluntarySwitches: the times this process has slept and been woken (/proc/self/status; NaN elsewhere).
 * With --paced, the extra ones a recorder causes (a timer of its own waking an idle process) are a count,
 * steadier on a shared machine than the CPU they cost.
 */
function voluntarySwitches(): number {
  try {
    return Number(/voluntary_ctxt_switches:\s+(\d+)/.exec(readFileSync('/proc/self/status', 'utf8'))?.[1] ?? NaN);
  } catch {
    return NaN;
  }
}

/** lastSwitches: the voluntary context switches of the last recorderCpuUs run. */
let lastSwitches = NaN;

type Recorders = Pick<typeof FlightRecorder, 'open'>;

/** recorderCpuUs is the CPU (µs) of one real FlightRecorder recording every step, from open to close. */
async function recorderCpuUs(
  dir: string,
  run: RecordedRun,
  steps: readonly ReplayedStep[],
  effectTexts: boolean | null,
  build: Recorders = FlightRecorder,
): Promise<number> {
  const head = run.head!;
  const recorder =
    effectTexts === null
      ? idle
      : await build.open({
          dir: join(dir, 'rec'),
          keyFile: join(dir, 'rec.key'),
          node: head.node,
          build: head.build,
          tickMs: head.tickMs,
          payloads: head.payloads,
          effectTexts,
          config: head.config,
          restored: head.restored,
          limits: recordingLimits(),
        });
  const switchesBefore = voluntarySwitches();
  const began = process.cpuUsage();
  const startedAt = performance.now();
  const firstAt = steps[0]?.atMs ?? 0;
  for (let i = 0; i < steps.length; i++) {
    const s = steps[i]!;
    if (paced) {
      const wait = startedAt + (s.atMs - firstAt) - performance.now();
      if (wait >= 1) await new Promise((resolve) => setTimeout(resolve, wait));
    }
    recorder.record(s.input, s.effects, s.tick);
    recorder.carriedOut();
    if (i % STEPS_PER_TURN === STEPS_PER_TURN - 1) await new Promise((resolve) => setImmediate(resolve));
  }
  // Until every line is written (the writes are the recorder's too); closing the file is once per run, not per step.
  if (recorder !== idle) await (recorder as FlightRecorder).settled();
  const used = process.cpuUsage(began);
  lastSwitches = voluntarySwitches() - switchesBefore;
  await recorder.close();
  await rm(join(dir, 'rec'), { recursive: true, force: true });
  return used.user + used.system;
}

async function main(): Promise<void> {
  const runs = numberArg('runs', 7);
  const from = process.argv.indexOf('--from');
  const keep = process.argv.indexOf('--keep');
  const baselineAt = process.argv.indexOf('--baseline');
  const baselineBuild: Recorders | null =
    baselineAt < 0
      ? null
      : (
          (await import(resolve(process.argv[baselineAt + 1]!, 'transports/node/recorder.ts'))) as {
            FlightRecorder: Recorders;
          }
        ).FlightRecorder;
  const dir = await mkdtemp(join(tmpdir(), 'svc-bench-recorder-step-'));
  try {
    const paths =
      from >= 0
        ? fromPaths(process.argv.slice(from + 1))
        : await recordCluster(
            keep >= 0 ? process.argv[keep + 1]! : dir,
            numberArg('writers', 1),
            numberArg('seconds', 5),
          );
    const [low, high] = NODE_US_PER_WRITE.map((us) => us * BAR_SHARE);
    console.log(
      `budget: ${BAR_SHARE * 100}% of a leader's ${NODE_US_PER_WRITE.join('–')} µs CPU per write = ${low}–${high} µs per write`,
    );
    const replayed: Array<{ run: RecordedRun; steps: ReplayedStep[]; diverged: boolean }> = [];
    for (const path of paths) {
      for (const run of readRecording(path)) {
        if (!run.head) continue;
        const replay = replayRun(run, { keepSteps: true });
        if (replay.steps.length > 0) replayed.push({ run, steps: replay.steps, diverged: replay.divergence !== null });
      }
    }
    // Every member carries every write: a follower's cost per write is over the leader's count.
    const writes = Math.max(0, ...replayed.map((r) => writesIn(r.steps)));
    console.log(
      `median of ${runs} runs (CPU of the whole process, user + system, less the same loop's with no recorder)${paced ? ', steps fed at their recorded pace' : ''}`,
    );
    console.log(
      `| member | steps | writes | steps/write | µs/step | µs/write | no texts µs/step | no texts µs/write | extra wake-ups (voluntary context switches, median of rounds) |${baselineBuild ? ' baseline µs/write | this / baseline (median of rounds) |' : ''}`,
    );
    console.log(`|---|---|---|---|---|---|---|---|---|${baselineBuild ? '---|---|' : ''}`);
    for (const { run, steps, diverged } of replayed) {
      const withTexts: number[] = [];
      const without: number[] = [];
      const baseline: number[] = [];
      const build = baselineBuild;
      const switches = { baseline: [] as number[], withTexts: [] as number[] };
      const other: number[] = [];
      await recorderCpuUs(dir, run, steps, true); // warm-up
      if (build) await recorderCpuUs(dir, run, steps, true, build);
      for (let r = 0; r < runs; r++) {
        baseline.push(await recorderCpuUs(dir, run, steps, null));
        switches.baseline.push(lastSwitches);
        // Which build goes first alternates round by round (a load swing hits both alike).
        if (build && r % 2 === 0) other.push(await recorderCpuUs(dir, run, steps, true, build));
        withTexts.push(await recorderCpuUs(dir, run, steps, true));
        switches.withTexts.push(lastSwitches);
        if (build && r % 2 === 1) other.push(await recorderCpuUs(dir, run, steps, true, build));
        without.push(await recorderCpuUs(dir, run, steps, false));
      }
      const loop = median(baseline);
      const f = (us: number): string => us.toFixed(1);
      const perWrite = (us: number): string => (writes === 0 ? '–' : f(us / writes));
      const a = Math.max(0, median(withTexts) - loop);
      const b = Math.max(0, median(without) - loop);
      const role = writesIn(steps) > 0 ? ' (leader)' : '';
      console.log(
        `| ${run.node}${role}${diverged ? ' (diverged)' : ''} | ${steps.length} | ${writes} | ${writes === 0 ? '–' : (steps.length / writes).toFixed(2)} | ${f(a / steps.length)} | ${perWrite(a)} | ${f(b / steps.length)} | ${perWrite(b)} | ${f(median(switches.withTexts.map((w, i) => w - switches.baseline[i]!)))} |${build ? ` ${perWrite(Math.max(0, median(other) - loop))} | ${median(withTexts.map((w, i) => (w - baseline[i]!) / Math.max(1, other[i]! - baseline[i]!))).toFixed(3)} |` : ''}`,
      );
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

await main();
