// ReadIndexBatch (store/read-index-batch.ts): concurrent reads share read-index calls, yet every
// read gets an index taken after it began, so it sees every write acknowledged before it. The fake call
// answers with the commit seqno at the moment the call STARTED (the worst case: a leader that answered at
// once); the property interleaves writes, reads, answers and failures at random. A call starts one loop
// turn after its first reader (or the previous answer), so the tests let a turn pass (flush) before
// looking at the calls started.
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { ReadIndexBatch } from '../../store/read-index-batch.js';

interface PendingCall {
  seq: number;
  deadlineAt: number;
  resolve: (seq: number) => void;
  reject: (err: Error) => void;
}

const flush = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('store: read-index batching', () => {
  it('gives every read an index at least the commit seqno when it began, with at most the bound of calls in flight (unbounded on a leader)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.constantFrom('write', 'read', 'read', 'answer', 'fail'), { maxLength: 60 }),
        // In flight at most: 1 (no overlap), 2 or 3 (a follower's bound), or unbounded (a leader).
        fc.constantFrom(1, 2, 3, Infinity),
        async (ops, inFlightMax) => {
          let commit = 0;
          let callsStarted = 0;
          const calls: PendingCall[] = [];
          const batch = new ReadIndexBatch(
            (deadlineAt) =>
              new Promise<number>((resolve, reject) => {
                callsStarted++;
                calls.push({ seq: commit, deadlineAt, resolve, reject });
              }),
            (inFlight) => inFlight < inFlightMax,
          );
          const reads: Array<{ commitAtStart: number; outcome: Promise<number | Error> }> = [];
          let readCount = 0;
          for (const op of ops) {
            if (op === 'write') commit++;
            else if (op === 'read') {
              readCount++;
              reads.push({
                commitAtStart: commit,
                outcome: batch.readIndex(1_000 + readCount).catch((err: Error) => err),
              });
            } else {
              const call = calls.shift();
              if (op === 'answer') call?.resolve(call.seq);
              else call?.reject(new Error('no leader'));
            }
            await flush();
            assert.ok(calls.length <= inFlightMax, `${calls.length} calls in flight, above ${inFlightMax}`);
          }
          // Drain: answer whatever is still asked (a call gathered during the last answer starts a turn later).
          for (let guard = 0; guard < 10; guard++) {
            await flush();
            await flush();
            const call = calls.shift();
            if (!call) break;
            call.resolve(call.seq);
          }
          assert.equal(calls.length, 0, 'every gathered call was started and answered');
          assert.ok(callsStarted <= readCount, `${callsStarted} calls for ${readCount} reads`);
          for (const read of reads) {
            const outcome = await read.outcome;
            if (outcome instanceof Error) continue;
            assert.ok(
              outcome >= read.commitAtStart,
              `a read that began at commit ${read.commitAtStart} got index ${outcome}`,
            );
          }
        },
      ),
      { numRuns: 500 },
    );
  });

  it('shares one call among readers that arrive together, and passes the earliest deadline on', async () => {
    const deadlines: number[] = [];
    const answers: Array<() => void> = [];
    const batch = new ReadIndexBatch(
      (deadlineAt) =>
        new Promise<number>((resolve) => {
          deadlines.push(deadlineAt);
          answers.push(() => resolve(deadlines.length * 10));
        }),
    );
    const first = batch.readIndex(500);
    await flush();
    const gathered = [batch.readIndex(900), batch.readIndex(700), batch.readIndex(800)];
    await flush();
    assert.deepEqual(deadlines, [500], 'the later readers wait for the next call');
    answers[0]!();
    assert.equal(await first, 10);
    await flush();
    assert.deepEqual(deadlines, [500, 700], 'one call for the three, bounded by the earliest deadline');
    answers[1]!();
    assert.deepEqual(await Promise.all(gathered), [20, 20, 20]);
  });

  it('gathers the readers of one loop turn into one call, which starts on the next turn', async () => {
    const deadlines: number[] = [];
    const answers: Array<(seq: number) => void> = [];
    const batch = new ReadIndexBatch(
      (deadlineAt) =>
        new Promise<number>((resolve) => {
          deadlines.push(deadlineAt);
          answers.push(resolve);
        }),
    );
    const readers = [batch.readIndex(900), batch.readIndex(600), batch.readIndex(800)];
    assert.deepEqual(deadlines, [], 'no call before the turn ends');
    await flush();
    assert.deepEqual(deadlines, [600], 'one call for the turn, bounded by the earliest deadline');
    answers[0]!(4);
    assert.deepEqual(await Promise.all(readers), [4, 4, 4]);
    assert.deepEqual({ calls: batch.stats.calls, readers: batch.stats.readers }, { calls: 1, readers: 3 });
  });

  it('readers arriving while a call is in flight, and in the turn its answer arrives, share the next call', async () => {
    const answers: Array<(seq: number) => void> = [];
    const batch = new ReadIndexBatch(
      () =>
        new Promise<number>((resolve) => {
          answers.push(resolve);
        }),
    );
    const first = batch.readIndex(1_000);
    await flush();
    assert.equal(answers.length, 1);
    const during = batch.readIndex(1_000);
    answers[0]!(1);
    // Later in the same turn (after the answer's callbacks ran), as the I/O callbacks of other requests would.
    for (let hop = 0; hop < 5; hop++) await Promise.resolve();
    assert.equal(await first, 1);
    const sameTurn = batch.readIndex(1_000);
    assert.equal(answers.length, 1, 'the next call waits for the turn to end');
    await flush();
    assert.equal(answers.length, 2, 'one call for both');
    answers[1]!(2);
    assert.deepEqual(await Promise.all([during, sameTurn]), [2, 2]);
    assert.deepEqual({ calls: batch.stats.calls, readers: batch.stats.readers }, { calls: 2, readers: 3 });
  });

  it('never hands a reader the answer of a call that started before it arrived', async () => {
    const answers: Array<(seq: number) => void> = [];
    const batch = new ReadIndexBatch(
      () =>
        new Promise<number>((resolve) => {
          answers.push(resolve);
        }),
    );
    const early = batch.readIndex(1_000);
    await flush();
    const late = batch.readIndex(1_000);
    answers[0]!(1);
    assert.equal(await early, 1);
    await flush();
    answers[1]!(2);
    assert.equal(await late, 2, 'the late reader got the call started after it');
  });

  it("with overlap (a leader), starts the next turn's call while one is in flight; without, waits for it", async () => {
    for (const overlap of [true, false]) {
      const answers: Array<(seq: number) => void> = [];
      const batch = new ReadIndexBatch(
        () =>
          new Promise<number>((resolve) => {
            answers.push(resolve);
          }),
        () => overlap,
      );
      const first = batch.readIndex(1_000);
      await flush();
      const second = [batch.readIndex(1_000), batch.readIndex(1_000)];
      await flush();
      assert.equal(answers.length, overlap ? 2 : 1, `overlap ${overlap}`);
      answers[0]!(1);
      assert.equal(await first, 1);
      await flush();
      answers[1]!(2);
      assert.deepEqual(
        await Promise.all(second),
        [2, 2],
        "the second turn's readers share one call started after them",
      );
    }
  });

  it('with a bound (a follower), starts a call per turn while fewer than the bound are in flight, then waits for one to settle', async () => {
    const answers: Array<(seq: number) => void> = [];
    const batch = new ReadIndexBatch(
      () =>
        new Promise<number>((resolve) => {
          answers.push(resolve);
        }),
      (inFlight) => inFlight < 2,
    );
    const first = batch.readIndex(1_000);
    await flush();
    const second = batch.readIndex(1_000);
    await flush();
    assert.equal(answers.length, 2, "the second turn's reader is asked for at once, beside the call in flight");
    const third = [batch.readIndex(1_000), batch.readIndex(1_000)];
    await flush();
    assert.equal(answers.length, 2, 'at the bound: the third turn waits');
    answers[1]!(2);
    assert.equal(await second, 2, 'answers may come back out of order: each reader gets its own call');
    await flush();
    assert.equal(answers.length, 3, 'a settled call lets the waiting turn start');
    answers[0]!(1);
    answers[2]!(3);
    assert.equal(await first, 1);
    assert.deepEqual(await Promise.all(third), [3, 3]);
    const { calls, readers, gatherMs, callMs } = batch.stats;
    assert.deepEqual({ calls, readers }, { calls: 3, readers: 4 });
    assert.ok(gatherMs >= 0 && callMs > 0, `waits counted: gather ${gatherMs} ms, call ${callMs} ms`);
  });

  it('fails every reader of a failed call, and the next reader starts afresh', async () => {
    let fail = true;
    const batch = new ReadIndexBatch(() => (fail ? Promise.reject(new Error('no leader')) : Promise.resolve(7)));
    await assert.rejects(batch.readIndex(1), /no leader/);
    fail = false;
    assert.equal(await batch.readIndex(1), 7);
  });
});
