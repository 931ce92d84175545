// Format 5's step records (recording/step-record.ts): the recorder writes the frequent inputs field by
// field and the rest as JSON, and the effects' texts as the facts in them. A replay must get back what
// format 4's JSON line gave it (the same input, values as zeros of their length, a shipped segment as the
// same frame), and a divergence must show the very texts describeEffect gives.
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { batchValueHashLatin1, decodeLine, encodeLine, valueHashLatin1 } from '../../recording/codec.js';
import { describeEffect } from '../../recording/describe.js';
import { readStepRecord, RECORD_HEADER_BYTES, RECORD_STEP, writeStepRecord } from '../../recording/step-record.js';
import { encodeSegmentFrame } from '../../engine/segment-frame.js';
import { EntryKind, type Effect, type Entry, type Input } from '../../engine/types.js';
import { RecordingLines } from '../../transports/node/recording-lines.js';

const KEY = new Uint8Array(32).fill(7);

/** roundTrip writes one step record into a small buffer (it grows) and reads it back. */
function roundTrip(
  input: Input,
  effects: readonly Effect[] | null,
  mode: 'hashed' | 'full',
  n = 1,
  tick = 2,
  at = 1_795_814_326_736,
) {
  const lines = new RecordingLines(16);
  const digest = new Int32Array([0x12345678, -2]);
  writeStepRecord(lines.begin(), n, tick, at, input, digest, effects, mode, KEY);
  lines.commit();
  const bytes = lines.take()!;
  assert.equal(bytes[0], RECORD_STEP);
  assert.equal(bytes.readUInt32LE(1), bytes.length - RECORD_HEADER_BYTES);
  const step = readStepRecord(bytes, RECORD_HEADER_BYTES, bytes.length);
  assert.equal(step.d, '12345678fffffffe');
  assert.deepEqual([step.n, step.tick, step.at], [n, tick, at]);
  return step;
}

// Numbers JSON writes back as they are (NaN and the infinities are tested on their own below).
const number = fc.oneof(
  fc.nat(),
  fc.integer({ min: -(2 ** 40), max: 2 ** 53 }),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
);
const bytes = fc.uint8Array({ maxLength: 40 });
const entry = fc.record({
  term: fc.nat({ max: 5 }),
  kind: fc.constantFrom(EntryKind.EventBatch, EntryKind.Membership, 3),
  data: bytes,
});
const frame = fc.oneof(
  fc
    .record({
      prevSeq: fc.nat({ max: 1000 }),
      commitSeq: fc.nat({ max: 1000 }),
      entries: fc.array(entry, { maxLength: 4 }),
    })
    .map(({ prevSeq, commitSeq, entries }) => {
      let term = 1;
      return encodeSegmentFrame({
        prevSeq,
        prevTerm: 1,
        commitSeq,
        entries: entries.map((e, i) => ({ ...e, seq: prevSeq + 1 + i, term: (term = Math.max(term, e.term)) })),
      });
    }),
  fc.uint8Array({ maxLength: 64 }),
);
const shipSegment = fc.record({
  id: fc.option(fc.record({ regionId: number, shardId: number, seqno: number }), { nil: undefined }),
  payload: frame,
  eventCount: number,
  leaderLastSeq: number,
  streamBaseline: number,
  term: number,
  leaderRegion: number,
});
const input: fc.Arbitrary<Input> = fc.oneof(
  fc.constant<Input>({ type: 'tick' }),
  fc.constant<Input>({ type: 'start' }),
  fc.record({ type: fc.constant('streamEnded' as const), requestId: number }),
  fc.record({
    type: fc.constant('stats' as const),
    stats: fc.record({ entityCount: number, signalThroughputEps: number, diskBytes: number, nowNs: fc.string() }),
  }),
  fc.record({
    type: fc.constant('entriesPersisted' as const),
    lastSeq: number,
    lastTerm: number,
    generation: fc.option(number, { nil: undefined }),
  }),
  fc.record({ type: fc.constant('propose' as const), proposalId: number, data: bytes }),
  fc.record({
    type: fc.constant('proposeBatch' as const),
    proposals: fc.array(fc.record({ proposalId: number, data: bytes }), { maxLength: 5 }),
  }),
  fc.record(
    {
      type: fc.constant('request' as const),
      callId: number,
      callerId: number,
      request: fc.record({
        method: fc.constant('ReportApplied' as const),
        body: fc.record({
          reporterShard: number,
          sourceShard: number,
          appliedSeqno: number,
          reporterTerm: number,
          capabilities: number,
        }),
      }),
    },
    { requiredKeys: ['type', 'callId', 'request'] },
  ),
  // Not written field by field: as JSON.
  fc.record({
    type: fc.constant('request' as const),
    callId: number,
    request: fc.record({ method: fc.constant('ShipSegment' as const), body: shipSegment }),
  }),
  fc.record({
    type: fc.constant('response' as const),
    requestId: number,
    response: fc.oneof(
      fc.record({ method: fc.constant('ReportApplied' as const), body: fc.record({ acknowledged: fc.boolean() }) }),
      fc.record({
        method: fc.constant('Heartbeat' as const),
        body: fc.record({
          acknowledged: fc.boolean(),
          term: number,
          accepted: fc.boolean(),
          capabilities: number,
          removed: fc.boolean(),
        }),
      }),
      fc.record({
        method: fc.constant('ShipSegment' as const),
        body: fc.record({ accepted: fc.boolean(), appliedSeqno: number, term: number }),
      }),
      fc.record({
        method: fc.constant('RequestVote' as const),
        body: fc.record({ term: number, granted: fc.boolean(), removed: fc.boolean() }),
      }),
    ),
  }),
  fc.record({ type: fc.constant('streamChunk' as const), requestId: number, chunk: shipSegment }),
  fc.record({ type: fc.constant('readIndex' as const), readId: number }),
  fc.record({ type: fc.constant('statusPolled' as const), leaderLastSeq: number }),
) as fc.Arbitrary<Input>;

const effect: fc.Arbitrary<Effect> = fc.oneof(
  fc.record({ type: fc.constant('streamChunk' as const), callId: number, chunk: shipSegment }),
  fc.record({
    type: fc.constant('append' as const),
    fromSeq: number,
    entries: fc.array(fc.record({ seq: number, term: number, kind: fc.constant(EntryKind.EventBatch), data: bytes }), {
      maxLength: 3,
    }),
  }),
  fc.record({
    type: fc.constant('apply' as const),
    entries: fc.array(fc.record({ seq: number, term: number, kind: fc.constant(EntryKind.EventBatch), data: bytes }), {
      maxLength: 3,
    }),
  }),
  fc.record({
    type: fc.constant('proposalResult' as const),
    proposalId: number,
    ok: fc.boolean(),
    code: fc.constantFrom('committed' as const, 'not-leader' as const),
    seq: number,
    reason: fc.string(),
    leaderHint: fc.string(),
  }),
  fc.record({
    type: fc.constant('reply' as const),
    callId: number,
    response: fc.oneof(
      fc.record({ method: fc.constant('ReportApplied' as const), body: fc.record({ acknowledged: fc.boolean() }) }),
      fc.record({
        method: fc.constant('ShipSegment' as const),
        body: fc.record({ accepted: fc.boolean(), appliedSeqno: number, term: number }),
      }),
    ),
  }),
  fc.record({
    type: fc.constant('send' as const),
    requestId: number,
    to: fc.string(),
    toId: number,
    request: fc.record({
      method: fc.constant('ReportApplied' as const),
      body: fc.record({
        reporterShard: number,
        sourceShard: number,
        appliedSeqno: number,
        reporterTerm: number,
        capabilities: number,
      }),
    }),
  }),
  fc.record({
    type: fc.constant('send' as const),
    requestId: number,
    to: fc.string(),
    toId: number,
    request: fc.record({
      method: fc.constant('Heartbeat' as const),
      body: fc.record({ term: number, leaderRegion: number, leaderLastSeq: number, lastHeartbeatNs: fc.string() }),
    }),
  }),
  fc.record({
    type: fc.constant('send' as const),
    requestId: number,
    to: fc.string(),
    toId: number,
    request: fc.record({
      method: fc.constant('TimeoutNow' as const),
      body: fc.record({ term: number, leaderRegion: number }),
    }),
  }),
  fc.record({ type: fc.constant('compact' as const), throughSeq: number }),
  fc.record({ type: fc.constant('warning' as const), code: fc.constant('bad-request' as const), message: fc.string() }),
) as fc.Arbitrary<Effect>;

describe('recording: the step record (format 5)', () => {
  it("gives back what format 4's JSON line gave for the same input, in both payload modes (property)", () => {
    fc.assert(
      fc.property(input, fc.constantFrom('hashed' as const, 'full' as const), (step, mode) => {
        const expected = decodeLine(encodeLine(step, mode, KEY));
        assert.deepEqual(roundTrip(step, null, mode).in, expected);
      }),
      { numRuns: 500 },
    );
  });

  it('gives back the texts describeEffect gives, for every effect (property)', () => {
    const anyNumber = fc.oneof(fc.integer(), fc.double(), fc.constantFrom(-0, NaN, Infinity, 2 ** 60));
    const odd = fc.record({ type: fc.constant('append' as const), fromSeq: anyNumber, entries: fc.constant([]) });
    fc.assert(
      fc.property(fc.array(fc.oneof(effect, odd as unknown as fc.Arbitrary<Effect>), { maxLength: 6 }), (effects) => {
        assert.deepEqual(roundTrip({ type: 'tick' }, effects, 'hashed').fx, effects.map(describeEffect));
        assert.equal(roundTrip({ type: 'tick' }, null, 'hashed').fx, undefined, 'texts left out stay out');
      }),
      { numRuns: 300 },
    );
  });

  it('keeps the numbers JSON cannot write, and the store values only as hashes', () => {
    const stats = { entityCount: NaN, signalThroughputEps: Infinity, diskBytes: -0, nowNs: 'ü' };
    const back = roundTrip({ type: 'stats', stats }, null, 'hashed').in;
    assert.deepEqual(back, {
      type: 'stats',
      stats: { entityCount: NaN, signalThroughputEps: Infinity, diskBytes: 0, nowNs: 'ü' },
    });
    const lines = new RecordingLines();
    const secret = new TextEncoder().encode('the-secret-value');
    writeStepRecord(
      lines.begin(),
      1,
      1,
      1,
      { type: 'propose', proposalId: 1, data: secret },
      new Int32Array(2),
      null,
      'hashed',
      KEY,
    );
    assert.ok(!lines.buf.subarray(0, lines.pos).includes(Buffer.from(secret)), 'the value is not in the record');
  });

  it('refuses a record that does not decode, naming what', () => {
    const lines = new RecordingLines();
    writeStepRecord(lines.begin(), 1, 1, 1, { type: 'tick' }, new Int32Array(2), null, 'hashed', KEY);
    const record = Buffer.from(lines.buf.subarray(0, lines.pos));
    assert.throws(() => readStepRecord(record, RECORD_HEADER_BYTES, record.length - 1), /ends inside a field/);
    const extra = Buffer.concat([record, Buffer.from([0])]);
    assert.throws(() => readStepRecord(extra, RECORD_HEADER_BYTES, extra.length), /bytes after its fields/);
    const unknown = Buffer.from(record);
    unknown[RECORD_HEADER_BYTES + 2 + 8 + 8] = 99;
    assert.throws(() => readStepRecord(unknown, RECORD_HEADER_BYTES, unknown.length), /unknown input code 99/);
  });

  it("keeps a field the engine's types do not declare (a wire body from a newer proto): written as JSON, read back whole", () => {
    /** inputCode is the step record's input code (after n, tick, at and the digest). */
    const inputCode = (input: Input): number => {
      const lines = new RecordingLines();
      writeStepRecord(lines.begin(), 1, 1, 1, input, new Int32Array(2), null, 'hashed', KEY);
      return lines.buf[RECORD_HEADER_BYTES + 2 + 8 + 8]!;
    };
    const frame = encodeSegmentFrame({ prevSeq: 3, prevTerm: 1, commitSeq: 3, entries: [] });
    const chunk = {
      id: undefined,
      payload: frame,
      eventCount: 0,
      leaderLastSeq: 3,
      streamBaseline: 0,
      term: 1,
      leaderRegion: 0,
    };
    const heartbeat = { acknowledged: true, term: 2, accepted: true, capabilities: 1, removed: false };
    const inputs: Input[] = [
      {
        type: 'response',
        requestId: 4,
        response: { method: 'Heartbeat', body: { ...heartbeat, leaseTicks: 9 } as typeof heartbeat },
      },
      {
        type: 'response',
        requestId: 4,
        response: { method: 'ShipSegment', body: { accepted: true, appliedSeqno: 1, term: 2, hint: 'x' } as never },
      },
      {
        type: 'response',
        requestId: 4,
        response: { method: 'ReportApplied', body: { acknowledged: true, extra: 1 } as never },
      },
      { type: 'streamChunk', requestId: 5, chunk: { ...chunk, newer: [1, 2] } as typeof chunk },
      {
        type: 'streamChunk',
        requestId: 5,
        chunk: { ...chunk, id: { regionId: 1, shardId: 2, seqno: 3, epoch: 4 } as never },
      },
      {
        type: 'request',
        callId: 6,
        request: {
          method: 'ReportApplied',
          body: {
            reporterShard: 1,
            sourceShard: 1,
            appliedSeqno: 2,
            reporterTerm: 2,
            capabilities: 0,
            zone: 'a',
          } as never,
        },
      },
    ];
    for (const input of inputs) {
      assert.equal(inputCode(input), 0, `written as JSON: ${JSON.stringify(input)}`);
      assert.deepEqual(roundTrip(input, null, 'hashed').in, decodeLine(encodeLine(input, 'hashed', KEY)));
    }
    // The same inputs without the undeclared field are written field by field.
    assert.notEqual(
      inputCode({ type: 'response', requestId: 4, response: { method: 'Heartbeat', body: heartbeat } }),
      0,
    );
    assert.notEqual(inputCode({ type: 'streamChunk', requestId: 5, chunk }), 0);
    const undeclared = roundTrip(inputs[0]!, null, 'hashed').in as unknown as {
      response: { body: Record<string, unknown> };
    };
    assert.equal(undeclared.response.body.leaseTicks, 9);
  });

  it('format 6: a proposed batch in hashed mode is its lengths and one keyed hash of every value, none of the values', () => {
    const proposals = ['first secret', 'second secret', ''].map((v, i) => ({
      proposalId: i + 1,
      data: new TextEncoder().encode(v),
    }));
    const lines = new RecordingLines();
    const input: Input = { type: 'proposeBatch', proposals };
    writeStepRecord(lines.begin(), 1, 1, 1, input, new Int32Array(2), null, 'hashed', KEY);
    const record = Buffer.from(lines.buf.subarray(0, lines.pos));
    assert.equal(record[RECORD_HEADER_BYTES + 2 + 8 + 8], 13, 'the batch input code');
    for (const p of proposals.slice(0, 2)) assert.ok(!record.includes(Buffer.from(p.data)), 'no value in the record');
    const hash = batchValueHashLatin1(proposals, KEY);
    assert.ok(
      record.subarray(record.length - 1 - 16, record.length - 1).equals(Buffer.from(hash.slice(0, 16), 'latin1')),
    );
    // The hash commits to each value and to where one ends (the lengths are in it).
    const changed = proposals.map((p, i) => (i === 1 ? { ...p, data: new TextEncoder().encode('second secreT') } : p));
    assert.notEqual(batchValueHashLatin1(changed, KEY), hash);
    const shifted = [
      { proposalId: 1, data: new TextEncoder().encode('first secretsecond') },
      { proposalId: 2, data: new TextEncoder().encode(' secret') },
      proposals[2]!,
    ];
    assert.notEqual(batchValueHashLatin1(shifted, KEY), hash);
    assert.notEqual(batchValueHashLatin1(proposals, new Uint8Array(32).fill(8)), hash, 'keyed');
    // Read back as format 5's were: each value as zeros of its length.
    assert.deepEqual(readStepRecord(record, RECORD_HEADER_BYTES, record.length).in, {
      type: 'proposeBatch',
      proposals: proposals.map((p) => ({ proposalId: p.proposalId, data: new Uint8Array(p.data.length) })),
    });
    // A batch larger than the reused buffer hashes the same way.
    const big = Array.from({ length: 3 }, (_, i) => ({ proposalId: i, data: new Uint8Array(3 * 1024 * 1024).fill(i) }));
    const concatenated = Buffer.concat([
      KEY,
      ...big.flatMap((p) => {
        const length = Buffer.alloc(4);
        length.writeUInt32LE(p.data.length);
        return [length, p.data];
      }),
    ]);
    assert.equal(batchValueHashLatin1(big, KEY), valueHashLatin1(concatenated.subarray(KEY.length), KEY));
  });

  it("still reads format 5's proposed batch (a keyed hash per value)", () => {
    // Format 5's record, as its writer wrote it: n, tick, at, digest, input code 7, the count, then each
    // proposal's id + 1, the hashed form (0), the length and the value's 16 hash bytes; no effect texts.
    const values = [new Uint8Array([1, 2, 3]), new Uint8Array(0)];
    const body = [2, 2, ...new Uint8Array(new Float64Array([3]).buffer), 0, 0, 0, 0, 0, 0, 0, 0, 7, values.length];
    values.forEach((v, i) =>
      body.push(i + 2, 0, v.length, ...Buffer.from(valueHashLatin1(v, KEY).slice(0, 16), 'latin1')),
    );
    body.push(0);
    const record = Buffer.from([2, body.length, 0, 0, 0, ...body]);
    assert.deepEqual(readStepRecord(record, RECORD_HEADER_BYTES, record.length).in, {
      type: 'proposeBatch',
      proposals: values.map((v, i) => ({ proposalId: i + 1, data: new Uint8Array(v.length) })),
    });
  });

  it("takes a shipped frame's checksum as checked only when the step's append took that frame's entries", () => {
    const entries: Entry[] = [1, 2, 3].map((i) => ({
      seq: 10 + i,
      term: 2,
      kind: EntryKind.EventBatch,
      data: new Uint8Array(i).fill(i),
    }));
    const frame = encodeSegmentFrame({ prevSeq: 10, prevTerm: 2, commitSeq: 11, entries });
    const corrupt = Uint8Array.from(frame);
    corrupt[corrupt.length - 1]! ^= 1;
    const chunkInput = (payload: Uint8Array): Input => ({
      type: 'streamChunk',
      requestId: 5,
      chunk: { id: undefined, payload, eventCount: 3, leaderLastSeq: 13, streamBaseline: 0, term: 2, leaderRegion: 1 },
    });
    const append = (list: Entry[]): Effect => ({ type: 'append', fromSeq: list[0]!.seq, entries: list });
    /** written: the input code and the input read back, the effects passed as the step's. */
    const written = (payload: Uint8Array, effects: Effect[]): [number, Input] => {
      const lines = new RecordingLines();
      writeStepRecord(lines.begin(), 1, 1, 1, chunkInput(payload), new Int32Array(2), null, 'hashed', KEY, effects);
      const record = Buffer.from(lines.buf.subarray(0, lines.pos));
      return [record[RECORD_HEADER_BYTES + 2 + 8 + 8]!, readStepRecord(record, RECORD_HEADER_BYTES, record.length).in];
    };
    const SKELETON = 10;
    const JSON_INPUT = 0;
    const zeros = encodeSegmentFrame({
      prevSeq: 10,
      prevTerm: 2,
      commitSeq: 11,
      entries: entries.map((e) => ({ ...e, data: new Uint8Array(e.data.length) })),
    });
    // A good frame is its skeleton, whatever the effects.
    for (const effects of [[], [append(entries)], [append(entries.slice(1))]]) {
      const [code, back] = written(frame, effects);
      assert.equal(code, SKELETON);
      assert.deepEqual((back as { chunk: { payload: Uint8Array } }).chunk.payload, zeros);
    }
    // A corrupt one the engine did not append from is checked here, and written as JSON (it replays as corrupt).
    const unlike = (change: Partial<Entry>): Effect =>
      append(entries.map((e, i) => (i === 2 ? { ...e, ...change } : e)));
    for (const effects of [
      [],
      [{ type: 'apply', entries } as Effect],
      [unlike({ term: 3 })],
      [unlike({ data: new Uint8Array(4) })],
      [unlike({ kind: EntryKind.Membership })],
      [append(entries.slice(0, 2))],
      [append([entries[0]!, null as unknown as Entry, entries[2]!])],
    ]) {
      const [code, back] = written(corrupt, effects);
      assert.equal(code, JSON_INPUT, JSON.stringify(effects.map((e) => e.type)));
      assert.deepEqual(back, decodeLine(encodeLine(chunkInput(corrupt), 'hashed', KEY)));
    }
    // The step appended exactly this frame's last entries: the engine decoded it, checksum and all, so the
    // recorder takes its word and does not compute the checksum again (this corrupt frame shows it does not).
    assert.equal(written(corrupt, [append(entries.slice(1))])[0], SKELETON);
    // Without the effects (null), always checked.
    const lines = new RecordingLines();
    writeStepRecord(lines.begin(), 1, 1, 1, chunkInput(corrupt), new Int32Array(2), null, 'hashed', KEY, null);
    assert.equal(lines.buf[RECORD_HEADER_BYTES + 2 + 8 + 8], JSON_INPUT);
  });
});
