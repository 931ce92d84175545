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
import { stepDigest, stepDigestV5 } from '../../recording/step-digest.js';
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

const stepDigestFor4 = stepDigest;

const PINNED_V4_HASHED = '19899e2a22b0dc0f';
const PINNED_V4_FULL = '6f4190ab382940f1';
const PINNED_V5_HASHED = '3b309ae91b52abc6';
const PINNED_V5_FULL = '36c41b7cce9ee844';

describe('recording: the step digests are pinned', () => {
  it('for a fixed list of effects (a new hash needs a new format version)', () => {
    assert.equal(RECORDING_FORMAT_VERSION, 6);
    assert.equal(effectsDigestFor(6, effects('v'), 'hashed'), stepDigestV5(effects('v'), 'hashed'));
    assert.equal(stepDigestV5(effects('v'), 'hashed'), PINNED_V5_HASHED);
    assert.equal(stepDigestV5(effects('v'), 'full'), PINNED_V5_FULL);
    assert.equal(effectsDigestFor(5, effects('v'), 'hashed'), stepDigestV5(effects('v'), 'hashed'));
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
  ['format 5', stepDigestV5],
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

for (const [format, stepDigest] of [
  ['format 4', stepDigestFor4],
  ['format 5', stepDigestV5],
] as const)
  describe(`recording: the step digest (${format}) of a shipped frame`, () => {
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

describe('recording: the step digest (format 5) of the effects it reads field by field', () => {
  const frame = encodeSegmentFrame({
    prevSeq: 6,
    prevTerm: 3,
    commitSeq: 6,
    entries: [{ seq: 7, term: 3, kind: EntryKind.EventBatch, data: text('v') }],
  });
  const ship = {
    id: { regionId: 1, shardId: 2, seqno: 7 },
    payload: frame,
    eventCount: 1,
    leaderLastSeq: 7,
    streamBaseline: 4,
    term: 3,
    leaderRegion: 1,
  };
  const entries = (): Entry[] => [
    { seq: 7, term: 3, kind: EntryKind.EventBatch, data: text('value') },
    { seq: 8, term: 3, kind: EntryKind.Membership, data: new Uint8Array([1, 2, 3]) },
  ];
  const report = { reporterShard: 2, sourceShard: 1, appliedSeqno: 9, reporterTerm: 3, capabilities: 3 };
  const heartbeat = {
    shardId: 1,
    regionId: 1,
    entityCount: 5,
    signalThroughputEps: 1.5,
    diskBytes: 100,
    replicationLag: { 2: 4, 3: 1 },
    lastHeartbeatNs: '1795814326736000000',
    term: 3,
    leaderRegion: 1,
    streamBaseline: 4,
    prevLogTerm: 3,
    prevLogSeq: 7,
    buildVersion: '0.1.0',
    leaderLastSeq: 8,
  };
  const samples = (): Effect[] =>
    [
      { type: 'streamChunk', callId: 4, chunk: ship },
      { type: 'send', requestId: 5, to: 'n2', toId: 2, request: { method: 'ReportApplied', body: report } },
      { type: 'send', requestId: 6, to: 'n2', toId: 2, request: { method: 'ShipSegment', body: ship } },
      { type: 'send', requestId: 7, to: 'n3', toId: 3, request: { method: 'Heartbeat', body: heartbeat } },
      { type: 'reply', callId: 8, response: { method: 'ReportApplied', body: { acknowledged: true } } },
      {
        type: 'reply',
        callId: 9,
        response: { method: 'ShipSegment', body: { accepted: true, appliedSeqno: 7, term: 3 } },
      },
      {
        type: 'reply',
        callId: 10,
        response: {
          method: 'Heartbeat',
          body: { acknowledged: true, term: 3, accepted: true, capabilities: 3, removed: false },
        },
      },
      { type: 'append', fromSeq: 7, entries: entries(), generation: 2 },
      { type: 'apply', entries: entries() },
      {
        type: 'proposalResult',
        proposalId: 5,
        ok: true,
        code: 'committed',
        seq: 7,
        reason: 'r',
        leaderHint: 'h',
      },
    ] as Effect[];

  /** leaves lists the path to every number, string, boolean and byte string under `value`. */
  function leaves(value: unknown, path: Array<string | number> = []): Array<Array<string | number>> {
    if (value instanceof Uint8Array || typeof value !== 'object' || value === null) return [path];
    return Object.keys(value).flatMap((k) => leaves((value as Record<string, unknown>)[k], [...path, k]));
  }

  function changed(effects: Effect[], path: Array<string | number>, change: (v: unknown) => unknown): Effect[] {
    const copy = structuredClone(effects);
    let holder = copy as unknown as Record<string | number, unknown>;
    for (const k of path.slice(0, -1)) holder = holder[k] as Record<string | number, unknown>;
    const last = path[path.length - 1]!;
    holder[last] = change(holder[last]);
    return copy;
  }

  it('changes with every field of every such effect, a value by its length alone (hashed)', () => {
    const base = samples();
    for (const mode of ['hashed', 'full'] as const) {
      const digest = stepDigestV5(base, mode);
      let checked = 0;
      for (const path of leaves(base)) {
        const name = String(path[path.length - 1]);
        const at = `${mode} ${path.join('.')}`;
        if (name === 'payload') {
          // A frame counts by its skeleton (the frame tests above); another frame here counts.
          const other = encodeSegmentFrame({ prevSeq: 7, prevTerm: 3, commitSeq: 7, entries: [] });
          assert.notEqual(
            stepDigestV5(
              changed(base, path, () => other),
              mode,
            ),
            digest,
            at,
          );
        } else if (name === 'data') {
          const value = String(path[path.length - 2]) === '0'; // the first entry of each list is a value
          const sameLength = stepDigestV5(
            changed(base, path, (v) => (v as Uint8Array).map((b) => b ^ 1)),
            mode,
          );
          if (value && mode === 'hashed') assert.equal(sameLength, digest, `${at}: a value's bytes do not count`);
          else assert.notEqual(sameLength, digest, at);
          const longer = changed(base, path, (v) => new Uint8Array([...(v as Uint8Array), 0]));
          assert.notEqual(stepDigestV5(longer, mode), digest, `${at}: its length counts`);
        } else {
          const other = changed(base, path, (v) =>
            typeof v === 'number' ? v + 1 : typeof v === 'string' ? `${v}x` : typeof v === 'boolean' ? !v : v,
          );
          assert.notEqual(stepDigestV5(other, mode), digest, at);
        }
        checked++;
      }
      assert.ok(checked > 60, `${checked} fields checked`);
    }
  });

  it('tells an absent generation from any number, and a field of another type from any number', () => {
    const append = (generation: unknown): Effect[] =>
      [{ type: 'append', fromSeq: 7, entries: [], generation }] as unknown as Effect[];
    const digests = [undefined, 0, 1, -1, 2 ** 31, 1.5, '1', null].map((g) => stepDigestV5(append(g), 'hashed'));
    assert.equal(new Set(digests).size, digests.length);
  });
});

describe('recording: the step digest (format 5) of a long shipped frame (a kept sub-hash)', () => {
  const longFrame = (term: number, valueBytes = 40): Uint8Array =>
    encodeSegmentFrame({
      prevSeq: 6,
      prevTerm: 3,
      commitSeq: 6,
      entries: Array.from({ length: 40 }, (_, i) => ({
        seq: 7 + i,
        term,
        kind: EntryKind.EventBatch,
        data: new Uint8Array(valueBytes).fill(i),
      })),
    });
  const chunk = (payload: Uint8Array): Effect[] =>
    [{ type: 'streamChunk', callId: 1, chunk: { payload, eventCount: 40 } }] as unknown as Effect[];

  it('gives the same digest whether the sub-hash was kept or computed, and another for other bytes', () => {
    const frame = longFrame(3);
    assert.ok(frame.length >= 1024, 'long enough for a sub-hash');
    stepDigestV5(chunk(longFrame(4)), 'hashed');
    const computed = stepDigestV5(chunk(frame), 'hashed');
    assert.equal(stepDigestV5(chunk(frame), 'hashed'), computed, 'the same frame again');
    assert.equal(stepDigestV5(chunk(longFrame(3)), 'hashed'), computed, 'the same bytes, another object');
    assert.equal(stepDigestV5(chunk(longFrame(3).map((b) => b)), 'hashed'), computed);
    assert.notEqual(stepDigestV5(chunk(longFrame(5)), 'hashed'), computed, 'another term');
    assert.notEqual(stepDigestV5(chunk(longFrame(3, 41)), 'hashed'), computed, 'longer values');
    assert.equal(stepDigestV5(chunk(longFrame(3).fill(9, 50, 90)), 'hashed'), computed, "a value's bytes do not count");
  });
});
