// The recorder writes each step line with encodeStepLine (recording/codec.ts), built around the input's
// JSON for speed; it must be the very text encodeLine writes for the same step object, so the reader and
// every replay of earlier recordings read it alike.
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { decodeLine, encodeLine, encodeStepLine } from '../../recording/codec.js';
import type { Input } from '../../engine/types.js';

describe('recording: the step line', () => {
  it('is the text encodeLine writes for the same step, with or without effect texts (property)', () => {
    const key = new Uint8Array(32).fill(7);
    const input = fc.oneof(
      fc.constant<Input>({ type: 'tick' }),
      fc.record({
        type: fc.constant('propose' as const),
        proposalId: fc.nat(),
        data: fc.uint8Array({ maxLength: 64 }),
      }),
      fc.record({
        type: fc.constant('entriesPersisted' as const),
        lastSeq: fc.nat(),
        lastTerm: fc.nat(),
        generation: fc.option(fc.nat(), { nil: undefined }),
      }),
    );
    const number = fc.oneof(fc.nat(), fc.double(), fc.constant(Number.NaN), fc.constant(-0));
    fc.assert(
      fc.property(
        number,
        number,
        number,
        input,
        fc.string({ maxLength: 16 }),
        fc.option(fc.array(fc.string({ maxLength: 40 }), { maxLength: 4 }), { nil: undefined }),
        fc.constantFrom('hashed' as const, 'full' as const),
        (n, tick, at, step, d, fx, mode) => {
          const line = encodeStepLine(n, tick, at, step, d, fx, mode, key);
          const object = { t: 'step', n, tick, at, in: step, d, ...(fx === undefined ? {} : { fx }) };
          assert.equal(line, encodeLine(object, mode, key));
          assert.deepEqual(Object.keys(decodeLine(line) as object), Object.keys(object));
        },
      ),
      { numRuns: 300 },
    );
  });
});
