// Differential test: on small random histories (few values, so repeats; random outputs, so both
// verdicts are common) the checker agrees with a brute-force search over every order that respects
// real time. This guards the search's prunings and memo table, and the quick stale-read reject.
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { partitionByKey } from '../../../sim/linearizability/encode.js';
import { checkKvHistory, formatOperations, type KvOperation } from '../../../sim/linearizability/index.js';
import { searchLinearization } from '../../../sim/linearizability/search.js';
import { staleReadIndex } from '../../../sim/linearizability/stale-reads.js';

/** true if some order of `ops` (one key) respecting real time is a legal register run from `initial`. */
function bruteForceLinearizable(ops: readonly KvOperation[], initial: string | null): boolean {
  const live = ops.filter((op) => !(op.input.kind === 'get' && op.returnTime === null));
  const placed = new Array<boolean>(live.length).fill(false);
  const mustPrecede = (x: KvOperation, y: KvOperation): boolean => x.returnTime !== null && x.returnTime < y.callTime;
  const search = (state: string | null): boolean => {
    // done once every completed operation is placed: indeterminate ones may never take effect
    if (live.every((op, i) => placed[i] || op.returnTime === null)) return true;
    for (let i = 0; i < live.length; i++) {
      if (placed[i]) continue;
      const y = live[i]!;
      if (live.some((x, j) => !placed[j] && j !== i && mustPrecede(x, y))) continue;
      let next: string | null | undefined; // undefined = illegal here
      const input = y.input;
      const out = y.output;
      if (input.kind === 'put') next = input.value;
      else if (input.kind === 'get') next = out?.kind === 'get' && out.value === state ? state : undefined;
      else if (out === null) next = state === input.expected ? input.value : state;
      else if (out.kind === 'cas' && out.swapped) next = state === input.expected ? input.value : undefined;
      else next = state !== input.expected ? state : undefined;
      if (next === undefined) continue;
      placed[i] = true;
      const found = search(next);
      placed[i] = false;
      if (found) return true;
    }
    return false;
  };
  return search(initial);
}

const valueArb = fc.constantFrom('a', 'b');
const opArb = fc.record({
  kind: fc.constantFrom('put', 'get', 'cas'),
  value: valueArb,
  observed: fc.constantFrom<string | null>(null, 'a', 'b'),
  expected: fc.constantFrom<string | null>(null, 'a', 'b'),
  swapped: fc.boolean(),
  callTime: fc.nat(20),
  length: fc.nat(10),
  indeterminate: fc.nat(6).map((n) => n === 0),
});

type RawOp = typeof opArb extends fc.Arbitrary<infer T> ? T : never;

function build(list: RawOp[]): KvOperation[] {
  return list.map((r, id): KvOperation => {
    const returnTime = r.indeterminate ? null : r.callTime + r.length;
    const clientId = `c${id}`;
    if (r.kind === 'put')
      return {
        id,
        clientId,
        input: { kind: 'put', key: 'k', value: r.value },
        callTime: r.callTime,
        returnTime,
        output: returnTime === null ? null : { kind: 'put' },
      };
    if (r.kind === 'get')
      return {
        id,
        clientId,
        input: { kind: 'get', key: 'k' },
        callTime: r.callTime,
        returnTime,
        output: returnTime === null ? null : { kind: 'get', value: r.observed },
      };
    return {
      id,
      clientId,
      input: { kind: 'cas', key: 'k', expected: r.expected, value: r.value },
      callTime: r.callTime,
      returnTime,
      output: returnTime === null ? null : { kind: 'cas', swapped: r.swapped },
    };
  });
}

describe('linearizability checker against a brute-force reference', () => {
  it('agrees on every small random history, and a reported minimal set is itself not linearizable', () => {
    let verdicts = { ok: 0, violation: 0 };
    fc.assert(
      fc.property(
        fc.array(opArb, { minLength: 0, maxLength: 7, size: 'max' }),
        fc.constantFrom(null, 'a'),
        (list, initialValue) => {
          const history = build(list);
          const expected = bruteForceLinearizable(history, initialValue);
          const result = checkKvHistory(history, { initialValue });
          assert.notEqual(result.verdict, 'undecided');
          assert.equal(
            result.verdict === 'ok',
            expected,
            `checker said ${result.verdict}, brute force ${expected ? 'ok' : 'violation'}:\n${formatOperations(history)}`,
          );
          // the search alone (without the quick stale-read reject) agrees too, and the quick reject
          // fires only on histories that really are not linearizable
          for (const key of partitionByKey(history, initialValue)) {
            const alone = searchLinearization(key.encoded, key.initialState, 1_000_000, 1 << 20);
            assert.equal(
              alone.outcome === 'ok',
              expected,
              `search alone said ${alone.outcome}:\n${formatOperations(history)}`,
            );
            if (staleReadIndex(key.encoded, key.initialState) >= 0)
              assert.equal(expected, false, `false stale read:\n${formatOperations(history)}`);
          }
          verdicts = { ...verdicts, [result.verdict]: verdicts[result.verdict as 'ok' | 'violation'] + 1 };
          if (result.verdict === 'violation') {
            assert.equal(
              bruteForceLinearizable(result.minimalOperations, initialValue),
              false,
              `minimal set is linearizable:\n${result.explanation}`,
            );
            assert.equal(result.minimal, true);
          }
        },
      ),
      { numRuns: 3000 },
    );
    // both verdicts must be exercised, or the comparison proves little
    assert.ok(verdicts.ok > 300 && verdicts.violation > 300, JSON.stringify(verdicts));
  });
});
