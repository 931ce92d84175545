// The sequential specification: a register per key with put, get and compare-and-set. States and
// values are interned ids (encode.ts); ABSENT = 0 is the missing key, so cas(expected: null) succeeds
// only on a key never written.
import { OP_CAS, OP_GET, OP_PUT, OUTCOME_FAILED, OUTCOME_SWAPPED, OUTCOME_UNKNOWN, type EncodedOp } from './encode.js';

/** ILLEGAL: the operation cannot take effect in this state with the output the client saw. */
export const ILLEGAL = -1;

/**
 * The state after `op` takes effect in `state`, or ILLEGAL. An indeterminate cas applies as the
 * register would (swap iff the state matches): it is free to take effect at the very end of the
 * history instead, where it changes nothing anyone observed, so "never happened" needs no branch.
 */
export function stepKv(state: number, kind: number, outcome: number, a: number, b: number): number {
  if (kind === OP_PUT) return a;
  if (kind === OP_GET) return state === a ? state : ILLEGAL;
  if (outcome === OUTCOME_SWAPPED) return state === a ? b : ILLEGAL;
  if (outcome === OUTCOME_FAILED) return state !== a ? state : ILLEGAL;
  return state === a ? b : state;
}

/** stepKv for one encoded operation. */
export function stepOp(state: number, op: EncodedOp): number {
  return stepKv(state, op.kind, op.outcome, op.a, op.b);
}

/** true for operations that never change the state: gets and cas that failed. */
export function isReadOnly(op: EncodedOp): boolean {
  return op.kind === OP_GET || (op.kind === OP_CAS && op.outcome === OUTCOME_FAILED);
}

/** The value `op` needs the state to hold to take effect (get, swapped cas), or -1. */
export function requiredValue(op: EncodedOp): number {
  return op.kind === OP_GET || (op.kind === OP_CAS && op.outcome === OUTCOME_SWAPPED) ? op.a : -1;
}

/** The value `op` may write (put, a cas that swapped or may have), or -1. */
export function writtenValue(op: EncodedOp): number {
  if (op.kind === OP_PUT) return op.a;
  return op.kind === OP_CAS && (op.outcome === OUTCOME_SWAPPED || op.outcome === OUTCOME_UNKNOWN) ? op.b : -1;
}
