// The step digests of format 2 (recording/digest.ts over recording/canonical-hash.ts, also format 3's) and
// format 4 (recording/step-digest.ts): what a replay compares at every step, so each must change with
// anything the engine decided and with nothing else (key order as built, bytes a replay cannot reproduce),
// and stay the same across builds for the same effects (pinned values: changing a hash means a new
// RECORDING_FORMAT_VERSION).
import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  canonicalEffects,
  effectsDigest,
  effectsDigest as effectsDigestV2,
  effectsDigestFor,
  effectsDigestV1,
} from '../../recording/digest.js';
import { RECORDING_FORMAT_VERSION } from '../../recording/format.js';
import { stepDigest } from '../../recording/step-digest.js';
import { encodeSegmentFrame } from '../../engine/segment-frame.js';
import { EntryKind, type Effect, type Entry } from '../../engine/types.js';

const text = (s: string): Uint8Array => new TextEncoder().encode(s);

function effects(value: string, term = 3): Effect[] {
  const entries = [
    { seq: 7, term, kind: EntryKind.EventBatch, data: text(value) },
    { seq: 8, term, kind: EntryKind.Membership, data: new Uint8Array([1, 2, 3]) },
  ];
  return [
    { type: 'saveHardState', hardState: { term, votedFor: 1, commitSeq: 6, selfId: 1 } } as unknown as Effect,
    { type: 'append', fromSeq: 7, entries },
    {
      type: 'send',
      requestId: 11,
      to: '127.0.0.1:2',
      toId: 2,
      request: {
        method: 'ShipSegment',
        body: {
          id: { regionId: 0, shardId: 0, seqno: 7 },
          payload: encodeSegmentFrame({ prevSeq: 6, prevTerm: term, commitSeq: 6, entries }),
          eventCount: 2,
          leaderLastSeq: 8,
          streamBaseline: 0,
          term,
          leaderRegion: 1,
        },
      },
    } as Effect,
    {
      type: 'proposalResult',
      proposalId: 5,
      ok: true,
      code: 'committed',
      seq: 7,
      reason: '',
      leaderHint: '',
    } as Effect,
  ];
}

const PINNED_V4_HASHED = '19899e2a22b0dc0f';
const PINNED_V4_FULL = '6f4190ab382940f1';

describe('recording: the step digests are pinned', () => {
  it('for a fixed list of effects (a new hash needs a new format version)', () => {
    assert.equal(RECORDING_FORMAT_VERSION, 4);
    assert.equal(stepDigest(effects('v'), 'hashed'), PINNED_V4_HASHED);
    assert.equal(stepDigest(effects('v'), 'full'), PINNED_V4_FULL);
    assert.equal(effectsDigestFor(4, effects('v'), 'hashed'), stepDigest(effects('v'), 'hashed'));
    // Format 3 added checkpoints; its digest is format 2's.
    assert.equal(effectsDigest(effects('v'), 'hashed'), 'fcf55609035c5903');
    assert.equal(effectsDigestFor(3, effects('v'), 'hashed'), effectsDigest(effects('v'), 'hashed'));
    assert.equal(effectsDigestFor(2, effects('v'), 'hashed'), effectsDigest(effects('v'), 'hashed'));
    assert.equal(effectsDigestFor(1, effects('v'), 'hashed'), effectsDigestV1(effects('v'), 'hashed'));
  });
});

for (const [format, effectsDigest] of [
  ['format 2', effectsDigestV2],
  ['format 4', stepDigest],
] as const) {
  describe(`recording: the step digest (${format})`, () => {
    it("in hashed mode counts a value's length, not its bytes; in full mode its bytes", () => {
      assert.equal(effectsDigest(effects('abc'), 'hashed'), effectsDigest(effects('xyz'), 'hashed'));
      assert.notEqual(effectsDigest(effects('abc'), 'hashed'), effectsDigest(effects('abcd'), 'hashed'));
      assert.notEqual(effectsDigest(effects('abc'), 'full'), effectsDigest(effects('xyz'), 'full'));
    });

    it('changes with any number, string, key or order the engine decided', () => {
      const base = effectsDigest(effects('v'), 'hashed');
      assert.notEqual(effectsDigest(effects('v', 4), 'hashed'), base, 'a term');
      const renamed = effects('v');
      (renamed[3] as { code: string }).code = 'refused';
      assert.notEqual(effectsDigest(renamed, 'hashed'), base, 'a string');
      const reordered = effects('v');
      [reordered[1], reordered[2]] = [reordered[2]!, reordered[1]!];
      assert.notEqual(effectsDigest(reordered, 'hashed'), base, 'the order of effects');
      const rekeyed = [{ type: 'compact', throughSeq: 5 }] as Effect[];
      assert.notEqual(
        effectsDigest(rekeyed, 'hashed'),
        effectsDigest([{ type: 'compact', uptoSeq: 5 }] as unknown as Effect[], 'hashed'),
        'a key',
      );
      assert.notEqual(
        effectsDigest([{ type: 'compact', throughSeq: 5 }] as Effect[], 'hashed'),
        effectsDigest([{ type: 'compact', throughSeq: '5' }] as unknown as Effect[], 'hashed'),
        'a number and the same digits as a string',
      );
    });

    it('leaves out what JSON leaves out: an undefined property is no property', () => {
      const a = [{ type: 'warning', code: 'x', message: 'm' }] as unknown as Effect[];
      const b = [{ type: 'warning', code: 'x', message: 'm', extra: undefined }] as unknown as Effect[];
      assert.equal(effectsDigest(a, 'hashed'), effectsDigest(b, 'hashed'));
    });

    it('equal canonical forms give equal digests, different ones different digests (property)', function () {
      this.timeout(60_000);
      const leaf = fc.oneof(fc.integer(), fc.double(), fc.string({ maxLength: 80 }), fc.boolean(), fc.constant(null));
      const value = fc.letrec((tie) => ({
        node: fc.oneof(
          { depthSize: 'small' },
          leaf,
          fc.array(tie('node'), { maxLength: 4 }),
          fc.dictionary(fc.string({ maxLength: 6 }), tie('node'), { maxKeys: 4 }),
        ),
      })).node;
      fc.assert(
        fc.property(fc.array(value, { maxLength: 4 }), fc.array(value, { maxLength: 4 }), (a, b) => {
          const [ea, eb] = [a as unknown as Effect[], b as unknown as Effect[]];
          const sameText = canonicalEffects(ea, 'full') === canonicalEffects(eb, 'full');
          const sameDigest = effectsDigest(ea, 'full') === effectsDigest(eb, 'full');
          // JSON writes -0 as 0 and both digests agree on that; otherwise the digest follows the text.
          assert.equal(sameDigest, sameText, `${canonicalEffects(ea, 'full')} vs ${canonicalEffects(eb, 'full')}`);
          assert.equal(
            effectsDigest(structuredClone(ea), 'full'),
            effectsDigest(ea, 'full'),
            'a copy digests the same',
          );
        }),
        { numRuns: 300 },
      );
    });
  });
}

describe('recording: the step digest (format 4) of a shipped frame', () => {
  const entries = (value: string, term: number): Entry[] => [
    { seq: 7, term, kind: EntryKind.EventBatch, data: text(value) },
    { seq: 8, term, kind: EntryKind.Membership, data: new Uint8Array([1, 2, term]) },
  ];
  const chunk = (payload: Uint8Array): Effect[] =>
    [{ type: 'streamChunk', callId: 1, chunk: { payload, eventCount: 2 } }] as unknown as Effect[];
  const frame = (value: string, term = 3): Uint8Array =>
    encodeSegmentFrame({ prevSeq: 6, prevTerm: 3, commitSeq: 6, entries: entries(value, term) });

  it("counts each entry's seq, term, kind and length and a record's bytes, never a value's bytes (hashed)", () => {
    const base = stepDigest(chunk(frame('abc')), 'hashed');
    assert.equal(stepDigest(chunk(frame('xyz')), 'hashed'), base, 'another value of the same length');
    assert.notEqual(stepDigest(chunk(frame('abcd')), 'hashed'), base, 'a longer value');
    assert.notEqual(stepDigest(chunk(frame('abc', 4)), 'hashed'), base, 'a term (and a record byte)');
    assert.notEqual(stepDigest(chunk(frame('xyz')), 'full'), stepDigest(chunk(frame('abc')), 'full'), 'full mode');
  });

  it('gives a frame the same digest whether or not the frame before it had the same bytes', () => {
    const alone = stepDigest(chunk(frame('abc', 5)), 'hashed');
    stepDigest(chunk(frame('zzz', 6)), 'hashed');
    const twice = stepDigest([...chunk(frame('abc', 5)), ...chunk(frame('abc', 5))], 'hashed');
    assert.equal(stepDigest(chunk(frame('abc', 5)), 'hashed'), alone);
    assert.notEqual(twice, alone);
    // Same length, other bytes right after a cached frame: not taken for it.
    assert.notEqual(stepDigest(chunk(frame('abc', 7)), 'hashed'), alone);
  });

  it('reads a payload that is not a whole frame without throwing', () => {
    for (const bytes of [
      new Uint8Array(0),
      new Uint8Array(5),
      frame('abc').subarray(0, 40),
      new Uint8Array(64).fill(255),
    ])
      assert.match(stepDigest(chunk(bytes), 'hashed'), /^[0-9a-f]{16}$/);
  });
});
