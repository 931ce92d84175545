// Wing & Gong's search for a linearization of one key's operations, with Lowe's memoisation, after
// Porcupine (anishathalye/porcupine, checker.go). The history is a doubly linked list of call and
// return events in time order. Walking from the head, a call may be linearized next if its operation
// is legal in the current state: it and its return are lifted out of the list and pushed on a stack.
// Reaching a return means that operation must already have been linearized, so the last choice is
// undone (backtrack). An empty list is a linearization; backtracking past the first choice proves
// there is none. Configurations (linearized set, state) already explored are skipped.
//
// Two prunings keep contended keys tractable (both sound: they drop only branches with no solution):
//   - a read-only operation (a get, a failed cas) legal now can always be moved to this point of any
//     linearization from here (it changes no state, and every operation that must precede it is
//     already linearized, or it would not be a candidate), so it is linearized at once and, if that
//     fails, this configuration fails: its alternatives are not tried (Lowe's "just in time" idea);
//   - a configuration is dead when a pending read needs a value that is not the current state and
//     that no pending operation can write any more (value-watch.ts): a wrongly early put is dropped
//     at once, not after every ordering of the operations concurrent with it.
//
// Everything is typed arrays indexed by integers; a step allocates nothing (the memo table grows by
// doubling). Steps are counted, never timed, so a budget gives the same verdict on every machine.
import type { EncodedOp } from './encode.js';
import { ILLEGAL, isReadOnly, stepKv } from './kv-model.js';
import { LinearizedSet } from './linearized-set.js';
import { MEMO_FULL, MEMO_INSERTED, MemoTable } from './memo-table.js';
import { ValueWatch } from './value-watch.js';

export type SearchOutcome = 'ok' | 'violation' | 'undecided-steps' | 'undecided-memory';

export interface SearchResult {
  outcome: SearchOutcome;
  /** model steps tried (each a candidate operation applied to a state) */
  steps: number;
  /** configurations remembered */
  memoEntries: number;
}

const NONE = -1;

/**
 * Searches for a linearization of `ops` starting in `initialState`. Gives up ('undecided-*') after
 * `stepBudget` steps or when the memo table would pass `memoWordsMax` words.
 */
export function searchLinearization(
  ops: readonly EncodedOp[],
  initialState: number,
  stepBudget: number,
  memoWordsMax: number,
): SearchResult {
  const n = ops.length;
  if (n === 0) return { outcome: 'ok', steps: 0, memoEntries: 0 };

  // Events 2i (call of op i) and 2i + 1 (its return), in time order; at equal times calls come first,
  // so operations that touch at an instant count as concurrent (the lenient reading).
  const events = Array.from({ length: 2 * n }, (_, i) => i);
  const timeOf = (event: number): number => (event & 1 ? ops[event >> 1]!.returnTime : ops[event >> 1]!.callTime);
  events.sort((x, y) => timeOf(x) - timeOf(y) || (x & 1) - (y & 1) || x - y);

  // List nodes 1..2n in event order; node 0 is the head sentinel.
  const nodeCount = 2 * n + 1;
  const next = new Int32Array(nodeCount);
  const prev = new Int32Array(nodeCount);
  const opOfNode = new Int32Array(nodeCount);
  const returnNodeOf = new Int32Array(nodeCount).fill(NONE); // for call nodes; NONE marks a return node
  const nodeOfEvent = new Int32Array(2 * n);
  for (let k = 0; k < 2 * n; k++) {
    const node = k + 1;
    nodeOfEvent[events[k]!] = node;
    opOfNode[node] = events[k]! >> 1;
    prev[node] = node - 1;
    next[node] = node + 1 < nodeCount ? node + 1 : NONE;
  }
  next[0] = 1;
  prev[0] = NONE;
  for (let i = 0; i < n; i++) returnNodeOf[nodeOfEvent[2 * i]!] = nodeOfEvent[2 * i + 1]!;

  const kind = Int8Array.from(ops, (op) => op.kind);
  const outcome = Int8Array.from(ops, (op) => op.outcome);
  const argA = Int32Array.from(ops, (op) => op.a);
  const argB = Int32Array.from(ops, (op) => op.b);
  const readOnly = Uint8Array.from(ops, (op) => (isReadOnly(op) ? 1 : 0));
  const values = new ValueWatch(ops, initialState);

  const linearized = new LinearizedSet(ops);
  const memo = new MemoTable(memoWordsMax);

  const stackNode = new Int32Array(n);
  const stackState = new Int32Array(n);
  const stackForced = new Uint8Array(n);
  let depth = 0;
  let state = initialState;
  let steps = 0;
  let node = next[0]!;

  while (next[0] !== NONE) {
    const returnNode = returnNodeOf[node]!;
    if (returnNode !== NONE) {
      if (steps >= stepBudget) return { outcome: 'undecided-steps', steps, memoEntries: memo.size };
      steps++;
      const op = opOfNode[node]!;
      const after = stepKv(state, kind[op]!, outcome[op]!, argA[op]!, argB[op]!);
      if (after === ILLEGAL) {
        node = next[node]!;
        continue;
      }
      values.take(op);
      if (values.deadIn(after)) {
        values.untake(op);
        node = next[node]!;
        continue;
      }
      linearized.add(op);
      const forced = readOnly[op]!;
      const inserted = memo.insertIfAbsent(linearized, after);
      if (inserted === MEMO_INSERTED) {
        stackNode[depth] = node;
        stackState[depth] = state;
        stackForced[depth] = forced;
        depth++;
        state = after;
        // lift the call and its return out of the list
        next[prev[node]!] = next[node]!;
        prev[next[node]!] = prev[node]!;
        next[prev[returnNode]!] = next[returnNode]!;
        if (next[returnNode] !== NONE) prev[next[returnNode]!] = prev[returnNode]!;
        node = next[0]!;
        continue;
      }
      linearized.remove(op);
      values.untake(op);
      if (inserted === MEMO_FULL) return { outcome: 'undecided-memory', steps, memoEntries: memo.size };
      if (!forced) {
        node = next[node]!;
        continue;
      }
      // A legal read leads to an explored (failed) configuration, so this one fails too: backtrack.
    }
    // Here a return came before its call was linearized, or a forced read failed: undo the last
    // choice; undoing a forced read means its configuration failed, so keep undoing.
    let forced = 1;
    while (forced) {
      if (depth === 0) return { outcome: 'violation', steps, memoEntries: memo.size };
      depth--;
      node = stackNode[depth]!;
      state = stackState[depth]!;
      forced = stackForced[depth]!;
      const op = opOfNode[node]!;
      linearized.remove(op);
      values.untake(op);
      const back = returnNodeOf[node]!;
      // unlift in reverse order of lifting
      next[prev[back]!] = back;
      if (next[back] !== NONE) prev[next[back]!] = back;
      next[prev[node]!] = node;
      prev[next[node]!] = node;
    }
    node = next[node]!;
  }
  return { outcome: 'ok', steps, memoEntries: memo.size };
}
