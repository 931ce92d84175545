import assert from 'node:assert/strict';
import fc from 'fast-check';
import { decodeSegmentFrame, encodeSegmentFrame, type Entry } from '../../engine/index.js';

const entriesAfter = (prevSeq: number, prevTerm: number) =>
  fc
    .array(fc.record({ termStep: fc.nat(3), kind: fc.constantFrom(1, 2, 4), data: fc.uint8Array({ maxLength: 64 }) }), {
      maxLength: 20,
    })
    .map((rows) => {
      let term = prevTerm;
      return rows.map((r, i): Entry => {
        term += r.termStep;
        return { seq: prevSeq + 1 + i, term, kind: r.kind, data: r.data };
      });
    });

describe('engine/segment-frame', () => {
  it('round-trips any frame', () => {
    // One property (not one nested in another): a nested fc.assert would reuse the suite's one seed
    // (test/fast-check-seed.ts) and draw the same entries for every outer value.
    const frameArb = fc
      .tuple(fc.nat(1_000_000), fc.nat(1000), fc.nat(2_000_000))
      .chain(([prevSeq, prevTerm, commitSeq]) =>
        entriesAfter(prevSeq, prevTerm).map((entries) => ({ prevSeq, prevTerm, commitSeq, entries })),
      );
    fc.assert(
      fc.property(frameArb, (frame) => {
        const decoded = decodeSegmentFrame(encodeSegmentFrame(frame));
        assert.ok(decoded.ok);
        assert.deepEqual(decoded.frame, frame);
      }),
      { numRuns: 250 },
    );
  });

  it('round-trips u64 fields on both sides of 2^32 (the decoder reads a zero high half apart)', () => {
    for (const base of [0, 2 ** 30 - 1, 2 ** 32 - 2, 2 ** 32, 2 ** 40 + 3, 2 ** 52]) {
      const frame = {
        prevSeq: base,
        prevTerm: base + 1,
        commitSeq: base + 2,
        entries: [{ seq: base + 1, term: base + 1, kind: 1, data: new Uint8Array([7]) }],
      };
      const decoded = decodeSegmentFrame(encodeSegmentFrame(frame));
      assert.ok(decoded.ok);
      assert.deepEqual(decoded.frame, frame);
    }
  });

  it('never throws on garbage and rejects it with a reason', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 300 }), (bytes) => {
        const decoded = decodeSegmentFrame(bytes);
        if (!decoded.ok) assert.ok(decoded.reason.length > 0);
      }),
      { numRuns: 2000 },
    );
  });

  it('detects any single flipped bit', () => {
    const bytes = encodeSegmentFrame({
      prevSeq: 4,
      prevTerm: 2,
      commitSeq: 3,
      entries: [{ seq: 5, term: 2, kind: 1, data: new Uint8Array([1, 2, 3]) }],
    });
    fc.assert(
      fc.property(fc.nat(bytes.length * 8 - 1), (bit) => {
        const copy = new Uint8Array(bytes);
        copy[bit >> 3] ^= 1 << (bit & 7);
        assert.equal(decodeSegmentFrame(copy).ok, false);
      }),
      { numRuns: 500 },
    );
  });

  it('refuses entries that are not contiguous after prevSeq', () => {
    const bytes = encodeSegmentFrame({
      prevSeq: 4,
      prevTerm: 2,
      commitSeq: 3,
      entries: [{ seq: 7, term: 2, kind: 1, data: new Uint8Array(0) }],
    });
    const decoded = decodeSegmentFrame(bytes);
    assert.equal(decoded.ok, false);
  });
});
