// P-compositionality: a history of a key-value store is linearizable iff each key's sub-history is
// (Herlihy & Wing), so the history is split per key and each key is searched alone. Each key's
// values are interned to small integers (0 = absent) so the search compares numbers, not strings.
import type { KvOperation } from './types.js';

export const OP_PUT = 0;
export const OP_GET = 1;
export const OP_CAS = 2;

/** OUTCOME_*: what the client saw. UNKNOWN = indeterminate (any outcome, possibly never applied). */
export const OUTCOME_DONE = 0;
export const OUTCOME_SWAPPED = 1;
export const OUTCOME_FAILED = 2;
export const OUTCOME_UNKNOWN = 3;

/** The value id of an absent key. */
export const ABSENT = 0;

/**
 * One operation as the search sees it. put: `a` = value written. get: `a` = value observed.
 * cas: `a` = expected, `b` = value written.
 */
export interface EncodedOp {
  /** index of the original operation in KeyHistory.operations */
  source: number;
  kind: number;
  outcome: number;
  a: number;
  b: number;
  callTime: number;
  /** Infinity for an indeterminate operation: it may take effect at any point after its call */
  returnTime: number;
}

export interface KeyHistory {
  key: string;
  /** the key's operations, indeterminate gets dropped, ordered by (callTime, returnTime, id) */
  operations: KvOperation[];
  encoded: EncodedOp[];
  initialState: number;
}

const returnOf = (op: KvOperation): number => op.returnTime ?? Infinity;

function byCallThenReturnThenId(x: KvOperation, y: KvOperation): number {
  return x.callTime - y.callTime || returnOf(x) - returnOf(y) || x.id - y.id;
}

function encodeKey(key: string, operations: KvOperation[], initialValue: string | null): KeyHistory {
  const valueIds = new Map<string, number>();
  const intern = (value: string | null): number => {
    if (value === null) return ABSENT;
    let id = valueIds.get(value);
    if (id === undefined) {
      id = valueIds.size + 1;
      valueIds.set(value, id);
    }
    return id;
  };
  const initialState = intern(initialValue);
  operations.sort(byCallThenReturnThenId);
  const encoded = operations.map((op, source): EncodedOp => {
    const returnTime = returnOf(op);
    const out = op.output;
    const base = { source, callTime: op.callTime, returnTime, b: 0 };
    switch (op.input.kind) {
      case 'put':
        return {
          ...base,
          kind: OP_PUT,
          outcome: out === null ? OUTCOME_UNKNOWN : OUTCOME_DONE,
          a: intern(op.input.value),
        };
      case 'get':
        // Indeterminate gets were dropped before encoding (they constrain nothing).
        if (out?.kind !== 'get') throw new Error(`#${op.id}: a get without a get output reached encoding`);
        return { ...base, kind: OP_GET, outcome: OUTCOME_DONE, a: intern(out.value) };
      case 'cas': {
        const outcome =
          out === null ? OUTCOME_UNKNOWN : out.kind === 'cas' && out.swapped ? OUTCOME_SWAPPED : OUTCOME_FAILED;
        return { ...base, kind: OP_CAS, outcome, a: intern(op.input.expected), b: intern(op.input.value) };
      }
    }
  });
  return { key, operations, encoded, initialState };
}

/**
 * Splits a (validated) history per key, drops indeterminate gets, and orders the keys by operation
 * count, then key: small keys are cheap, so a violation among them is found before a large key can
 * spend the whole step budget. The order depends only on the history's contents.
 */
export function partitionByKey(history: readonly KvOperation[], initialValue: string | null): KeyHistory[] {
  const byKey = new Map<string, KvOperation[]>();
  for (const op of history) {
    if (op.input.kind === 'get' && op.returnTime === null) continue;
    const ops = byKey.get(op.input.key);
    if (ops === undefined) byKey.set(op.input.key, [op]);
    else ops.push(op);
  }
  const keys = [...byKey.keys()].sort(
    (x, y) => byKey.get(x)!.length - byKey.get(y)!.length || (x < y ? -1 : x > y ? 1 : 0),
  );
  return keys.map((key) => encodeKey(key, byKey.get(key)!, initialValue));
}
