// Unit cases of the linearizability checker: each names the history and the verdict it must get.
import assert from 'node:assert/strict';
import {
  InvalidHistoryError,
  checkKvHistory,
  formatOperations,
  type CheckResult,
  type KvOperation,
} from '../../../sim/linearizability/index.js';
import { alternatingReads, cas, get, put } from './histories.js';

function verdictOf(history: KvOperation[], initialValue: string | null = null): CheckResult['verdict'] {
  return checkKvHistory(history, { initialValue }).verdict;
}

describe('linearizability checker cases', () => {
  it('an empty history is linearizable', () => {
    assert.deepEqual(checkKvHistory([]), { verdict: 'ok', keysChecked: 0, steps: 0 });
  });

  it('concurrent writes may take effect in either order, but one order for every reader', () => {
    const writes = () => [put('k', 'a', 0, 10, 'c1'), put('k', 'b', 5, 15, 'c2')];
    assert.equal(verdictOf([...writes(), get('k', 'a', 20, 30)]), 'ok');
    assert.equal(verdictOf([...writes(), get('k', 'b', 20, 30)]), 'ok');
    assert.equal(verdictOf([...writes(), get('k', 'b', 20, 30), get('k', 'a', 40, 50)]), 'violation');
    // readers concurrent with the writes may see them flip
    assert.equal(verdictOf([...writes(), get('k', 'b', 6, 7), get('k', 'a', 8, 9)]), 'ok');
  });

  it('a sequential read must see the latest write', () => {
    assert.equal(verdictOf([put('k', 'a', 0, 10), put('k', 'b', 11, 20), get('k', 'a', 21, 30)]), 'violation');
    assert.equal(verdictOf([put('k', 'a', 0, 10), get('k', null, 11, 20)]), 'violation');
    assert.equal(verdictOf([get('k', null, 0, 10), put('k', 'a', 11, 20)]), 'ok');
    // operations that touch at an instant are concurrent
    assert.equal(verdictOf([put('k', 'a', 0, 10), get('k', null, 10, 20)]), 'ok');
  });

  it('cas swaps only on the expected value (null = absent)', () => {
    assert.equal(verdictOf([put('k', 'x', 0, 1), cas('k', 'x', 'y', true, 2, 3), get('k', 'y', 4, 5)]), 'ok');
    assert.equal(verdictOf([put('k', 'z', 0, 1), cas('k', 'x', 'y', true, 2, 3)]), 'violation');
    assert.equal(verdictOf([put('k', 'z', 0, 1), cas('k', 'x', 'y', false, 2, 3), get('k', 'z', 4, 5)]), 'ok');
    assert.equal(verdictOf([put('k', 'x', 0, 1), cas('k', 'x', 'y', false, 2, 3)]), 'violation');
    assert.equal(verdictOf([cas('k', null, 'a', true, 0, 1), get('k', 'a', 2, 3)]), 'ok');
    assert.equal(verdictOf([cas('k', null, 'a', true, 0, 1)], 'init'), 'violation');
    assert.equal(verdictOf([cas('k', 'init', 'a', true, 0, 1)], 'init'), 'ok');
    // a failed cas leaves the value alone
    assert.equal(verdictOf([put('k', 'x', 0, 1), cas('k', 'q', 'y', false, 2, 3), get('k', 'y', 4, 5)]), 'violation');
    // two concurrent cas from the same value: only one can win
    const both = [put('k', 'x', 0, 1), cas('k', 'x', 'y', true, 2, 10, 'c1'), cas('k', 'x', 'z', true, 3, 11, 'c2')];
    assert.equal(verdictOf(both), 'violation');
  });

  it('an indeterminate put may have taken effect (a later read saw it) or never (no read did)', () => {
    assert.equal(verdictOf([put('k', 'a', 0, null), get('k', 'a', 10, 20)]), 'ok');
    assert.equal(verdictOf([put('k', 'a', 0, null), get('k', null, 10, 20), get('k', null, 30, 40)]), 'ok');
    assert.equal(verdictOf([put('k', 'a', 0, null), get('k', null, 10, 20), get('k', 'a', 30, 40)]), 'ok');
    // once seen it cannot be undone
    assert.equal(verdictOf([put('k', 'a', 0, null), get('k', 'a', 10, 20), get('k', null, 30, 40)]), 'violation');
    // it cannot take effect before its call
    assert.equal(verdictOf([get('k', 'a', 0, 5), put('k', 'a', 10, null)]), 'violation');
  });

  it('a read of an overwritten value is stale unless a write of that value may still take effect', () => {
    const overwritten = () => [put('k', 'a', 0, 10), put('k', 'b', 20, 30)];
    assert.equal(verdictOf([...overwritten(), get('k', 'a', 40, 50)]), 'violation');
    assert.equal(verdictOf([...overwritten(), put('k', 'a', 25, null), get('k', 'a', 40, 50)]), 'ok');
    assert.equal(verdictOf([...overwritten(), put('k', 'a', 35, 36), get('k', 'a', 40, 50)]), 'ok');
    // a cas from the stale value is as stale as a get of it
    assert.equal(verdictOf([...overwritten(), cas('k', 'a', 'c', true, 40, 50)]), 'violation');
    // the overwrite touching the read (returns as it is called) is concurrent with it
    assert.equal(verdictOf([put('k', 'a', 0, 10), put('k', 'b', 20, 40), get('k', 'a', 40, 50)]), 'ok');
  });

  it('an indeterminate cas swaps iff it takes effect on the expected value', () => {
    assert.equal(verdictOf([put('k', 'x', 0, 1), cas('k', 'x', 'y', null, 2, null), get('k', 'y', 10, 11)]), 'ok');
    assert.equal(verdictOf([put('k', 'x', 0, 1), cas('k', 'x', 'y', null, 2, null), get('k', 'x', 10, 11)]), 'ok');
    assert.equal(
      verdictOf([put('k', 'z', 0, 1), cas('k', 'x', 'y', null, 2, null), get('k', 'y', 10, 11)]),
      'violation',
    );
  });

  it('drops indeterminate gets: they constrain nothing', () => {
    const result = checkKvHistory([put('k', 'a', 0, 1), get('k', 'nonsense', 2, null)]);
    assert.equal(result.verdict, 'ok');
  });

  it('checks keys apart and reports the violating key', () => {
    const history = [
      put('a', '1', 0, 10),
      get('a', '1', 11, 12),
      put('b', '1', 0, 10),
      put('b', '2', 11, 20),
      get('b', '1', 21, 30),
      get('b', '2', 31, 32),
      put('c', '1', 0, 10),
    ];
    const result = checkKvHistory(history);
    assert.equal(result.verdict, 'violation');
    if (result.verdict !== 'violation') return;
    assert.equal(result.key, 'b');
    assert.deepEqual(
      result.minimalOperations.map((op) => op.id),
      [history[2]!.id, history[3]!.id, history[4]!.id],
    );
    assert.ok(result.explanation.startsWith('linearizability violation on key "b"'), result.explanation);
    assert.ok(result.explanation.endsWith(formatOperations(result.minimalOperations)), result.explanation);
  });

  it('a pathological history ends undecided within the step budget, with the same steps every time', () => {
    const history = alternatingReads(12);
    const result = checkKvHistory(history, { stepBudget: 20_000 });
    assert.equal(result.verdict, 'undecided');
    if (result.verdict !== 'undecided') return;
    assert.equal(result.key, 'hot');
    assert.equal(result.steps, 20_000);
    assert.match(result.explanation, /step budget of 20000 \(CheckOptions\.stepBudget/);
    assert.match(result.explanation, /49 operations, 0 of them indeterminate, and up to 25 open at once/);
    assert.deepEqual(checkKvHistory(history, { stepBudget: 20_000 }), result);
    // small enough, the same shape is decided
    assert.equal(checkKvHistory(alternatingReads(3), { stepBudget: 20_000 }).verdict, 'violation');
  });

  it('a full memo table ends undecided too', () => {
    const result = checkKvHistory(alternatingReads(12), { memoTableWordsMax: 10_000 });
    assert.equal(result.verdict, 'undecided');
    if (result.verdict !== 'undecided') return;
    assert.match(result.explanation, /memo table reached 10000 words/);
  });

  it('the budget is shared by all keys: later keys are not checked once it runs out', () => {
    const history = [...alternatingReads(12), put('z', '1', 0, 1), put('z', '2', 2, 3), get('z', '1', 4, 5)];
    // keys go smallest first, so the violation on "z" is found before "hot" spends the budget
    assert.equal(checkKvHistory(history, { stepBudget: 100 }).verdict, 'violation');
  });

  it('a large overlapping single-key history passes (memo table and head table grow)', () => {
    const history: KvOperation[] = [];
    let value: string | null = null;
    for (let i = 0; i < 3000; i++) {
      const effectAt = 10 * i;
      if (i % 3 === 0) history.push(get('k', value, effectAt - 35, effectAt + 35, `c${i % 16}`));
      else {
        value = `v${i}`;
        history.push(put('k', value, effectAt - 35, i % 50 === 1 ? null : effectAt + 35, `c${i % 16}`));
      }
    }
    const result = checkKvHistory(history);
    assert.equal(result.verdict, 'ok', result.verdict === 'ok' ? '' : result.explanation);
  });

  it('refuses a malformed history with InvalidHistoryError naming the operation', () => {
    const bad = (mutate: (op: KvOperation) => void): KvOperation[] => {
      const op = put('k', 'a', 5, 10);
      mutate(op);
      return [op];
    };
    assert.throws(
      () =>
        checkKvHistory(
          bad((op) => {
            op.returnTime = 1;
          }),
        ),
      /returnTime is before callTime/,
    );
    assert.throws(
      () =>
        checkKvHistory(
          bad((op) => {
            op.output = null;
          }),
        ),
      /a completed operation has no output/,
    );
    assert.throws(
      () =>
        checkKvHistory(
          bad((op) => {
            op.returnTime = null;
          }),
        ),
      /indeterminate operation .* has an output/,
    );
    assert.throws(
      () =>
        checkKvHistory(
          bad((op) => {
            op.callTime = Number.NaN;
          }),
        ),
      /callTime is not a finite number/,
    );
    assert.throws(
      () =>
        checkKvHistory(
          bad((op) => {
            op.output = { kind: 'get', value: 'a' };
          }),
        ),
      /output.kind "get" differs/,
    );
    assert.throws(
      () =>
        checkKvHistory(
          bad((op) => {
            (op.input as { kind: string }).kind = 'delete';
          }),
        ),
      /input.kind "delete" is not put, get or cas/,
    );
    const twice = put('k', 'a', 0, 1);
    assert.throws(
      () => checkKvHistory([twice, { ...twice }]),
      (e: unknown) => e instanceof InvalidHistoryError && /used twice/.test(e.message),
    );
    assert.throws(() => checkKvHistory([], { stepBudget: -1 }), /stepBudget must be a whole number/);
  });

  it('formats operations one a line with their times', () => {
    const ops: KvOperation[] = [
      {
        id: 12,
        clientId: 'c3',
        input: { kind: 'get', key: 'k1' },
        callTime: 1200,
        returnTime: 1450,
        output: { kind: 'get', value: 'v7' },
      },
      {
        id: 13,
        clientId: 'c4',
        input: { kind: 'cas', key: 'k1', expected: null, value: 'v8' },
        callTime: 1300,
        returnTime: 1500,
        output: { kind: 'cas', swapped: false },
      },
      {
        id: 14,
        clientId: 'c2',
        input: { kind: 'put', key: 'k1', value: 'v9' },
        callTime: 1320,
        returnTime: null,
        output: null,
      },
      {
        id: 15,
        clientId: 'c2',
        input: { kind: 'get', key: 'k1' },
        callTime: 1600,
        returnTime: 1700,
        output: { kind: 'get', value: null },
      },
    ];
    assert.equal(
      formatOperations(ops),
      [
        '#12 c3 get(k1) -> "v7"  [1200, 1450]',
        '#13 c4 cas(k1, absent -> "v8") -> not swapped  [1300, 1500]',
        '#14 c2 put(k1, "v9") -> ?  [1320, ?]  (indeterminate)',
        '#15 c2 get(k1) -> absent  [1600, 1700]',
      ].join('\n'),
    );
  });
});
