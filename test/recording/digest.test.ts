// The step digest of format 2 (recording/digest.ts over recording/canonical-hash.ts): what a replay
// compares at every step, so it must change with anything the engine decided and with nothing else
// (key order as built, bytes a replay cannot reproduce), and stay the same across builds for the same
// effects (a pinned value: changing the hash means a new RECORDING_FORMAT_VERSION).
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { canonicalEffects, effectsDigest, effectsDigestFor, effectsDigestV1 } from '../../recording/digest.js';
import { RECORDING_FORMAT_VERSION } from '../../recording/format.js';
import { encodeSegmentFrame } from '../../engine/segment-frame.js';
import { EntryKind, type Effect } from '../../engine/types.js';

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

describe('recording: the step digest (format 2)', () => {
  it('is pinned for a fixed list of effects (a new hash needs a new format version)', () => {
    // Format 3 added checkpoints and dropped the effect texts; its digest is format 2's.
    assert.equal(RECORDING_FORMAT_VERSION, 3);
    assert.equal(effectsDigest(effects('v'), 'hashed'), 'fcf55609035c5903');
    assert.equal(effectsDigestFor(3, effects('v'), 'hashed'), effectsDigest(effects('v'), 'hashed'));
    assert.equal(effectsDigestFor(2, effects('v'), 'hashed'), effectsDigest(effects('v'), 'hashed'));
    assert.equal(effectsDigestFor(1, effects('v'), 'hashed'), effectsDigestV1(effects('v'), 'hashed'));
  });

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
        assert.equal(effectsDigest(structuredClone(ea), 'full'), effectsDigest(ea, 'full'), 'a copy digests the same');
      }),
      { numRuns: 300 },
    );
  });
});
