// Shrinks a violating key history to a few operations that still violate, so a report shows the
// anomaly rather than thousands of operations.
//
// Only moves that are sound are used: if the history before a move is linearizable, so is the one
// after. Then a small violating set is an honest witness (it cannot be an artefact of the shrinking,
// such as a read whose writer was deleted), and it always keeps the operation that really broke.
//   - drop a read-only operation (a get, a cas that failed): the others' legality does not change;
//   - weaken a cas that swapped (or may have) into a put of its value: a put is legal wherever the cas was;
//   - drop writes together with every operation that read a value they wrote (transitively), every
//     failed cas and every indeterminate cas: what is left reads only values still written, and no
//     operation is left whose legality depended on which write came last.
// The reported set is the original operations of what is left; each is at least as constrained as
// its weakened form, so that set is not linearizable either.
//
// Strategy: weaken every cas at once if that keeps the violation; delete chunks of halving size (a
// light delta debugging); then single operations and weakenings until nothing changes. Each candidate costs its search steps plus its size, against a
// deterministic budget; when it runs out the smallest violating set so far is returned.
import { OP_CAS, OP_PUT, OUTCOME_DONE, OUTCOME_FAILED, OUTCOME_UNKNOWN, type EncodedOp } from './encode.js';
import { requiredValue, writtenValue } from './kv-model.js';
import { decideKey } from './decide.js';

export interface MinimiseResult {
  ops: EncodedOp[];
  /** budget units spent */
  work: number;
  /** true when a full pass found no operation to drop or weaken (not cut short by a budget) */
  minimal: boolean;
}

const isWrite = (op: EncodedOp): boolean => writtenValue(op) >= 0;

/** The operations of `ops` left after dropping those at `seed` indices and everything that depends on them. */
export function withoutClosure(ops: readonly EncodedOp[], seed: readonly number[]): EncodedOp[] {
  const dropped = new Uint8Array(ops.length);
  for (const i of seed) dropped[i] = 1;
  if (seed.some((i) => isWrite(ops[i]!))) {
    ops.forEach((op, i) => {
      if (op.kind === OP_CAS && (op.outcome === OUTCOME_FAILED || op.outcome === OUTCOME_UNKNOWN)) dropped[i] = 1;
    });
  }
  const readersOf = new Map<number, number[]>();
  ops.forEach((op, i) => {
    const v = requiredValue(op);
    if (v < 0) return;
    const readers = readersOf.get(v);
    if (readers === undefined) readersOf.set(v, [i]);
    else readers.push(i);
  });
  const valuesGone = new Set<number>();
  const pending: number[] = [];
  ops.forEach((op, i) => {
    if (dropped[i] && isWrite(op)) pending.push(writtenValue(op));
  });
  while (pending.length > 0) {
    const v = pending.pop()!;
    if (valuesGone.has(v)) continue;
    valuesGone.add(v);
    for (const r of readersOf.get(v) ?? []) {
      if (dropped[r]) continue;
      dropped[r] = 1;
      if (isWrite(ops[r]!)) pending.push(writtenValue(ops[r]!));
    }
  }
  return ops.filter((_, i) => !dropped[i]);
}

/** `op` weakened to a put of the value it may have written, or null if it is not a cas that may have swapped. */
function weakened(op: EncodedOp): EncodedOp | null {
  if (op.kind !== OP_CAS || op.outcome === OUTCOME_FAILED) return null;
  return {
    ...op,
    kind: OP_PUT,
    outcome: op.outcome === OUTCOME_UNKNOWN ? OUTCOME_UNKNOWN : OUTCOME_DONE,
    a: op.b,
    b: 0,
  };
}

/** Minimises `ops` (which must not be linearizable from `initialState`). */
export function minimiseViolation(
  ops: readonly EncodedOp[],
  initialState: number,
  budget: number,
  memoWordsMax: number,
): MinimiseResult {
  let current = [...ops];
  let work = 0;
  let cutShort = false;

  const violates = (candidate: EncodedOp[]): boolean => {
    if (candidate.length === 0) return false;
    if (work >= budget) {
      cutShort = true;
      return false;
    }
    const result = decideKey(candidate, initialState, budget - work, memoWordsMax);
    work += result.steps + candidate.length;
    if (result.outcome === 'undecided-steps' || result.outcome === 'undecided-memory') cutShort = true;
    return result.outcome === 'violation';
  };

  /** One deletion pass with chunks of `chunk` operations; true if anything was dropped. */
  const deletionPass = (chunk: number): boolean => {
    let changed = false;
    let i = 0;
    while (i < current.length && !(cutShort && work >= budget)) {
      const seed: number[] = [];
      for (let j = i; j < Math.min(i + chunk, current.length); j++) seed.push(j);
      const candidate = withoutClosure(current, seed);
      if (violates(candidate)) {
        current = candidate;
        changed = true;
      } else {
        i += chunk;
      }
    }
    return changed;
  };

  const weakeningPass = (): boolean => {
    let changed = false;
    for (let i = 0; i < current.length && !(cutShort && work >= budget); i++) {
      const weaker = weakened(current[i]!);
      if (weaker === null) continue;
      const candidate = current.slice();
      candidate[i] = weaker;
      if (violates(candidate)) {
        current = candidate;
        changed = true;
      }
    }
    return changed;
  };

  // Weaken every cas first if the violation survives it: a chain of cas ops can otherwise hold a
  // local minimum (each needs the one before) once a simpler witness was deleted by a chunk.
  const allWeakened = current.map((op) => weakened(op) ?? op);
  if (allWeakened.some((op, i) => op !== current[i]) && violates(allWeakened)) current = allWeakened;
  for (let chunk = Math.ceil(current.length / 2); chunk > 1; chunk = Math.ceil(chunk / 2)) deletionPass(chunk);
  for (;;) {
    const dropped = deletionPass(1);
    const weakenedAny = weakeningPass();
    if (!dropped && !weakenedAny) break;
    if (cutShort && work >= budget) break;
  }
  return { ops: current, work, minimal: !cutShort };
}
