// Properties of the linearizability checker: histories from a real sequential execution always pass;
// one injected stale read always fails, with a small minimal set that contains the stale read.
// fast-check prints `{ seed: ..., path: ... }` on failure; pass them to fc.assert to replay.
import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  OP_CAS,
  OP_PUT,
  OUTCOME_DONE,
  OUTCOME_FAILED,
  OUTCOME_UNKNOWN,
  partitionByKey,
} from '../../../sim/linearizability/encode.js';
import {
  MEMO_TABLE_WORDS_MAX_DEFAULT,
  STEP_BUDGET_DEFAULT,
  checkKvHistory,
  formatOperation,
  type KvOperation,
} from '../../../sim/linearizability/index.js';
import { searchLinearization } from '../../../sim/linearizability/search.js';
import { withoutClosure } from '../../../sim/linearizability/minimise.js';
import { staleReadIndex } from '../../../sim/linearizability/stale-reads.js';
import { EFFECT_GAP, get, sequentialHistory, type OpPlan } from './histories.js';

const planArb: fc.Arbitrary<OpPlan> = fc.record({
  kind: fc.constantFrom('put' as const, 'get' as const, 'cas' as const),
  keyIndex: fc.nat(7),
  expectedPick: fc.nat(5),
  // up to 6 effects' worth of slack either side: intervals overlap several neighbours
  callSlack: fc.nat(6 * EFFECT_GAP),
  returnSlack: fc.nat(6 * EFFECT_GAP),
  fate: fc.constantFrom(
    'returned' as const,
    'returned' as const,
    'returned' as const,
    'returned' as const,
    'applied' as const,
    'lost' as const,
  ),
});

const scenarioArb = fc.record({
  plans: fc.array(planArb, { minLength: 0, maxLength: 150, size: 'max' }),
  keyCount: fc.integer({ min: 1, max: 3 }),
  initialValue: fc.constantFrom(null, 'init'),
  reversed: fc.boolean(),
});

/** A completed operation that wrote its value (a put, or a cas that swapped). */
const wroteValue = (op: KvOperation): boolean =>
  op.returnTime !== null && (op.output?.kind === 'put' || (op.output?.kind === 'cas' && op.output.swapped));
const valueOf = (op: KvOperation): string => (op.input.kind === 'get' ? '' : op.input.value);

/** The history of `plans` plus one stale get (the property is skipped when there is no stale pair). */
function withStaleRead(
  plans: OpPlan[],
  keyCount: number,
  initialValue: string | null,
  pick: number,
  after: number,
  length: number,
): { history: KvOperation[]; staleGet: KvOperation } {
  const history = sequentialHistory(plans, keyCount, initialValue);
  // A stale pair: `overwriter` began after `overwritten` returned, and the stale get begins after
  // `overwriter` returned, yet sees `overwritten`'s value (or the initial one, overwritten by any
  // completed write). Values are unique, so no linearization can explain it.
  const writes = history.filter(wroteValue);
  const candidates: { key: string; stale: string | null; overwriter: KvOperation }[] = [];
  for (const overwriter of writes) {
    candidates.push({ key: overwriter.input.key, stale: initialValue, overwriter });
    for (const overwritten of writes) {
      if (overwritten.input.key === overwriter.input.key && overwritten.returnTime! < overwriter.callTime) {
        candidates.push({ key: overwriter.input.key, stale: valueOf(overwritten), overwriter });
      }
    }
  }
  fc.pre(candidates.length > 0);
  const { key, stale, overwriter } = candidates[pick % candidates.length]!;
  const callTime = overwriter.returnTime! + 1 + after;
  const staleGet = get(key, stale, callTime, callTime + length, 'stale-reader');
  history.push(staleGet);
  return { history, staleGet };
}

/**
 * Dropping any one operation (with what read a value it wrote) leaves a linearizable set. The
 * minimiser may have weakened a cas into a put of its value before reporting the original, so the
 * check weakens every cas that may have swapped: that is weaker than any state the minimiser held,
 * hence implied by its claim.
 */
function assertNoSingleDropKeepsViolation(minimal: KvOperation[], initialValue: string | null): void {
  const [key] = partitionByKey(minimal, initialValue);
  assert.ok(key !== undefined && partitionByKey(minimal, initialValue).length === 1, 'a minimal set spans one key');
  const weakest = key.encoded.map((op) =>
    op.kind === OP_CAS && op.outcome !== OUTCOME_FAILED
      ? { ...op, kind: OP_PUT, outcome: op.outcome === OUTCOME_UNKNOWN ? OUTCOME_UNKNOWN : OUTCOME_DONE, a: op.b, b: 0 }
      : op,
  );
  for (let i = 0; i < weakest.length; i++) {
    const rest = withoutClosure(weakest, [i]);
    if (rest.length === 0) continue;
    const verdict = searchLinearization(
      rest,
      key.initialState,
      STEP_BUDGET_DEFAULT,
      MEMO_TABLE_WORDS_MAX_DEFAULT,
    ).outcome;
    assert.equal(
      verdict,
      'ok',
      `dropping ${formatOperation(key.operations[key.encoded[i]!.source]!)} keeps the violation:\n${minimal.map(formatOperation).join('\n')}`,
    );
  }
}

describe('linearizability checker properties', () => {
  it('accepts every history made from a real sequential execution (overlapping intervals, indeterminate operations)', () => {
    fc.assert(
      fc.property(scenarioArb, ({ plans, keyCount, initialValue, reversed }) => {
        const history = sequentialHistory(plans, keyCount, initialValue);
        if (reversed) history.reverse();
        const result = checkKvHistory(history, { initialValue });
        assert.equal(result.verdict, 'ok', result.verdict === 'ok' ? '' : result.explanation);
      }),
      { numRuns: 300 },
    );
  });

  it('rejects a history with one injected stale read, minimised to a few operations including it', () => {
    let shown = false;
    fc.assert(
      fc.property(
        scenarioArb,
        fc.nat(),
        fc.nat(3 * EFFECT_GAP),
        fc.nat(3 * EFFECT_GAP),
        ({ plans, keyCount, initialValue, reversed }, pick, after, length) => {
          const { history, staleGet } = withStaleRead(plans, keyCount, initialValue, pick, after, length);
          if (reversed) history.reverse();

          const result = checkKvHistory(history, { initialValue });
          assert.equal(result.verdict, 'violation', `expected a violation for ${formatOperation(staleGet)}`);
          if (result.verdict !== 'violation') return;
          if (!shown) {
            console.log(`      example report:\n${result.explanation.replace(/^/gm, '        ')}`);
            shown = true;
          }
          assert.equal(result.key, staleGet.input.key);
          assert.ok(
            result.minimalOperations.some((op) => op.id === staleGet.id),
            `the stale get is missing from:\n${result.explanation}`,
          );
          // Not a size bound: the minimiser is greedy (delta debugging), so it can stop at a local
          // minimum larger than the smallest witness (CI once found a 5-operation one where gets fix the
          // order of two overlapping puts). What it promises is 1-minimality under its sound moves.
          assertNoSingleDropKeepsViolation(result.minimalOperations, initialValue);
          assert.ok(result.minimalOperations.every((op) => history.includes(op)));
          assert.equal(result.minimal, true);
          assert.equal(
            checkKvHistory(result.minimalOperations, { initialValue }).verdict,
            'violation',
            'the minimal set alone must not be linearizable',
          );
          assert.ok(result.explanation.includes(formatOperation(staleGet)));
        },
      ),
      { numRuns: 300 },
    );
  });

  it('the search alone (no quick stale-read reject) also rejects an injected stale read', () => {
    // checkKvHistory rejects these with the O(n log n) stale-read check first; this keeps the full
    // search honest on them too. Its proof of a violation visits every consistent cut of the
    // concurrent operations, so intervals here overlap fewer neighbours than above.
    const moderate = fc.record({
      plans: fc.array(
        planArb.map((p) => ({
          ...p,
          callSlack: p.callSlack % (2 * EFFECT_GAP),
          returnSlack: p.returnSlack % (2 * EFFECT_GAP),
        })),
        { maxLength: 50, size: 'max' },
      ),
      keyCount: fc.integer({ min: 1, max: 2 }),
      initialValue: fc.constantFrom(null, 'init'),
    });
    fc.assert(
      fc.property(
        moderate,
        fc.nat(),
        fc.nat(3 * EFFECT_GAP),
        fc.nat(3 * EFFECT_GAP),
        ({ plans, keyCount, initialValue }, pick, after, length) => {
          const { history, staleGet } = withStaleRead(plans, keyCount, initialValue, pick, after, length);
          const key = partitionByKey(history, initialValue).find((k) => k.key === staleGet.input.key)!;
          assert.ok(staleReadIndex(key.encoded, key.initialState) >= 0, 'the quick check misses a stale read');
          const alone = searchLinearization(
            key.encoded,
            key.initialState,
            STEP_BUDGET_DEFAULT,
            MEMO_TABLE_WORDS_MAX_DEFAULT,
          );
          assert.equal(alone.outcome, 'violation');
        },
      ),
      { numRuns: 60 },
    );
  });

  it('gives the same verdict and step count on every run (no clock, no randomness)', () => {
    fc.assert(
      fc.property(scenarioArb, ({ plans, keyCount, initialValue }) => {
        const history = sequentialHistory(plans, keyCount, initialValue);
        const budget = 50; // small, so some runs end undecided part-way
        assert.deepEqual(
          checkKvHistory(history, { initialValue, stepBudget: budget }),
          checkKvHistory([...history].reverse(), { initialValue, stepBudget: budget }),
        );
      }),
      { numRuns: 100 },
    );
  });
});
