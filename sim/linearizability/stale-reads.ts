// A quick, sound reject for the anomaly that matters most here, the stale read: an operation needs
// the state to hold v (a get that saw v, a cas that swapped from v), yet a definite write W2 began
// after every write of v had returned (the initial value counts as written before everything), and
// W2 returned before the read began. In every linearization all writes of v precede W2 and W2
// precedes the read, so the state can never be v again by then: not linearizable. An indeterminate
// write of v may take effect at any time, so it defeats the rule (as it should). A read of a value
// nobody wrote is rejected too.
//
// The search would prove the same, but only by visiting every consistent cut of the operations
// concurrent with the stale one, which with a dozen open at once is hundreds of thousands of steps;
// this check is O(n log n).
import { OUTCOME_UNKNOWN, type EncodedOp } from './encode.js';
import { requiredValue, writtenValue } from './kv-model.js';

/** Index in `ops` of a read that is stale as described above, or -1. */
export function staleReadIndex(ops: readonly EncodedOp[], initialState: number): number {
  // latestWriteReturn[v]: the latest return among writes of v (Infinity if one is indeterminate);
  // the initial value counts as written at -Infinity.
  const latestWriteReturn = new Map<number, number>();
  latestWriteReturn.set(initialState, -Infinity);
  for (const op of ops) {
    const v = writtenValue(op);
    if (v < 0) continue;
    latestWriteReturn.set(v, Math.max(latestWriteReturn.get(v) ?? -Infinity, op.returnTime));
  }
  // Definite writes (they certainly took effect, between call and return), by call time, with the
  // earliest return among those called at or after each one.
  const definite = ops.filter((op) => writtenValue(op) >= 0 && op.outcome !== OUTCOME_UNKNOWN);
  definite.sort((x, y) => x.callTime - y.callTime);
  const earliestReturnFrom = new Float64Array(definite.length + 1).fill(Infinity);
  for (let i = definite.length - 1; i >= 0; i--)
    earliestReturnFrom[i] = Math.min(earliestReturnFrom[i + 1]!, definite[i]!.returnTime);

  for (let r = 0; r < ops.length; r++) {
    const v = requiredValue(ops[r]!);
    if (v < 0) continue;
    const lastWriteOfV = latestWriteReturn.get(v);
    if (lastWriteOfV === undefined) return r; // nobody wrote v, and it is not the initial value
    if (lastWriteOfV === Infinity) continue;
    // first definite write called strictly after every write of v returned
    let lo = 0;
    let hi = definite.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (definite[mid]!.callTime > lastWriteOfV) hi = mid;
      else lo = mid + 1;
    }
    if (earliestReturnFrom[lo]! < ops[r]!.callTime) return r;
  }
  return -1;
}
