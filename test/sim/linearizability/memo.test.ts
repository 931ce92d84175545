// The memo table's key: the linearized set's stored window must always be exactly right, because a
// configuration found "present" by mistake is skipped, which can turn into a false violation. The
// full-set hash hides most window mistakes, so these tests check the window directly and force
// hash collisions.
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { OP_PUT, OUTCOME_DONE, OUTCOME_UNKNOWN, type EncodedOp } from '../../../sim/linearizability/encode.js';
import { LinearizedSet } from '../../../sim/linearizability/linearized-set.js';
import {
  MEMO_FULL,
  MEMO_INSERTED,
  MEMO_PRESENT,
  MemoTable,
  bitHashes,
} from '../../../sim/linearizability/memo-table.js';

function encodedOps(indeterminate: boolean[]): EncodedOp[] {
  return indeterminate.map((open, source) => ({
    source,
    kind: OP_PUT,
    outcome: open ? OUTCOME_UNKNOWN : OUTCOME_DONE,
    a: 1,
    b: 0,
    callTime: source,
    returnTime: open ? Infinity : source + 1,
  }));
}

describe('linearizability memo table', () => {
  it('keeps lowWord, highWord and the hash equal to a recomputation after any adds and removes', () => {
    // As in a search: a prefix linearized (whole words full), then changes near its edge.
    const scenario = fc.record({
      open: fc.array(
        fc.nat(9).map((n) => n === 0),
        { minLength: 1, maxLength: 200, size: 'max' },
      ),
      prefix: fc.nat(200),
      toggles: fc.array(fc.integer({ min: -40, max: 40 }), { maxLength: 300, size: 'max' }),
    });
    fc.assert(
      fc.property(scenario, ({ open, prefix, toggles }) => {
        const ops = encodedOps(open);
        const set = new LinearizedSet(ops);
        const members = new Set<number>();
        const hashes = bitHashes(ops.length);
        const edge = Math.min(prefix, ops.length);
        const changes = [
          ...Array.from({ length: edge }, (_, i) => i),
          ...toggles.map((t) => Math.min(ops.length - 1, Math.max(0, edge + t))),
        ];
        for (const op of changes) {
          if (members.has(op)) {
            members.delete(op);
            set.remove(op);
          } else {
            members.add(op);
            set.add(op);
          }
          let low = 0;
          while (low < set.completedWords && set.bits[low] === 0xffffffff) low++;
          let high = set.completedWords - 1;
          while (high >= 0 && set.bits[high] === 0) high--;
          assert.equal(set.lowWord, low);
          assert.equal(set.highWord, high);
          assert.equal(set.hash, [...members].reduce((h, m) => (h ^ hashes[m]!) >>> 0, 0) >>> 0);
          assert.equal(
            set.bits.reduce((n, w) => n + w.toString(2).split('1').length - 1, 0),
            members.size,
          );
        }
      }),
      { numRuns: 200 },
    );
  });

  it('tells configurations apart by their bits and state even when every hash collides', () => {
    const ops = encodedOps(Array.from({ length: 80 }, (_, i) => i % 7 === 0));
    const memo = new MemoTable(1 << 20);
    const configs: { members: number[]; state: number }[] = [];
    for (let i = 0; i < 3000; i++) configs.push({ members: [i % 80, (i * 7 + 3) % 80, (i >> 4) % 80], state: i % 5 });
    const setOf = (members: number[]): LinearizedSet => {
      const set = new LinearizedSet(ops);
      for (const m of new Set(members)) set.add(m);
      set.hash = 0; // every configuration collides
      return set;
    };
    const seen = new Set<string>();
    for (const { members, state } of configs) {
      const id = `${[...new Set(members)].sort((x, y) => x - y).join(',')}/${state}`;
      const expected = seen.has(id) ? MEMO_PRESENT : MEMO_INSERTED;
      seen.add(id);
      assert.equal(memo.insertIfAbsent(setOf(members), state), expected, id);
    }
    assert.equal(memo.size, seen.size);
    assert.ok(seen.size > 1024, 'the head table must have grown'); // rehash kept every chain whole
    for (const { members, state } of configs) assert.equal(memo.insertIfAbsent(setOf(members), state), MEMO_PRESENT);
  });

  it('reports MEMO_FULL instead of growing past wordsMax', () => {
    const ops = encodedOps(new Array<boolean>(64).fill(false));
    const memo = new MemoTable(100);
    let inserted = 0;
    for (let i = 0; i < 64; i++) {
      const set = new LinearizedSet(ops);
      set.add(i);
      const r = memo.insertIfAbsent(set, 0);
      if (r === MEMO_FULL) break;
      assert.equal(r, MEMO_INSERTED);
      inserted++;
    }
    assert.ok(inserted > 0 && inserted < 64, `inserted ${inserted}`);
  });
});
