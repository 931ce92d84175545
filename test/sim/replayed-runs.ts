// replayedRun builds a replayed run by hand (each step: its wall time, input and effects), for the tests of what
// is made from replayed histories (the trace of several members, --to-scenario).
import type { Effect, Input } from '../../engine/types.js';
import type { ReplayedStep, RunReplay } from '../../sim/replay/replay.js';

export function replayedRun(
  node: string,
  memberId: number,
  startedAtMs: number,
  steps: Array<[number, Input, Effect[]]>,
): RunReplay {
  const replayed: ReplayedStep[] = steps.map(([atMs, input, effects], i) => ({
    n: i + 1,
    tick: i,
    atMs,
    input,
    effects,
  }));
  return {
    node,
    run: `${node}-${startedAtMs}`,
    build: 'test',
    startedAtMs,
    recorded: replayed.length,
    matched: replayed.length,
    skipped: '',
    fromCheckpoint: 0,
    gap: '',
    divergence: null,
    steps: replayed,
    memberId,
    tickMs: 100,
    electionTimeoutTicks: 10,
    restoredLog: [],
  };
}
