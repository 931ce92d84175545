import assert from 'node:assert/strict';
import fc from 'fast-check';
import { pacedPause, type PacerClock } from '../../../transports/storage/loop-pacer.js';
import { storageLimits } from '../../../transports/storage/limits.js';

/** FakeClock: time moves only when a test runs a piece of work or the pacer sleeps; every wait is recorded. */
class FakeClock implements PacerClock {
  nowValueMs = 1000;
  readonly waits: Array<number | 'turn'> = [];
  nowMs(): number {
    return this.nowValueMs;
  }
  sleepMs(ms: number): Promise<void> {
    this.waits.push(ms);
    this.nowValueMs += ms;
    return Promise.resolve();
  }
  nextTurn(): Promise<void> {
    this.waits.push('turn');
    return Promise.resolve();
  }
  work(ms: number): void {
    this.nowValueMs += ms;
  }
}

describe('pacedPause (a staging keeps to its share of the loop)', () => {
  it('waits three times a piece at a 25% share, and times the next piece from the end of the wait', async () => {
    const clock = new FakeClock();
    const pause = pacedPause(25, clock);
    clock.work(4);
    await pause();
    clock.work(2);
    await pause();
    assert.deepEqual(clock.waits, [12, 6]);
  });

  it('takes one loop turn for a piece too short to wait on, and always at a 100% share', async () => {
    const clock = new FakeClock();
    const short = pacedPause(25, clock);
    clock.work(0.2);
    await short();
    const whole = pacedPause(100, clock);
    clock.work(50);
    await whole();
    assert.deepEqual(clock.waits, ['turn', 'turn']);
  });

  it('keeps busy time at the share of all time over any run of pieces', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 99 }),
        fc.array(fc.integer({ min: 1, max: 200 }), { minLength: 1, maxLength: 30 }),
        async (share, pieces) => {
          const clock = new FakeClock();
          const startMs = clock.nowMs();
          const pause = pacedPause(share, clock);
          let busyMs = 0;
          for (const piece of pieces) {
            clock.work(piece);
            busyMs += piece;
            await pause();
          }
          const totalMs = clock.nowMs() - startMs;
          const pacedMs = (busyMs * 100) / share;
          // A wait under a millisecond becomes a loop turn (no time): the total can fall short of the paced one by
          // under a millisecond per piece, never exceed it.
          assert.ok(totalMs <= pacedMs + 1e-9, `${totalMs} ms in all for ${busyMs} ms busy at ${share}%`);
          assert.ok(totalMs > pacedMs - pieces.length, `${totalMs} ms in all for ${busyMs} ms busy at ${share}%`);
        },
      ),
    );
  });

  it('is a storage limit with a range of 1..100', () => {
    assert.equal(storageLimits().snapshotStageLoopSharePercent, 50);
    assert.throws(() => storageLimits({ snapshotStageLoopSharePercent: 0 }), /snapshotStageLoopSharePercent/);
    assert.throws(() => storageLimits({ snapshotStageLoopSharePercent: 101 }), /1\.\.100/);
    assert.throws(() => pacedPause(0), /above 0/);
  });
});
