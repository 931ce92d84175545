// checkKvHistory: is a recorded key-value history linearizable? Split per key (encode.ts), search each
// key (search.ts) within one deterministic step budget, and minimise the first violation
// (minimise.ts). Pure: no clock, no randomness, no I/O, so the simulator can run it inside a seed.
import { partitionByKey } from './encode.js';
import { undecidedExplanation, violationExplanation } from './explain.js';
import { MEMO_TABLE_WORDS_MAX_DEFAULT, MINIMISE_STEP_BUDGET_DEFAULT, STEP_BUDGET_DEFAULT } from './limits.js';
import { minimiseViolation } from './minimise.js';
import { decideKey } from './decide.js';
import type { CheckOptions, CheckResult, KvOperation } from './types.js';
import { InvalidHistoryError, assertValidKvHistory } from './validate.js';

function countOption(name: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (!Number.isSafeInteger(value) || value < 0)
    throw new InvalidHistoryError(`CheckOptions.${name} must be a whole number >= 0, not ${value}`);
  return value;
}

/**
 * Checks `history` against a key-value register per key (put / get / cas). Throws InvalidHistoryError
 * when the history or the options are malformed.
 */
export function checkKvHistory(history: readonly KvOperation[], options: CheckOptions = {}): CheckResult {
  assertValidKvHistory(history);
  const stepBudget = countOption('stepBudget', options.stepBudget, STEP_BUDGET_DEFAULT);
  const minimiseBudget = countOption('minimiseStepBudget', options.minimiseStepBudget, MINIMISE_STEP_BUDGET_DEFAULT);
  const memoWordsMax = countOption('memoTableWordsMax', options.memoTableWordsMax, MEMO_TABLE_WORDS_MAX_DEFAULT);
  const initialValue = options.initialValue ?? null;
  if (initialValue !== null && typeof initialValue !== 'string')
    throw new InvalidHistoryError('CheckOptions.initialValue must be a string or null');

  const keys = partitionByKey(history, initialValue);
  let steps = 0;
  for (const [index, key] of keys.entries()) {
    const search = decideKey(key.encoded, key.initialState, stepBudget - steps, memoWordsMax);
    const stepsBefore = steps;
    steps += search.steps;
    if (search.outcome === 'ok') continue;
    if (search.outcome === 'violation') {
      const minimised = minimiseViolation(key.encoded, key.initialState, minimiseBudget, memoWordsMax);
      const minimalOperations = minimised.ops.map((op) => key.operations[op.source]!);
      return {
        verdict: 'violation',
        key: key.key,
        steps,
        minimalOperations,
        explanation: violationExplanation(key, search, minimised, minimalOperations, initialValue),
        minimiseSteps: minimised.work,
        minimal: minimised.minimal,
      };
    }
    return {
      verdict: 'undecided',
      key: key.key,
      steps,
      explanation: undecidedExplanation(
        key,
        search,
        stepsBefore,
        stepBudget,
        memoWordsMax,
        index,
        keys.length - index - 1,
      ),
    };
  }
  return { verdict: 'ok', keysChecked: keys.length, steps };
}
