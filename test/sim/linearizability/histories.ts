// Builders of key-value histories for the checker's tests: literal operations for unit cases, and
// histories made from a real sequential execution (every operation takes effect at one instant inside
// its interval), which are linearizable by construction.
import type { KvOperation } from '../../../sim/linearizability/index.js';

let nextId = 1;
const fresh = (): number => nextId++;

/** A completed put. returnTime null makes it indeterminate. */
export function put(
  key: string,
  value: string,
  callTime: number,
  returnTime: number | null,
  clientId = 'c1',
): KvOperation {
  return {
    id: fresh(),
    clientId,
    input: { kind: 'put', key, value },
    callTime,
    returnTime,
    output: returnTime === null ? null : { kind: 'put' },
  };
}

export function get(
  key: string,
  value: string | null,
  callTime: number,
  returnTime: number | null,
  clientId = 'c2',
): KvOperation {
  return {
    id: fresh(),
    clientId,
    input: { kind: 'get', key },
    callTime,
    returnTime,
    output: returnTime === null ? null : { kind: 'get', value },
  };
}

/** swapped null = indeterminate (returnTime must be null too). */
export function cas(
  key: string,
  expected: string | null,
  value: string,
  swapped: boolean | null,
  callTime: number,
  returnTime: number | null,
  clientId = 'c3',
): KvOperation {
  return {
    id: fresh(),
    clientId,
    input: { kind: 'cas', key, expected, value },
    callTime,
    returnTime,
    output: swapped === null ? null : { kind: 'cas', swapped },
  };
}

/** One planned operation of a sequential execution (drawn by fast-check). */
export interface OpPlan {
  kind: 'put' | 'get' | 'cas';
  keyIndex: number;
  /** picks the cas's expected value among (current, absent, earlier values of the key) */
  expectedPick: number;
  /** how long before its effect the operation was called, and after it returned */
  callSlack: number;
  returnSlack: number;
  /** 'applied' / 'lost': indeterminate (no return); 'lost' never took effect */
  fate: 'returned' | 'applied' | 'lost';
}

/** The gap between consecutive effects: slacks larger than this make intervals overlap. */
export const EFFECT_GAP = 10;

/**
 * Runs `plans` in order against a real map (effect of plan i at time EFFECT_GAP * (i + 1)) and
 * records what each client saw. Values are unique ("v<i>"), so a stale read is unambiguous.
 */
export function sequentialHistory(
  plans: readonly OpPlan[],
  keyCount: number,
  initialValue: string | null,
): KvOperation[] {
  const state = new Map<string, string | null>();
  const written = new Map<string, string[]>();
  const history: KvOperation[] = [];
  plans.forEach((plan, i) => {
    const key = `k${plan.keyIndex % keyCount}`;
    const effectAt = EFFECT_GAP * (i + 1);
    const callTime = effectAt - plan.callSlack;
    const returnTime = plan.fate === 'returned' ? effectAt + plan.returnSlack : null;
    const takesEffect = plan.fate !== 'lost';
    const current = state.has(key) ? state.get(key)! : initialValue;
    const value = `v${i}`;
    const clientId = `c${i % 16}`;
    if (plan.kind === 'put') {
      if (takesEffect) state.set(key, value);
      written.set(key, [...(written.get(key) ?? []), value]);
      history.push(put(key, value, callTime, returnTime, clientId));
    } else if (plan.kind === 'get') {
      history.push(get(key, current, callTime, returnTime, clientId));
    } else {
      const choices = [current, null, ...(written.get(key) ?? [])];
      const expected = choices[plan.expectedPick % choices.length]!;
      const swapped = takesEffect && expected === current;
      if (swapped) state.set(key, value);
      written.set(key, [...(written.get(key) ?? []), value]);
      history.push(cas(key, expected, value, returnTime === null ? null : swapped, callTime, returnTime, clientId));
    }
  });
  return history;
}

/**
 * k puts of "a" and k of "b", all concurrent, and inside them 2k + 1 gets one after another reading
 * a, b, a, ...: that needs k + 1 puts of "a", so it is not linearizable, but with repeated values no
 * read is ever stranded and the search learns it only after trying subsets of the puts.
 */
export function alternatingReads(k: number): KvOperation[] {
  const ops: KvOperation[] = [];
  for (let i = 0; i < k; i++) ops.push(put('hot', 'a', 0, 100_000, `a${i}`), put('hot', 'b', 0, 100_000, `b${i}`));
  for (let i = 0; i <= 2 * k; i++) ops.push(get('hot', i % 2 === 0 ? 'a' : 'b', 100 + 10 * i, 105 + 10 * i, 'r'));
  return ops;
}
