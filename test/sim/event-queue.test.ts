import assert from 'node:assert/strict';
import fc from 'fast-check';
import { EventQueue } from '../../sim/event-queue.js';

describe('sim/event-queue', () => {
  it('pops by time, then by the order events were pushed', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 50 }), { maxLength: 300 }), (times) => {
        const queue = new EventQueue<number>();
        times.forEach((t, i) => queue.push(t, i));
        const popped: number[] = [];
        for (let e = queue.pop(); e; e = queue.pop()) popped.push(e.item);
        const expected = times
          .map((t, i) => ({ t, i }))
          .sort((a, b) => a.t - b.t || a.i - b.i)
          .map((x) => x.i);
        assert.deepEqual(popped, expected);
      }),
    );
  });

  it('interleaves pushes and pops correctly', () => {
    const queue = new EventQueue<string>();
    queue.push(10, 'a');
    queue.push(5, 'b');
    assert.equal(queue.pop()!.item, 'b');
    queue.push(7, 'c');
    queue.push(10, 'd');
    assert.deepEqual([queue.pop()!.item, queue.pop()!.item, queue.pop()!.item], ['c', 'a', 'd']);
    assert.equal(queue.pop(), undefined);
    assert.equal(queue.peekTimeUs(), undefined);
  });

  it('rejects a non-finite time', () => {
    assert.throws(() => new EventQueue<number>().push(Number.NaN, 1), /finite/);
  });
});
