import assert from 'node:assert/strict';
import fc from 'fast-check';
import { RaftLog, logUpToDate } from '../../engine/log.js';
import { VersionSpread } from '../../engine/versions.js';
import { Prng } from '../../engine/prng.js';
import { bootstrapRoster, decodeRoster, encodeRoster, withMember, MemberRole, type Entry } from '../../engine/index.js';

const entry = (seq: number, term: number): Entry => ({ seq, term, kind: 1, data: new Uint8Array([seq & 0xff]) });

describe('engine/log', () => {
  it('tracks terms across truncation, compaction and reset', () => {
    const log = new RaftLog(0, 0, [entry(1, 1), entry(2, 1), entry(3, 2)]);
    assert.equal(log.lastSeq(), 3);
    assert.equal(log.termAt(0), 0);
    assert.equal(log.termAt(3), 2);
    log.truncateFrom(3);
    assert.equal(log.lastSeq(), 2);
    log.append([entry(3, 3)]);
    log.compactThrough(2);
    assert.equal(log.baseSeq, 2);
    assert.equal(log.termAt(2), 1);
    assert.equal(log.termAt(1), undefined);
    assert.equal(log.entryAt(3)!.term, 3);
    log.resetTo(10, 4);
    assert.equal(log.lastSeq(), 10);
    assert.equal(log.lastTerm(), 4);
    assert.throws(() => log.append([entry(12, 4)]));
  });

  it('compares log positions lexicographically on (term, seq)', () => {
    fc.assert(
      fc.property(fc.nat(5), fc.nat(50), fc.nat(5), fc.nat(50), (t1, s1, t2, s2) => {
        assert.equal(logUpToDate(t1, s1, t2, s2), t1 > t2 || (t1 === t2 && s1 >= s2));
      }),
    );
  });

  it('bounds slices by count and bytes but always returns one entry', () => {
    const log = new RaftLog(
      0,
      0,
      Array.from({ length: 10 }, (_, i) => entry(i + 1, 1)),
    );
    assert.equal(log.slice(1, 10, 3, 1 << 20).length, 3);
    assert.equal(log.slice(1, 10, 100, 1).length, 1);
    assert.equal(log.slice(11, 20, 100, 1 << 20).length, 0);
  });
});

describe('engine/roster', () => {
  it('round-trips and raises the version per change', () => {
    const r = bootstrapRoster([
      { name: 'a', grpcAddr: 'a:1', httpAddr: 'http://a:2' },
      { name: 'b', grpcAddr: 'b:1', httpAddr: 'http://b:2' },
    ]);
    const next = withMember(r, { id: 3, name: 'c', grpcAddr: 'c:1', httpAddr: 'http://c:2', role: MemberRole.Learner });
    assert.equal(next.membershipVersion, 2);
    assert.equal(next.nextMemberId, 4);
    assert.deepEqual(decodeRoster(encodeRoster(next)), next);
    assert.equal(decodeRoster(new TextEncoder().encode('{"nope":1}')), null);
    assert.equal(decodeRoster(new Uint8Array([0xff, 0x00])), null);
  });
});

describe('engine/versions', () => {
  it('warns once per major gap, loudly at two, never for an unknown version', () => {
    const spread = new VersionSpread(() => 1, '2.1.0');
    assert.equal(spread.observe(2, ''), null);
    assert.equal(spread.observe(2, '2.9.9'), null);
    const w = spread.observe(3, '0.4.0');
    assert.match(w!, /LOUD/);
    assert.equal(spread.observe(4, '0.5.0'), null);
    assert.match(spread.observe(5, '1.0.0')!, /gap 1/);
  });
});

describe('engine/prng', () => {
  it('is reproducible for a seed and stays in range', () => {
    const a = new Prng(42);
    const b = new Prng(42);
    for (let i = 0; i < 100; i++) {
      const x = a.intBetween(10, 20);
      assert.equal(x, b.intBetween(10, 20));
      assert.ok(x >= 10 && x < 20);
    }
  });

  it('intBetween is min plus the draw modulo the span, for spans on both sides of 2^31', () => {
    for (const [min, maxExclusive] of [
      [10, 20],
      [0, 2 ** 31 - 1],
      [5, 2 ** 31 + 5],
      [0, 2 ** 32],
      [7, 7],
    ] as const) {
      const a = new Prng(1234);
      const b = new Prng(1234);
      for (let i = 0; i < 200; i++) {
        const expected = min + (b.nextUint32() % Math.max(1, maxExclusive - min));
        assert.equal(a.intBetween(min, maxExclusive), expected, `span ${min}..${maxExclusive}, draw ${i}`);
      }
    }
  });
});
