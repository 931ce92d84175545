// One key's verdict: the quick stale-read reject (stale-reads.ts), then the full search (search.ts).
// The quick check's work counts as one step per operation, so budgets and reported steps stay
// comparable.
import type { EncodedOp } from './encode.js';
import { searchLinearization, type SearchResult } from './search.js';
import { staleReadIndex } from './stale-reads.js';

export function decideKey(
  ops: readonly EncodedOp[],
  initialState: number,
  stepBudget: number,
  memoWordsMax: number,
): SearchResult {
  if (ops.length <= stepBudget && staleReadIndex(ops, initialState) >= 0)
    return { outcome: 'violation', steps: ops.length, memoEntries: 0 };
  return searchLinearization(ops, initialState, stepBudget, memoWordsMax);
}
