// LazyMinHeap (store/lazy-heap.ts), the heap under the store's proposal deadlines and seq waiters: whatever the
// pushes and settles, the live entries come out in key order, none lost, and compaction keeps exactly the live ones.
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { LazyMinHeap } from '../../store/lazy-heap.js';

interface Entry {
  key: number;
  settled: boolean;
}

describe('store/lazy-heap', () => {
  it('pops the live entries in key order after any pushes and settles', () => {
    fc.assert(
      fc.property(
        fc.array(fc.record({ key: fc.integer({ min: 0, max: 50 }), settle: fc.boolean() }), { maxLength: 200 }),
        (script) => {
          const heap = new LazyMinHeap<Entry>((e) => e.key);
          const live: number[] = [];
          for (const { key, settle } of script) {
            const entry = { key, settled: false };
            heap.push(entry);
            if (settle) {
              entry.settled = true;
              heap.dead++;
              heap.compactIfMostlyDead();
            } else live.push(key);
          }
          assert.ok(heap.dead <= heap.items.length - heap.dead || heap.items.length === 0);
          const popped: number[] = [];
          for (let top = heap.pop(); top !== undefined; top = heap.pop()) if (!top.settled) popped.push(top.key);
          assert.deepEqual(
            popped,
            live.sort((a, b) => a - b),
          );
        },
      ),
    );
  });

  it('takeAll empties it, settled entries included', () => {
    const heap = new LazyMinHeap<Entry>((e) => e.key);
    heap.push({ key: 2, settled: false });
    heap.push({ key: 1, settled: true });
    heap.dead = 1;
    assert.equal(heap.takeAll().length, 2);
    assert.equal(heap.items.length, 0);
    assert.equal(heap.dead, 0);
  });
});
