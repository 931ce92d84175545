// The store's state machine alone: commands in entries, compare-and-set decided at apply,
// de-duplication by request id, snapshots that round-trip, and bad bytes refused with reasons.
import assert from 'node:assert/strict';
import fc from 'fast-check';
import type { StoreChange } from '../../store/document-store.js';
import { EntryKind, type Entry } from '../../engine/types.js';
import { decodeCommand, encodeCommand, type StoreCommand } from '../../store/command.js';
import { DEDUP_ENTRY_COUNT_MAX } from '../../store/limits.js';
import { decodeStoreSnapshot, encodeCapture, StoreStateMachine } from '../../store/state-machine.js';

let nextSeq = 1;
function entryOf(command: StoreCommand | Uint8Array, seq = nextSeq++): Entry {
  return {
    seq,
    term: 1,
    kind: EntryKind.EventBatch,
    data: command instanceof Uint8Array ? command : encodeCommand(command),
  };
}

describe('store: state machine', function () {
  beforeEach(() => {
    nextSeq = 1;
  });

  it('versions every document by the seqno of the entry that wrote it', function () {
    const sm = new StoreStateMachine();
    assert.deepEqual(sm.apply(entryOf({ op: 'put', key: 'a', value: { x: 1 }, requestId: 'r1' })).result, {
      outcome: 'applied',
      version: 1,
      existed: false,
    });
    sm.apply({ seq: 2, term: 1, kind: EntryKind.TermBarrier, data: new Uint8Array(0) });
    nextSeq = 3;
    assert.deepEqual(sm.apply(entryOf({ op: 'put', key: 'a', value: { x: 2 }, requestId: 'r2' })).result, {
      outcome: 'applied',
      version: 3,
      existed: true,
    });
    assert.deepEqual(sm.get('a'), { value: { x: 2 }, version: 3 });
    assert.equal(sm.appliedSeq, 3);
    assert.equal(sm.size, 1);
  });

  it('decides compare-and-set at apply: a conflict is a committed no-op that reports the actual version', function () {
    const sm = new StoreStateMachine();
    sm.apply(entryOf({ op: 'put', key: 'a', value: { x: 1 }, requestId: 'r1' }));
    assert.deepEqual(
      sm.apply(entryOf({ op: 'put', key: 'a', value: { x: 9 }, expectedVersion: 7, requestId: 'r2' })).result,
      { outcome: 'conflict', actualVersion: 1 },
    );
    assert.deepEqual(
      sm.apply(entryOf({ op: 'put', key: 'b', value: { y: 1 }, expectedVersion: 0, requestId: 'r3' })).result,
      { outcome: 'applied', version: 3, existed: false },
    );
    assert.deepEqual(
      sm.apply(entryOf({ op: 'put', key: 'b', value: { y: 2 }, expectedVersion: 0, requestId: 'r4' })).result,
      { outcome: 'conflict', actualVersion: 3 },
    );
    assert.deepEqual(sm.apply(entryOf({ op: 'delete', key: 'a', expectedVersion: 1, requestId: 'r5' })).result, {
      outcome: 'applied',
      version: 5,
      existed: true,
    });
    assert.deepEqual(sm.apply(entryOf({ op: 'delete', key: 'a', requestId: 'r6' })).result, {
      outcome: 'applied',
      version: 6,
      existed: false,
    });
    assert.equal(sm.get('a'), null);
    assert.deepEqual(sm.get('b'), { value: { y: 1 }, version: 3 });
    assert.equal(sm.appliedSeq, 6);
  });

  it('applies a request id once: a retried command gets the first outcome and changes nothing', function () {
    const sm = new StoreStateMachine();
    const first = sm.apply(entryOf({ op: 'put', key: 'a', value: { x: 1 }, expectedVersion: 0, requestId: 'same' }));
    const again = sm.apply(entryOf({ op: 'put', key: 'a', value: { x: 1 }, expectedVersion: 0, requestId: 'same' }));
    assert.deepEqual(again.result, first.result);
    assert.deepEqual(sm.get('a'), { value: { x: 1 }, version: 1 });
    assert.deepEqual(sm.recall('same'), { seq: 1, result: first.result });
  });

  it('remembers at most DEDUP_ENTRY_COUNT_MAX request ids, forgetting the oldest first', function () {
    const sm = new StoreStateMachine();
    for (let i = 0; i <= DEDUP_ENTRY_COUNT_MAX; i++)
      sm.apply(entryOf({ op: 'put', key: `k${i % 10}`, value: { i }, requestId: `r${i}` }));
    assert.equal(sm.recall('r0'), undefined);
    assert.ok(sm.recall('r1'));
    assert.ok(sm.recall(`r${DEDUP_ENTRY_COUNT_MAX}`));
  });

  it('refuses entries that are not commands deterministically, and throws on a gap', function () {
    const sm = new StoreStateMachine();
    const rejected = sm.apply(entryOf(new TextEncoder().encode('{"v":1,"op":"drop","key":"k","requestId":"r"}')));
    assert.equal(rejected.result?.outcome, 'rejected');
    assert.match((rejected.result as { reason: string }).reason, /unknown command op/);
    assert.equal(sm.apply(entryOf(new Uint8Array([0xff, 0xfe]))).result?.outcome, 'rejected');
    assert.equal(sm.appliedSeq, 2);
    assert.throws(
      () => sm.apply({ seq: 5, term: 1, kind: EntryKind.EventBatch, data: new Uint8Array(0) }),
      /does not follow appliedSeq 2/,
    );
    assert.equal(
      sm.apply({ seq: 1, term: 1, kind: EntryKind.EventBatch, data: new Uint8Array(0) }).result,
      null,
      'an entry already applied is skipped',
    );
  });

  it('decodeCommand names what is wrong', function () {
    const bad = (text: string): string => {
      const decoded = decodeCommand(new TextEncoder().encode(text));
      assert.equal(decoded.ok, false);
      return (decoded as { reason: string }).reason;
    };
    assert.match(bad('[]'), /not a JSON object/);
    assert.match(bad('{"v":2,"op":"put"}'), /version 2/);
    assert.match(bad('{"v":1,"op":"put","key":"","requestId":"r"}'), /key/);
    assert.match(bad('{"v":1,"op":"put","key":"k","requestId":"r","value":[1]}'), /JSON object/);
    assert.match(
      bad('{"v":1,"op":"put","key":"k","requestId":"r","value":{},"expectedVersion":-1}'),
      /expectedVersion/,
    );
    assert.match(bad(`{"v":1,"op":"delete","key":"k","requestId":"${'x'.repeat(200)}"}`), /requestId/);
  });

  it('lists keys under a prefix in order, page by page', function () {
    const sm = new StoreStateMachine();
    for (const key of ['b/2', 'a/1', 'b/1', 'c/1', 'b/3'])
      sm.apply(entryOf({ op: 'put', key, value: {}, requestId: key }));
    const page = sm.list('b/', 2);
    assert.deepEqual(
      page.entries.map((e) => e.key),
      ['b/1', 'b/2'],
    );
    assert.equal(page.nextAfter, 'b/2');
    const rest = sm.list('b/', 2, page.nextAfter!);
    assert.deepEqual(
      rest.entries.map((e) => e.key),
      ['b/3'],
    );
    assert.equal(rest.nextAfter, null);
  });

  it('round-trips through a snapshot and tells watchers what a restore changed', function () {
    const source = new StoreStateMachine();
    source.apply(entryOf({ op: 'put', key: 'keep', value: { v: 1 }, requestId: 'r1' }));
    source.apply(entryOf({ op: 'put', key: 'new', value: { v: 2 }, requestId: 'r2' }));
    const decoded = decodeStoreSnapshot(source.encodeSnapshot());
    assert.ok(decoded.ok);
    nextSeq = 1;
    const target = new StoreStateMachine();
    target.apply(entryOf({ op: 'put', key: 'keep', value: { v: 1 }, requestId: 'r1' }));
    target.apply(entryOf({ op: 'put', key: 'gone', value: { v: 0 }, requestId: 'other' }));
    const changes: StoreChange[] = [];
    target.watch('', (c) => changes.push(c));
    target.reset();
    target.restore(decoded.state);
    assert.deepEqual(changes, [
      { kind: 'delete', key: 'gone', version: 2 },
      { kind: 'put', key: 'new', value: { v: 2 }, version: 2 },
    ]);
    assert.equal(target.encodeSnapshot().toString(), source.encodeSnapshot().toString());
    assert.deepEqual(target.recall('r2')?.seq, 2);
  });

  it('encodes a capture in chunks to the same bytes, and applies after the capture do not leak into it', async function () {
    const sm = new StoreStateMachine();
    for (let i = 0; i < 25; i++)
      sm.apply(
        entryOf({ op: 'put', key: `k/${String(i).padStart(2, '0')}`, value: { i, s: 'é"\\' }, requestId: `c${i}` }),
      );
    sm.apply(entryOf({ op: 'delete', key: 'k/03', requestId: 'd3' }));
    const whole = Buffer.from(sm.encodeSnapshot()).toString();
    const capture = sm.captureSnapshot();
    // Later writes: a new key, a replaced value, a delete.
    sm.apply(entryOf({ op: 'put', key: 'k/99', value: { late: true }, requestId: 'late1' }));
    sm.apply(entryOf({ op: 'put', key: 'k/05', value: { replaced: true }, requestId: 'late2' }));
    sm.apply(entryOf({ op: 'delete', key: 'k/06', requestId: 'late3' }));
    let pauses = 0;
    for (const chunk of [1, 4, 7, 24, 25, 1000]) {
      const bytes = await encodeCapture(capture, chunk, async () => {
        pauses++;
      });
      assert.equal(Buffer.from(bytes).toString(), whole, `chunks of ${chunk}`);
    }
    assert.ok(pauses > 20, 'small chunks yield between them');
    // The request-id rows are chunked too (every chunk but the first follows a pause), and no whole-file string is
    // built: at 100k keys that last piece held the loop 20-45 ms (bench/snapshot-encode.ts).
    let pausesOfFour = 0;
    await encodeCapture(capture, 4, async () => {
      pausesOfFour++;
    });
    assert.equal(pausesOfFour, Math.ceil(capture.entryCount / 4) + Math.ceil(capture.dedup.length / 4) - 1);
    const empty = new StoreStateMachine();
    assert.equal(
      Buffer.from(await encodeCapture(empty.captureSnapshot(), 4, async () => undefined)).toString(),
      Buffer.from(empty.encodeSnapshot()).toString(),
    );
  });

  it('refuses a snapshot file that is not a whole, ordered state', function () {
    const bad = (text: string): string => {
      const decoded = decodeStoreSnapshot(new TextEncoder().encode(text));
      assert.equal(decoded.ok, false);
      return (decoded as { reason: string }).reason;
    };
    assert.match(bad('not json'), /not UTF-8 JSON/);
    assert.match(bad('{"v":1}'), /not a version 1 store snapshot/);
    assert.match(bad('{"v":1,"appliedSeq":2,"entries":[["b",1,{}],["a",2,{}]],"dedup":[]}'), /ascending/);
    assert.match(bad('{"v":1,"appliedSeq":2,"entries":[["a",1,5]],"dedup":[]}'), /\[key, version, object\]/);
    assert.match(bad('{"v":1,"appliedSeq":2,"entries":[],"dedup":[["r",1,{"outcome":"maybe"}]]}'), /request-id row/);
  });

  it('property: replicas that apply the same entries agree, whether or not one restarts from a snapshot midway', function () {
    const command = fc.record({
      op: fc.constantFrom('put', 'delete'),
      key: fc.constantFrom('a', 'b', 'c'),
      cas: fc.option(fc.integer({ min: 0, max: 12 }), { nil: undefined }),
      requestId: fc.constantFrom('r1', 'r2', 'r3', 'r4', 'r5', 'r6', 'r7', 'r8'),
      n: fc.integer({ min: 0, max: 9 }),
    });
    fc.assert(
      fc.property(fc.array(command, { minLength: 1, maxLength: 30 }), fc.nat(), (commands, cutAt) => {
        const entries = commands.map((c, i): Entry =>
          entryOf(
            c.op === 'put'
              ? {
                  op: 'put',
                  key: c.key,
                  value: { n: c.n },
                  requestId: c.requestId,
                  ...(c.cas === undefined ? {} : { expectedVersion: c.cas }),
                }
              : {
                  op: 'delete',
                  key: c.key,
                  requestId: c.requestId,
                  ...(c.cas === undefined ? {} : { expectedVersion: c.cas }),
                },
            i + 1,
          ),
        );
        const straight = new StoreStateMachine();
        const outcomes = entries.map((e) => straight.apply(e).result);
        const cut = cutAt % (entries.length + 1);
        const first = new StoreStateMachine();
        const outcomesRestarted = entries.slice(0, cut).map((e) => first.apply(e).result);
        const decoded = decodeStoreSnapshot(first.encodeSnapshot());
        if (!decoded.ok) return false;
        const second = new StoreStateMachine();
        second.restore(decoded.state);
        outcomesRestarted.push(...entries.slice(cut).map((e) => second.apply(e).result));
        assert.deepEqual(outcomesRestarted, outcomes);
        assert.equal(
          new TextDecoder().decode(second.encodeSnapshot()),
          new TextDecoder().decode(straight.encodeSnapshot()),
        );
        return true;
      }),
    );
  });
  it('property: a copy-on-write capture encodes to the bytes of the state at its seq, whatever applies run during its pauses', async function () {
    const command = fc.record({
      op: fc.constantFrom('put', 'delete'),
      key: fc.constantFrom('a', 'b', 'c', 'd', 'e', 'f', 'g'),
      requestId: fc.string({ maxLength: 3 }),
      n: fc.integer({ min: 0, max: 9 }),
    });
    const toEntry = (c: { op: string; key: string; requestId: string; n: number }): Entry =>
      entryOf(
        c.op === 'put'
          ? { op: 'put', key: c.key, value: { n: c.n }, requestId: c.requestId }
          : { op: 'delete', key: c.key, requestId: c.requestId },
      );
    await fc.assert(
      fc.asyncProperty(
        fc.array(command, { maxLength: 25 }),
        // Applies run at each pause of the encoding, some of them between two captures of the same machine.
        fc.array(fc.array(command, { maxLength: 4 }), { maxLength: 12 }),
        fc.integer({ min: 1, max: 5 }),
        fc.option(fc.nat({ max: 11 }), { nil: undefined }),
        async (before, duringPauses, chunk, resetAtPause) => {
          nextSeq = 1;
          const sm = new StoreStateMachine();
          for (const c of before) sm.apply(toEntry(c));
          const expected = Buffer.from(sm.encodeSnapshot()).toString();
          const capture = sm.captureSnapshot();
          let pause = 0;
          let second: { capture: ReturnType<StoreStateMachine['captureSnapshot']>; expected: string } | null = null;
          const bytes = await encodeCapture(capture, chunk, async () => {
            if (pause === resetAtPause) {
              sm.reset();
              nextSeq = 1;
            }
            for (const c of duringPauses[pause] ?? []) sm.apply(toEntry(c));
            if (pause === 1)
              second = { expected: Buffer.from(sm.encodeSnapshot()).toString(), capture: sm.captureSnapshot() };
            pause++;
          });
          assert.equal(Buffer.from(bytes).toString(), expected);
          if (second !== null) {
            const { capture: later, expected: laterExpected } = second;
            sm.apply(toEntry({ op: 'put', key: 'a', requestId: 'x', n: 1 }));
            sm.apply(toEntry({ op: 'delete', key: 'b', requestId: 'y', n: 0 }));
            const laterBytes = await encodeCapture(later, chunk, async () => undefined);
            assert.equal(Buffer.from(laterBytes).toString(), laterExpected);
          }
          assert.equal(sm.liveCaptureCount, 0, 'every capture is released once encoded');
        },
      ),
    );
  });
});
