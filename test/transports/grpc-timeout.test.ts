// grpcTimeoutMs (transports/grpc/grpc-timeout.ts): the lean server's fast path for `NNNNm` must read every
// header exactly as grpc-js's deadline pattern does, including the forms the fast path hands on.
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { grpcTimeoutMs } from '../../transports/grpc/grpc-timeout.js';

// grpc-js server's reading (its deadline pattern and unit table), kept here as the reference.
const UNIT_MS: Record<string, number> = { H: 3_600_000, M: 60_000, S: 1_000, m: 1, u: 1e-3, n: 1e-6 };
const reference = (timeout: string): number | null => {
  const match = /(\d{1,8})\s*([HMSmun])/.exec(timeout);
  return match === null ? null : (Number(match[1]) * UNIT_MS[match[2]!]!) | 0;
};

describe('grpc-timeout header', () => {
  it('reads the usual forms', () => {
    assert.equal(grpcTimeoutMs('300m'), 300);
    assert.equal(grpcTimeoutMs('99999999m'), 99_999_999);
    assert.equal(grpcTimeoutMs('2S'), 2_000);
    assert.equal(grpcTimeoutMs('1500u'), 1);
    assert.equal(grpcTimeoutMs('m'), null);
    assert.equal(grpcTimeoutMs(''), null);
  });

  it('agrees with grpc-js on any header, odd ones included (9 digits, signs, spaces, other units)', () => {
    const piece = fc.constantFrom('0', '1', '7', '9', 'm', 'S', 'H', 'M', 'u', 'n', ' ', '-', '+', 'x', '.');
    const header = fc.oneof(
      fc.array(piece, { maxLength: 12 }).map((parts) => parts.join('')),
      fc
        .tuple(fc.integer({ min: 0, max: 2_000_000_000 }), fc.constantFrom('m', 'S', 'u', 'n', 'H', 'M', ' m', 'mm'))
        .map(([n, unit]) => `${n}${unit}`),
      fc.string({ maxLength: 12 }),
    );
    fc.assert(
      fc.property(header, (timeout) => {
        assert.equal(grpcTimeoutMs(timeout), reference(timeout), JSON.stringify(timeout));
      }),
      { numRuns: 5_000 },
    );
  });
});
