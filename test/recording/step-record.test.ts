// Format 5's step records (recording/step-record.ts): the recorder writes the frequent inputs field by
// field and the rest as JSON, and the effects' texts as the facts in them. A replay must get back what
// format 4's JSON line gave it (the same input, values as zeros of their length, a shipped segment as the
// same frame), and a divergence must show the very texts describeEffect gives.
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { decodeLine, encodeLine } from '../../recording/codec.js';
import { describeEffect } from '../../recording/describe.js';
import { readStepRecord, RECORD_HEADER_BYTES, RECORD_STEP, writeStepRecord } from '../../recording/step-record.js';
import { encodeSegmentFrame } from '../../engine/segment-frame.js';
import { EntryKind, type Effect, type Input } from '../../engine/types.js';
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
});
