// recording/frame-redact.ts reads a shipped segment in place for the recording. It must accept exactly
// the payloads the engine's decodeSegmentFrame accepts (anything else is recorded through the decoder,
// with its reason), read the same fields, and its checksum must be the engine's CRC-32C.
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { decodeLine, encodeLine } from '../../recording/codec.js';
import { crc32cFast } from '../../recording/crc32c-fast.js';
import { redactedFrame, skeletonFrame } from '../../recording/frame-redact.js';
import { crc32c } from '../../engine/crc32c.js';
import { decodeSegmentFrame, encodeSegmentFrame } from '../../engine/segment-frame.js';
import { EntryKind } from '../../engine/types.js';

const frameArb = fc
  .record({
    prevSeq: fc.integer({ min: 0, max: 1_000 }),
    prevTerm: fc.integer({ min: 0, max: 5 }),
    commitSeq: fc.integer({ min: 0, max: 1_000 }),
    entries: fc.array(
      fc.record({
        kind: fc.constantFrom(EntryKind.EventBatch, EntryKind.Membership, 3, 4),
        data: fc.uint8Array({ maxLength: 40 }),
        termStep: fc.integer({ min: 0, max: 1 }),
      }),
      { maxLength: 6 },
    ),
  })
  .map((f) => {
    let term = f.prevTerm;
    return encodeSegmentFrame({
      prevSeq: f.prevSeq,
      prevTerm: f.prevTerm,
      commitSeq: f.commitSeq,
      entries: f.entries.map((e, i) => ({
        seq: f.prevSeq + 1 + i,
        term: (term += e.termStep),
        kind: e.kind,
        data: e.data,
      })),
    });
  });

/** damaged: a frame with one byte changed, cut short or lengthened, its checksum fixed or left wrong. */
const damagedArb = fc
  .tuple(frameArb, fc.nat(), fc.integer({ min: 0, max: 255 }), fc.constantFrom('flip', 'cut', 'grow'), fc.boolean())
  .map(([frame, at, byte, how, fixChecksum]) => {
    let bytes = new Uint8Array(frame);
    if (how === 'flip') bytes[at % bytes.length] = byte;
    else if (how === 'cut') bytes = bytes.slice(0, at % bytes.length);
    else bytes = Uint8Array.from([...bytes.slice(0, -4), byte, 0, 0, 0, 0]);
    if (fixChecksum && bytes.length >= 4)
      new DataView(bytes.buffer).setUint32(bytes.length - 4, crc32c(bytes, 0, bytes.length - 4));
    return bytes;
  });

describe('recording: shipped segments read in place', () => {
  it('crc32cFast is the engine CRC-32C at every length and offset (property)', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 300 }), fc.nat(), (bytes, from) => {
        const start = bytes.length === 0 ? 0 : from % bytes.length;
        assert.equal(crc32cFast(bytes, start), crc32c(bytes, start));
      }),
    );
  });

  it('accepts exactly what decodeSegmentFrame accepts, with the same fields (property)', () => {
    fc.assert(
      fc.property(fc.oneof(frameArb, damagedArb), (bytes) => {
        const decoded = decodeSegmentFrame(bytes);
        const read = redactedFrame(bytes);
        assert.equal(read !== null, decoded.ok, decoded.ok ? 'accepted by the decoder' : decoded.reason);
        if (!decoded.ok || !read) return;
        const revived = skeletonFrame(read, 1 << 20);
        assert.deepEqual(
          revived.entries.map((e) => [e.seq, e.term, e.kind, e.data.length]),
          decoded.frame.entries.map((e) => [e.seq, e.term, e.kind, e.data.length]),
        );
        assert.deepEqual(
          [revived.prevSeq, revived.prevTerm, revived.commitSeq],
          [decoded.frame.prevSeq, decoded.frame.prevTerm, decoded.frame.commitSeq],
        );
      }),
      { numRuns: 500 },
    );
  });

  it('refuses a recorded skeleton that is not one, or that would allocate past the bound', () => {
    assert.throws(() => skeletonFrame({}, 100), /not \[prevSeq/);
    assert.throws(() => skeletonFrame([1, 1, 1, 1, 1], 100), /not \[prevSeq/);
    assert.throws(() => skeletonFrame([1, 1, 1, 1, 1, -3], 100), /not a whole number/);
    assert.throws(() => skeletonFrame([1, 1, 1, 1, 1, 60, 1, 1, 60], 100), /more than 100 bytes/);
    assert.throws(() => skeletonFrame([1, 1, 1, 1, 300, 1], 100), /not a byte/);
    assert.throws(() => skeletonFrame([1, 1, 1, 1, 1, null], 100), /neither a length nor base64/);
  });

  it('a recorded payload replays as a valid frame of the same shape, values zeroed, others whole', () => {
    fc.assert(
      fc.property(frameArb, (bytes) => {
        const line = encodeLine({ payload: bytes }, 'hashed', new Uint8Array(32));
        const revived = (decodeLine(line) as { payload: Uint8Array }).payload;
        const original = decodeSegmentFrame(bytes);
        const replayed = decodeSegmentFrame(revived);
        assert.ok(original.ok && replayed.ok);
        assert.equal(revived.length, bytes.length);
        assert.deepEqual(
          replayed.frame.entries.map((e) => (e.kind === EntryKind.EventBatch ? e.data.some((b) => b !== 0) : e.data)),
          original.frame.entries.map((e) => (e.kind === EntryKind.EventBatch ? false : e.data)),
        );
      }),
      { numRuns: 200 },
    );
  });
});
