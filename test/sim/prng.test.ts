import assert from 'node:assert/strict';
import fc from 'fast-check';
import { Prng, pickByFraction } from '../../sim/prng.js';

describe('sim/prng', () => {
  it('gives the same stream for the same seed text', () => {
    const a = new Prng('sim:7');
    const b = new Prng('sim:7');
    const drawsA = Array.from({ length: 50 }, () => a.next());
    const drawsB = Array.from({ length: 50 }, () => b.next());
    assert.deepEqual(drawsA, drawsB);
    assert.notDeepEqual(
      drawsA,
      Array.from({ length: 50 }, () => new Prng('sim:8').next()),
    );
  });

  it('forks by label, independent of how much the parent drew', () => {
    const fresh = new Prng('sim:1').fork('network');
    const used = new Prng('sim:1');
    for (let i = 0; i < 1000; i++) used.next();
    const forked = used.fork('network');
    assert.deepEqual(
      Array.from({ length: 10 }, () => forked.next()),
      Array.from({ length: 10 }, () => fresh.next()),
    );
  });

  it('keeps int, between, uniform and pick in range', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 1e6 }), fc.integer({ min: 1, max: 1000 }), (seed, n) => {
        const prng = new Prng(`t:${seed}`);
        const i = prng.int(n);
        const b = prng.between(-n, n);
        const u = prng.uniform(2, 3);
        return Number.isInteger(i) && i >= 0 && i < n && b >= -n && b <= n && u >= 2 && u < 3 && prng.uint32() >= 0;
      }),
    );
  });

  it('refuses impossible ranges with a clear error', () => {
    const prng = new Prng('x');
    assert.throws(() => prng.int(0), /count >= 1/);
    assert.throws(() => prng.between(3, 2), /min <= max/);
    assert.throws(() => prng.pick([]), /empty/);
  });

  it('shuffles to a permutation and picks by fraction deterministically', () => {
    const shuffled = new Prng('s').shuffled([1, 2, 3, 4, 5, 6]);
    assert.deepEqual([...shuffled].sort(), [1, 2, 3, 4, 5, 6]);
    assert.equal(pickByFraction([10, 20, 30], 0), 10);
    assert.equal(pickByFraction([10, 20, 30], 0.99), 30);
    assert.equal(pickByFraction([], 0.5), undefined);
  });
});
