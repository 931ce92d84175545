// The recorder's line buffer (transports/node/recording-lines.ts): lines go to the file as UTF-8 slices of
// a reused chunk, so a slice handed to a write must never change afterwards, and a staged line must count
// its exact bytes and vanish unless taken in.
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { RecordingLines } from '../../transports/node/recording-lines.js';

describe('flight recorder: the line buffer', () => {
  it('hands on exactly the lines taken in, each slice unchanged by what comes after (property)', () => {
    const line = fc.string({ unit: 'binary', maxLength: 300 });
    fc.assert(
      fc.property(
        fc.array(fc.record({ line, keep: fc.boolean(), take: fc.boolean() }), { maxLength: 200 }),
        fc.integer({ min: 16, max: 1024 }),
        (ops, chunkBytes) => {
          const lines = new RecordingLines(chunkBytes);
          const handed: Array<{ slice: Buffer; copy: Buffer }> = [];
          let expected = '';
          for (const op of ops) {
            const bytes = lines.stage(op.line);
            assert.equal(bytes, Buffer.byteLength(op.line) + 1);
            if (op.keep) {
              lines.commit();
              expected += `${op.line}\n`;
            }
            if (op.take) {
              const slice = lines.take();
              if (slice) handed.push({ slice, copy: Buffer.from(slice) });
              assert.equal(lines.bytes, 0);
            }
          }
          const rest = lines.take();
          if (rest) handed.push({ slice: rest, copy: Buffer.from(rest) });
          for (const { slice, copy } of handed) assert.ok(slice.equals(copy), 'a slice handed on changed');
          assert.equal(Buffer.concat(handed.map((h) => h.slice)).toString('utf8'), expected);
        },
      ),
      { numRuns: 200 },
    );
  });
});
