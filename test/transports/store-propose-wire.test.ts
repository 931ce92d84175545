// transports/store-rpc/propose-wire.ts reads and writes Propose's messages by hand: byte for byte and field for
// field what the generated code (proto/gen/svc/store/v1/store.ts) does, for any message and any input bytes.
import assert from 'node:assert/strict';
import fc from 'fast-check';
import * as pb from '../../proto/gen/svc/store/v1/store.js';
import { decodeProposeRequest, encodeProposeResponse } from '../../transports/store-rpc/propose-wire.js';

const generatedDecode = (bytes: Buffer): pb.ProposeRequest | string => {
  try {
    return pb.ProposeRequest.decode(bytes);
  } catch (err) {
    return `throws ${String(err)}`;
  }
};
const handDecode = (bytes: Buffer): pb.ProposeRequest | string => {
  try {
    return decodeProposeRequest(bytes);
  } catch (err) {
    return `throws ${String(err)}`;
  }
};
const asBuffer = (bytes: Uint8Array): Buffer => Buffer.from(bytes);

describe('store rpc: Propose messages read and written by hand (propose-wire.ts)', () => {
  it('writes every ProposeResponse as the generated encoder does', () => {
    const count = fc.oneof(fc.constant(0), fc.nat(), fc.maxSafeNat());
    fc.assert(
      fc.property(
        count,
        fc.record<pb.CommandResult>({
          outcome: fc.oneof(fc.constantFrom(0, 1, 2, 3), fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 })),
          version: count,
          existed: fc.boolean(),
          actualVersion: count,
          reason: fc.oneof(fc.constant(''), fc.string(), fc.string({ unit: 'binary' })),
        }),
        (seq, result) => {
          const generated = asBuffer(pb.ProposeResponse.encode({ seq, result }).finish());
          assert.deepEqual(encodeProposeResponse(seq, result), generated);
        },
      ),
    );
  });

  it('reads every encoded ProposeRequest, and any bytes, as the generated decoder does', () => {
    const request = fc.record<pb.ProposeRequest>({
      command: fc.uint8Array({ maxLength: 300 }),
      requestId: fc.oneof(fc.constant(''), fc.string(), fc.string({ unit: 'binary', maxLength: 200 })),
    });
    fc.assert(
      fc.property(request, (message) => {
        const bytes = asBuffer(pb.ProposeRequest.encode(message).finish());
        assert.deepEqual(handDecode(bytes), generatedDecode(bytes));
      }),
    );
    const tagged = fc.array(
      fc.oneof(
        fc.uint8Array({ maxLength: 12 }),
        fc.constant(Uint8Array.of(10)),
        fc.constant(Uint8Array.of(18)),
        fc.constant(Uint8Array.of(10, 0x80)),
      ),
      { maxLength: 6 },
    );
    fc.assert(
      fc.property(tagged, (parts) => {
        const bytes = Buffer.concat(parts);
        assert.deepEqual(handDecode(bytes), generatedDecode(bytes));
      }),
    );
  });
});
