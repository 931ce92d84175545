// Waiters (store/waiters.ts): waits on a growing counter (the applied seqno) are released by seq
// from a heap — a check reads the counter once, whatever the number of waiters — and released exactly when the
// counter reaches their seq, as the plain condition waits would be; deadlines, the count bound and rejectAll
// cover both kinds.
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { Waiters } from '../../store/waiters.js';
import { StoreUnavailableError } from '../../store/errors.js';

const farDeadline = (): number => Date.now() + 60_000;
const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('node: waiters', () => {
  it('releases seq waits exactly when the counter reaches them, reading the counter once per check', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.oneof(
            fc.record({ wait: fc.integer({ min: 0, max: 30 }) }),
            fc.record({ advance: fc.integer({ min: 0, max: 5 }) }),
          ),
          { maxLength: 80 },
        ),
        async (ops) => {
          let applied = 0;
          let counterReads = 0;
          const counter = (): number => {
            counterReads++;
            return applied;
          };
          const waiters = new Waiters(1_000);
          const waits: Array<{ seq: number; released: boolean }> = [];
          for (const op of ops) {
            if ('wait' in op) {
              const wait = { seq: op.wait, released: false };
              waits.push(wait);
              void waiters.untilReached(counter, op.wait, farDeadline(), 'test').then(() => {
                wait.released = true;
              });
            } else {
              applied += op.advance;
              counterReads = 0;
              waiters.check();
              assert.ok(counterReads <= 1, `${counterReads} reads of the counter in one check`);
            }
            await turn();
            for (const wait of waits)
              assert.equal(wait.released, wait.seq <= applied, `a wait for ${wait.seq} at applied ${applied}`);
            assert.equal(waiters.count, waits.filter((wait) => !wait.released).length);
          }
          waiters.rejectAll(new Error('done'));
          assert.equal(waiters.count, 0);
        },
      ),
      { numRuns: 200 },
    );
  });

  it('times a seq wait out with STORE_UNAVAILABLE, and forgets it', async () => {
    let applied = 0;
    const counter = (): number => applied;
    const waiters = new Waiters(10);
    const late = waiters.untilReached(counter, 5, Date.now() + 20, 'seq 5');
    const kept = waiters.untilReached(counter, 6, farDeadline(), 'seq 6');
    await assert.rejects(
      late,
      (err: unknown) => err instanceof StoreUnavailableError && /timed out waiting for seq 5/.test(err.message),
    );
    assert.equal(waiters.count, 1);
    applied = 6;
    waiters.check();
    await kept;
    assert.equal(waiters.count, 0);
  });

  it('bounds the waits of both kinds together, and rejectAll ends them all', async () => {
    const waiters = new Waiters(2);
    const counter = (): number => 0;
    const first = waiters.untilReached(counter, 1, farDeadline(), 'seq 1');
    const second = waiters.until(() => false, farDeadline(), 'never');
    await assert.rejects(waiters.untilReached(counter, 2, farDeadline(), 'seq 2'), /waiterCountMax 2/);
    await assert.rejects(
      waiters.until(() => false, farDeadline(), 'never'),
      /waiterCountMax 2/,
    );
    waiters.rejectAll(new StoreUnavailableError('node stopped'));
    await assert.rejects(first, /node stopped/);
    await assert.rejects(second, /node stopped/);
    assert.equal(waiters.count, 0);
    assert.equal(
      await waiters.untilReached(counter, 0, farDeadline(), 'seq 0'),
      undefined,
      'a reached seq resolves at once',
    );
  });

  it('drops timed-out waits from the heap while the counter stands still', async () => {
    const counter = (): number => 0;
    const waiters = new Waiters(1_000);
    const waits = Array.from({ length: 200 }, (_, index) =>
      waiters.untilReached(counter, index + 1, Date.now() + 10, 'stuck').catch(() => 'timed out'),
    );
    assert.deepEqual(new Set(await Promise.all(waits)), new Set(['timed out']));
    const heap = (waiters as unknown as { bySeq: Map<unknown, { items: unknown[] }> }).bySeq.get(counter)!;
    assert.ok(heap.items.length <= 1, `${heap.items.length} dead entries kept`);
    assert.equal(waiters.count, 0);
  });
});
