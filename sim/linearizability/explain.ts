// The text of a verdict: what was found, how much was searched, and the operations that show it.
import type { EncodedOp, KeyHistory } from './encode.js';
import { formatOperations } from './format.js';
import type { MinimiseResult } from './minimise.js';
import type { SearchResult } from './search.js';
import type { KvOperation } from './types.js';

/** The most operations open at one instant (indeterminate ones stay open to the end). */
export function maxConcurrency(ops: readonly EncodedOp[]): number {
  const times: [number, number][] = [];
  for (const op of ops) times.push([op.callTime, 1], [op.returnTime, -1]);
  times.sort((x, y) => x[0] - y[0] || y[1] - x[1]); // calls first at equal times, as the search reads them
  let open = 0;
  let most = 0;
  for (const [, delta] of times) {
    open += delta;
    most = Math.max(most, open);
  }
  return most;
}

const startingState = (initialValue: string | null): string =>
  initialValue === null ? 'every key starts absent' : `every key starts as ${JSON.stringify(initialValue)}`;

export function violationExplanation(
  key: KeyHistory,
  search: SearchResult,
  minimised: MinimiseResult,
  minimal: KvOperation[],
  initialValue: string | null,
): string {
  const shrunk = minimised.minimal
    ? 'no operation of these could be dropped (with what read its value) keeping the violation'
    : 'the minimisation budget ran out (CheckOptions.minimiseStepBudget), so a smaller set may exist';
  return [
    `linearizability violation on key ${JSON.stringify(key.key)}: no order of these ${minimal.length} operations agrees with a register ` +
      `(put / get / cas, ${startingState(initialValue)}) and with real time (each takes effect once, between its call and its return; ` +
      `"?" = indeterminate: at any time after its call, or never).`,
    `Minimised from the key's ${key.operations.length} operations; ${shrunk}. Search on this key: ${search.steps} steps; minimisation: ${minimised.work}.`,
    formatOperations(minimal),
  ].join('\n');
}

export function undecidedExplanation(
  key: KeyHistory,
  search: SearchResult,
  stepsBefore: number,
  stepBudget: number,
  memoWordsMax: number,
  keysBefore: number,
  keysAfter: number,
): string {
  const indeterminate = key.encoded.filter((op) => op.returnTime === Infinity).length;
  const reason =
    search.outcome === 'undecided-memory'
      ? `its memo table reached ${memoWordsMax} words (${search.memoEntries} configurations; CheckOptions.memoTableWordsMax)`
      : `the step budget of ${stepBudget} (CheckOptions.stepBudget, summed over keys; ${stepsBefore} spent on earlier keys) ran out`;
  return (
    `undecided on key ${JSON.stringify(key.key)}: ${reason} after ${search.steps} steps on this key, with neither a linearization ` +
    `nor a proof that none exists. The key has ${key.operations.length} operations, ${indeterminate} of them indeterminate, and up to ` +
    `${maxConcurrency(key.encoded)} open at once; the search grows with how many are concurrent (indeterminate ones stay open to the end). ` +
    `${keysBefore} key(s) checked before it were linearizable; ${keysAfter} later key(s) were not checked.`
  );
}
