// The recorded client history (sim/history.ts), the compare-and-set command, and the reference
// replay that judges snapshots following compare-and-sets as the nodes do.
import assert from 'node:assert/strict';
import { CanonicalLog } from '../../sim/checkers/canonical-log.js';
import { kvDigest } from '../../sim/checkers/canonical-log.js';
import { History } from '../../sim/history.js';
import { KvStateMachine, decodeCommand, encodeCommand, type KvCommand } from '../../sim/state-machine.js';

const entry = (seq: number, command: KvCommand) => ({ seq, term: 1, kind: 1, data: encodeCommand(command) });

describe('sim/history', () => {
  it('records completed and indeterminate operations, drops refused ones, and lists open ones as indeterminate', () => {
    const h = new History();
    const put = h.invoke({ kind: 'put', key: 'r1', value: 'w1' }, 10);
    const get = h.invoke({ kind: 'get', key: 'r1' }, 12);
    const refused = h.invoke({ kind: 'get', key: 'r1' }, 13);
    const lost = h.invoke({ kind: 'cas', key: 'r1', expected: null, value: 'w2' }, 14);
    const open = h.invoke({ kind: 'put', key: 'r1', value: 'w3' }, 15);
    h.complete(put, { kind: 'put' }, 20);
    h.complete(get, { kind: 'get', value: 'w1' }, 21);
    h.drop(refused);
    h.indeterminate(lost);
    h.complete(lost, { kind: 'cas', swapped: true }, 30); // settled once: ignored
    const ops = h.operations();
    assert.deepEqual(
      ops.map((o) => [o.id, o.callTime, o.returnTime]),
      [
        [put.id, 10, 20],
        [get.id, 12, 21],
        [lost.id, 14, null],
        [open.id, 15, null],
      ],
    );
    assert.equal(ops.find((o) => o.id === lost.id)!.output, null);
    assert.deepEqual([h.completedCount, h.indeterminateCount, h.droppedCount, h.openCount], [2, 1, 1, 1]);
  });

  it('gives a client one operation at a time, and retires a client whose operation is indeterminate', () => {
    const h = new History();
    const a = h.invoke({ kind: 'get', key: 'r1' }, 1);
    const b = h.invoke({ kind: 'get', key: 'r1' }, 2);
    assert.notEqual(a.clientId, b.clientId, 'concurrent operations run on different clients');
    h.complete(a, { kind: 'get', value: null }, 3);
    assert.equal(h.invoke({ kind: 'get', key: 'r1' }, 4).clientId, a.clientId, 'a free client is reused');
    h.indeterminate(b);
    const later = [h.invoke({ kind: 'get', key: 'r1' }, 5), h.invoke({ kind: 'get', key: 'r1' }, 6)];
    assert.ok(
      later.every((op) => op.clientId !== b.clientId),
      "an indeterminate operation's client may still be acting: never reused",
    );
  });
});

describe('sim/state-machine compare-and-set', () => {
  it('encodes, decodes and refuses malformed cas commands', () => {
    const cas: KvCommand = { op: 'cas', key: 'r1', expected: null, value: 'w1', writeId: 1 };
    assert.deepEqual(decodeCommand(encodeCommand(cas)), cas);
    assert.deepEqual(decodeCommand(encodeCommand({ ...cas, expected: 'w0' })), { ...cas, expected: 'w0' });
    assert.equal(
      decodeCommand(new TextEncoder().encode('{"op":"cas","key":"r1","value":"w1","writeId":1}')),
      null,
      'expected is required',
    );
    assert.equal(
      decodeCommand(new TextEncoder().encode('{"op":"cas","key":"r1","expected":3,"value":"w1","writeId":1}')),
      null,
    );
  });

  it('swaps only when the key holds what is expected (null = absent), and remembers each outcome by seq', () => {
    const m = new KvStateMachine();
    assert.equal(m.apply(entry(1, { op: 'cas', key: 'r1', expected: 'x', value: 'w1', writeId: 1 })), null);
    assert.equal(m.get('r1'), undefined);
    assert.equal(m.apply(entry(2, { op: 'cas', key: 'r1', expected: null, value: 'w2', writeId: 2 })), null);
    assert.equal(m.apply(entry(3, { op: 'cas', key: 'r1', expected: null, value: 'w3', writeId: 3 })), null);
    assert.equal(m.apply(entry(4, { op: 'cas', key: 'r1', expected: 'w2', value: 'w4', writeId: 4 })), null);
    assert.deepEqual(
      [1, 2, 3, 4].map((s) => m.casOutcome(s)),
      [false, true, false, true],
    );
    assert.equal(m.get('r1'), 'w4');
    assert.equal(m.casOutcome(5), undefined);
    const copy = new KvStateMachine();
    assert.equal(copy.load(m.stateJson()), null);
    assert.equal(copy.get('r1'), 'w4');
    assert.equal(copy.casOutcome(4), undefined, 'outcomes are not state');
  });

  it('the canonical reference replay follows compare-and-sets as the machines do', () => {
    const canonical = new CanonicalLog();
    const m = new KvStateMachine();
    const commands: KvCommand[] = [
      { op: 'put', key: 'r1', value: 'w1', writeId: 1 },
      { op: 'cas', key: 'r1', expected: 'w0', value: 'w2', writeId: 2 },
      { op: 'cas', key: 'r1', expected: 'w1', value: 'w3', writeId: 3 },
      { op: 'cas', key: 'r2', expected: null, value: 'w4', writeId: 4 },
    ];
    commands.forEach((c, i) => {
      canonical.record(0, 'n1', entry(i + 1, c));
      assert.equal(m.apply(entry(i + 1, c)), null);
    });
    assert.equal(
      canonical.digestAtSeq(4),
      kvDigest([
        ['r1', 'w3'],
        ['r2', 'w4'],
      ]),
    );
    assert.equal(canonical.digestAtSeq(2), kvDigest([['r1', 'w1']]));
  });
});
