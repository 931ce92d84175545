// Shrinking: a failing run is a seed plus a fault schedule plus knobs. fast-check
// is handed the failing combination as its first example and shrinks it (fewer
// faults, knobs turned off) while the run still breaks the same invariant.
import fc from 'fast-check';
import { SIM_LIMITS } from './limits.js';
import { optionsFor, type OverrideValues } from './options.js';
import { runSim, type RunExtras, type RunResult } from './run.js';

/** SHRINKABLE_KNOBS are the continuous faults a shrink may switch off (to 0). */
const SHRINKABLE_KNOBS: { flag: string; read: (r: ReturnType<typeof optionsFor>) => number }[] = [
  { flag: 'loss', read: (o) => o.network.lossProbability },
  { flag: 'dup', read: (o) => o.network.duplicateProbability },
  { flag: 'replay-rate', read: (o) => o.network.replayProbability },
  { flag: 'reorder', read: (o) => o.network.reorderProbability },
  { flag: 'late', read: (o) => o.network.lateAnswerProbability ?? 0 },
  { flag: 'torn', read: (o) => o.storage.tornWriteProbability },
  { flag: 'corrupt-snapshot', read: (o) => o.storage.snapshotCorruptProbability },
];

export interface Shrunk {
  faults: number[];
  overrides: OverrideValues;
  result: RunResult;
  runCount: number;
}

export function shrinkFailure(
  seed: number,
  overrides: OverrideValues,
  onlyFaults: number[] | null,
  failed: RunResult,
  log: (line: string) => void = () => {},
  extras: Pick<RunExtras, 'engineFactory'> = {},
): Shrunk | null {
  if (!failed.failure) return null;
  const invariant = failed.failure.invariant;
  const base = optionsFor(seed, overrides, onlyFaults);
  const allFaults = onlyFaults ?? failed.faults.map((_, i) => i);
  const knobs = SHRINKABLE_KNOBS.filter((k) => k.read(base) > 0 && overrides[k.flag] !== 0);
  const startedMs = performance.now();
  let runCount = 0;
  const results = new Map<string, { overrides: OverrideValues; result: RunResult }>();
  const knobArbitraries: Record<string, fc.Arbitrary<number>> = {};
  for (const k of knobs) knobArbitraries[k.flag] = fc.constantFrom(0, k.read(base));
  const arbitrary = fc.record({ faults: fc.subarray(allFaults), knobs: fc.record(knobArbitraries) });
  type Candidate = { faults: number[]; knobs: Record<string, number> };
  const fullExample: Candidate = {
    faults: allFaults,
    knobs: Object.fromEntries(knobs.map((k) => [k.flag, k.read(base)])),
  };
  const keyOf = (c: Candidate): string =>
    JSON.stringify([
      c.faults,
      Object.keys(c.knobs)
        .sort()
        .map((k) => c.knobs[k]),
    ]);
  results.set(keyOf(fullExample), { overrides: { ...overrides, ...fullExample.knobs }, result: failed });
  const stillFails = (candidate: Candidate): boolean => {
    const known = results.get(keyOf(candidate));
    if (known) return known.result.failure?.invariant === invariant;
    if (runCount >= SIM_LIMITS.shrinkRunCountMax || performance.now() - startedMs > SIM_LIMITS.shrinkWallMsMax)
      return false;
    runCount++;
    const candidateOverrides = { ...overrides, ...candidate.knobs };
    const result = runSim(optionsFor(seed, candidateOverrides, candidate.faults), extras);
    results.set(keyOf(candidate), { overrides: candidateOverrides, result });
    const same = result.failure?.invariant === invariant;
    if (same)
      log(
        `  shrinking: ${candidate.faults.length} faults, knobs ${JSON.stringify(candidate.knobs)} still fail (run ${runCount})`,
      );
    return same;
  };
  const outcome = fc.check(
    fc.property(arbitrary, (candidate) => !stillFails(candidate)),
    {
      examples: [[fullExample]],
      numRuns: 1,
      seed,
    },
  );
  const smallest = outcome.counterexample?.[0] ?? fullExample;
  const found = results.get(keyOf(smallest))!;
  return { faults: smallest.faults, overrides: found.overrides, result: found.result, runCount };
}

/** reproduceCommand is the command line that replays a run exactly. */
export function reproduceCommand(seed: number, overrides: OverrideValues, onlyFaults: number[] | null): string {
  const parts = [`npm run sim -- --seed ${seed}`];
  for (const flag of Object.keys(overrides).sort()) parts.push(`--${flag} ${overrides[flag]}`);
  if (onlyFaults !== null) parts.push(`--only-faults ${onlyFaults.length === 0 ? 'none' : onlyFaults.join(',')}`);
  return parts.join(' ');
}
