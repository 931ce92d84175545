// SortedKeys (blocks of sorted keys) against the obvious model: one sorted array.
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { SORTED_KEYS_BLOCK_COUNT_MAX, SortedKeys } from '../../store/sorted-keys.js';

type Op =
  | { kind: 'insert'; key: string }
  | { kind: 'remove'; key: string }
  | { kind: 'page'; prefix: string; limit: number; after: string | undefined };

function modelPage(
  model: string[],
  prefix: string,
  limit: number,
  after?: string,
): { keys: string[]; nextAfter: string | null } {
  const start = after !== undefined && after >= prefix ? after : undefined;
  const matching = model.filter((k) => k.startsWith(prefix) && (start === undefined || k > start));
  const keys = matching.slice(0, limit);
  return { keys, nextAfter: matching.length > limit && keys.length > 0 ? keys[keys.length - 1]! : null };
}

describe('store: SortedKeys', () => {
  // Small alphabet and short keys: prefixes collide and blocks split and empty often.
  const key = fc.stringMatching(/^[ab/]{0,6}$/);
  const op: fc.Arbitrary<Op> = fc.oneof(
    { weight: 5, arbitrary: key.map((k) => ({ kind: 'insert' as const, key: k })) },
    { weight: 2, arbitrary: key.map((k) => ({ kind: 'remove' as const, key: k })) },
    {
      weight: 2,
      arbitrary: fc.record({
        kind: fc.constant('page' as const),
        prefix: fc.stringMatching(/^[ab/]{0,2}$/),
        limit: fc.integer({ min: 1, max: 40 }),
        after: fc.option(key, { nil: undefined }),
      }),
    },
  );

  it('property: inserts, removes and pages agree with a sorted array', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 2, max: 8 }),
        fc.array(key, { maxLength: 30 }),
        fc.array(op, { maxLength: 400 }),
        (blockCountMax, initial, ops) => {
          let model = [...new Set(initial)].sort();
          const keys = SortedKeys.fromSorted(model, blockCountMax);
          for (const o of ops) {
            if (o.kind === 'insert') {
              if (model.includes(o.key)) continue; // callers insert only keys that are not there
              keys.insert(o.key);
              model = [...model, o.key].sort();
            } else if (o.kind === 'remove') {
              keys.remove(o.key);
              model = model.filter((k) => k !== o.key);
            } else {
              assert.deepEqual(keys.page(o.prefix, o.limit, o.after), modelPage(model, o.prefix, o.limit, o.after));
            }
            assert.equal(keys.size, model.length);
          }
          assert.deepEqual(keys.all(), model);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('splits blocks past SORTED_KEYS_BLOCK_COUNT_MAX and pages across their edges', () => {
    const keys = new SortedKeys();
    const count = SORTED_KEYS_BLOCK_COUNT_MAX * 5 + 7;
    // Inserted out of order so splits happen in the middle as well as at the end.
    const all = Array.from({ length: count }, (_, i) => `k/${String(i).padStart(6, '0')}`);
    for (let i = 0; i < count; i += 2) keys.insert(all[i]!);
    for (let i = count - 1 - ((count - 1) % 2 === 0 ? 1 : 0); i > 0; i -= 2) keys.insert(all[i]!);
    assert.deepEqual(keys.all(), all);
    const seen: string[] = [];
    let after: string | undefined;
    for (let pages = 0; pages < 100; pages++) {
      const page = keys.page('k/', 333, after);
      seen.push(...page.keys);
      if (page.nextAfter === null) break;
      after = page.nextAfter;
    }
    assert.deepEqual(seen, all);
    assert.deepEqual(SortedKeys.fromSorted(all).page('k/0012', 5).keys, all.slice(1200, 1205));
  });
});
