// replayRun: rebuild a recorded engine from the start state its node recorded (or, once the run's start
// has rotated out of the ring, from the earliest checkpoint left: Engine.fromState), feed it the recorded
// inputs in order, and compare each step's effects digest with the one the node wrote (recording/). The
// engine is deterministic, so the same build must give the same digest at every step; the first step
// that does not is a determinism bug (or another build: the run line names the node's).
import { canonicalEffects, effectsDigestFor } from '../../recording/digest.js';
import { describeEffect } from '../../recording/describe.js';
import { encodeLine } from '../../recording/codec.js';
import type { CheckpointLine, RunLine, StepLine } from '../../recording/format.js';
import type { RecordedRun } from '../../recording/reader.js';
import { Engine, type EngineState } from '../../engine/engine.js';
import type { Effect, EngineConfig, Input, RestoredState } from '../../engine/types.js';

/** Steppable is what replay drives: the engine, or a test's wrapper around it. */
export interface Steppable {
  step(input: Input): Effect[];
}

export type ReplayEngineFactory = (config: EngineConfig, restored: RestoredState) => Steppable;

export const realReplayEngine: ReplayEngineFactory = (config, restored) => new Engine(config, restored);

/** ReplayStateFactory builds the engine a replay from a checkpoint starts with. */
export type ReplayStateFactory = (config: EngineConfig, state: EngineState) => Steppable;

export const realReplayStateEngine: ReplayStateFactory = (config, state) => Engine.fromState(config, state);

export interface Divergence {
  node: string;
  run: string;
  step: number;
  tick: number;
  atMs: number;
  /** input is the step's input as recorded (values redacted). */
  input: string;
  recorded: { digest: string; effects: string[] };
  replayed: { digest: string; effects: string[]; canonical: string };
}

/** ReplayedStep is one step with the effects the replay produced (for the checkers and the viewer). */
export interface ReplayedStep {
  n: number;
  tick: number;
  atMs: number;
  input: Input;
  effects: Effect[];
}

export interface RunReplay {
  node: string;
  run: string;
  build: string;
  startedAtMs: number;
  /** recorded counts the step lines the recording holds for this run. */
  recorded: number;
  /** matched counts the steps replayed with the recorded digest. */
  matched: number;
  /** skipped says why the run was not replayed (its start state rotated out), '' when it was. */
  skipped: string;
  /**
   * fromCheckpoint: the run's start had rotated out and the replay started from the checkpoint taken after
   * this step (its steps up to it are not replayed); 0 when it started from the run's start.
   */
  fromCheckpoint: number;
  /** gap: the recording stopped at this step (its reason), '' when it did not. */
  gap: string;
  divergence: Divergence | null;
  /** steps holds every replayed step when keepSteps was asked for (checkers, viewer, scenario). */
  steps: ReplayedStep[];
  /** memberId is the node's member id at the run's start (0 for a joiner not yet admitted). */
  memberId: number;
  tickMs: number;
  electionTimeoutTicks: number;
  /** restoredLog is the [seq, term] of each entry the run started with (its WAL after the snapshot). */
  restoredLog: Array<[number, number]>;
}

export interface ReplayOptions {
  engine?: ReplayEngineFactory;
  engineFromState?: ReplayStateFactory;
  keepSteps?: boolean;
}

export function replayRun(recorded: RecordedRun, options: ReplayOptions = {}): RunReplay {
  const head: RunLine | CheckpointLine | null = recorded.head ?? recorded.checkpoint;
  const result: RunReplay = {
    node: recorded.node,
    run: recorded.run,
    build: head?.build ?? '',
    startedAtMs: head?.startedAtMs ?? recorded.steps[0]?.at ?? 0,
    recorded: recorded.steps.length,
    matched: 0,
    skipped: '',
    fromCheckpoint: 0,
    gap: recorded.gap ? `from step ${recorded.gap.n}: ${recorded.gap.reason}` : '',
    divergence: null,
    steps: [],
    memberId: 0,
    tickMs: 0,
    electionTimeoutTicks: 0,
    restoredLog: [],
  };
  if (!head) {
    result.skipped = 'its start (the run line) was rotated out of the ring, and no checkpoint is left';
    return result;
  }
  result.electionTimeoutTicks = head.config.limits.electionTimeoutTicks;
  result.tickMs = head.tickMs;
  const engine = startEngine(head, result, options);
  let expected = result.fromCheckpoint + 1;
  for (const step of recorded.steps) {
    if (step.n < expected) {
      result.recorded--; // before the checkpoint: not replayed, not counted
      continue;
    }
    if (step.n !== expected) {
      result.skipped = `step ${expected} is missing from the recording (next is ${step.n})`;
      break;
    }
    expected++;
    let effects: Effect[];
    try {
      effects = engine.step(step.in);
    } catch (error) {
      result.divergence = divergence(
        recorded,
        step,
        [],
        `the engine threw: ${(error as Error).message}`,
        head.payloads,
      );
      break;
    }
    const digest = effectsDigestFor(recorded.version, effects, head.payloads);
    if (digest !== step.d) {
      result.divergence = divergence(recorded, step, effects, digest, head.payloads);
      break;
    }
    result.matched++;
    if (options.keepSteps) result.steps.push({ n: step.n, tick: step.tick, atMs: step.at, input: step.in, effects });
  }
  return result;
}

/** startEngine builds the engine at the run's start, or from its checkpoint, and notes where it starts. */
function startEngine(head: RunLine | CheckpointLine, result: RunReplay, options: ReplayOptions): Steppable {
  const roster = head.config.bootstrapRoster;
  const byName = roster?.members.find((m) => m.name === head.config.name)?.id ?? 0;
  if (head.t === 'run') {
    result.memberId = head.restored.hardState.selfId || byName;
    result.restoredLog = head.restored.entries.map((e) => [e.seq, e.term]);
    return (options.engine ?? realReplayEngine)(head.config, head.restored);
  }
  result.fromCheckpoint = head.after;
  result.startedAtMs = head.at;
  // The log the checkpointed engine holds, as the checkers' starting point (like a run's restored WAL).
  const probe = Engine.fromState(head.config, head.state);
  result.memberId = probe.status().id || byName;
  result.restoredLog = probe.entries().map((e) => [e.seq, e.term]);
  return (options.engineFromState ?? realReplayStateEngine)(head.config, head.state);
}

function divergence(
  recorded: RecordedRun,
  step: StepLine,
  effects: Effect[],
  digest: string,
  mode: 'hashed' | 'full',
): Divergence {
  return {
    node: recorded.node,
    run: recorded.run,
    step: step.n,
    tick: step.tick,
    atMs: step.at,
    // The input was revived (values are zeros now): encoded again, a redacted value shows as its length alone.
    input: encodeLine(step.in, mode, new Uint8Array(32)).replace(/"\$r":\[(\d+),"[^"]*"\]/g, '"$r":[$1]'),
    recorded: { digest: step.d, effects: step.fx ?? [] },
    replayed: { digest, effects: effects.map(describeEffect), canonical: canonicalEffects(effects, mode) },
  };
}
