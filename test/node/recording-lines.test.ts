// The recorder's record buffer (transports/node/recording-lines.ts): records go to the file as slices of a
// reused chunk, so a slice handed to a write must never change afterwards, and a staged record must count
// its exact bytes and vanish unless taken in, also when writing it made the chunk grow.
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { readStepRecord, RECORD_HEADER_BYTES, RECORD_JSON, writeStepRecord } from '../../recording/step-record.js';
import { RecordingLines } from '../../transports/node/recording-lines.js';

/** records reads back the JSON lines and the step numbers of the records in `bytes`. */
function records(bytes: Buffer): string[] {
  const out: string[] = [];
  for (let at = 0; at < bytes.length;) {
    const length = bytes.readUInt32LE(at + 1);
    const body = at + RECORD_HEADER_BYTES;
    out.push(
      bytes[at] === RECORD_JSON
        ? bytes.toString('utf8', body, body + length)
        : `step ${readStepRecord(bytes, body, body + length).n}`,
    );
    at = body + length;
  }
  return out;
}

describe('flight recorder: the record buffer', () => {
  it('hands on exactly the records taken in, each slice unchanged by what comes after (property)', () => {
    const line = fc.string({ unit: 'binary', maxLength: 300 });
    const record = fc.oneof(line, fc.nat({ max: 2 ** 40 }));
    fc.assert(
      fc.property(
        fc.array(fc.record({ record, keep: fc.boolean(), take: fc.boolean() }), { maxLength: 200 }),
        fc.integer({ min: 16, max: 1024 }),
        (ops, chunkBytes) => {
          const lines = new RecordingLines(chunkBytes);
          const handed: Array<{ slice: Buffer; copy: Buffer }> = [];
          const expected: string[] = [];
          for (const op of ops) {
            let bytes: number;
            if (typeof op.record === 'string') {
              bytes = lines.stage(op.record);
              assert.equal(bytes, Buffer.byteLength(op.record) + RECORD_HEADER_BYTES);
            } else {
              // A step with a long input (written field by field, growing the chunk mid-record).
              const input = {
                type: 'stats' as const,
                stats: {
                  entityCount: op.record,
                  signalThroughputEps: 0,
                  diskBytes: 0,
                  nowNs: 'x'.repeat(op.record % 500),
                },
              };
              writeStepRecord(lines.begin(), op.record, 0, 0, input, new Int32Array(2), null, 'hashed', null);
              bytes = lines.staged;
            }
            assert.ok(bytes > RECORD_HEADER_BYTES || op.record === '');
            if (op.keep) {
              lines.commit();
              expected.push(typeof op.record === 'string' ? op.record : `step ${op.record}`);
            }
            if (op.take) {
              const slice = lines.take();
              if (slice) handed.push({ slice, copy: Buffer.from(slice) });
              assert.equal(lines.bytes, 0);
              // Bounded after a take: a chunk, or the staged record's size.
              assert.ok(lines.capacity <= Math.max(chunkBytes, lines.staged), `capacity ${lines.capacity}`);
            }
          }
          const rest = lines.take();
          if (rest) handed.push({ slice: rest, copy: Buffer.from(rest) });
          for (const { slice, copy } of handed) assert.ok(slice.equals(copy), 'a slice handed on changed');
          assert.deepEqual(records(Buffer.concat(handed.map((h) => h.slice))), expected);
        },
      ),
      { numRuns: 200 },
    );
  });

  it('goes back to a chunk of its size at the next take after a record longer than a chunk', () => {
    const chunkBytes = 4096;
    const lines = new RecordingLines(chunkBytes);
    lines.stage('{"t":"small"}');
    lines.commit();
    const big = `{"t":"ckpt","x":"${'y'.repeat(10 * chunkBytes)}"}`;
    lines.stage(big);
    lines.commit();
    assert.ok(lines.capacity > 10 * chunkBytes, 'the long record got a chunk of its size');
    const first = lines.take()!;
    const copy = Buffer.from(first);
    assert.equal(lines.capacity, chunkBytes, 'back to one chunk once the long record is handed on');
    // A record staged (not yet taken in) when the take comes is kept, in the new chunk.
    lines.stage('{"t":"next"}');
    lines.commit();
    lines.stage(big);
    assert.ok(lines.take());
    assert.ok(lines.capacity >= Buffer.byteLength(big) && lines.capacity < 2 * Buffer.byteLength(big));
    lines.commit();
    const second = lines.take()!;
    assert.equal(lines.capacity, chunkBytes);
    assert.ok(first.equals(copy), 'a slice handed on is not written over');
    assert.deepEqual(records(first), ['{"t":"small"}', big]);
    assert.deepEqual(records(second), [big]);
    // A long record staged and dropped (not taken in) does not keep its chunk past the next take either.
    lines.stage(big);
    lines.begin();
    assert.equal(lines.take(), null);
    assert.equal(lines.capacity, chunkBytes);
  });
});
