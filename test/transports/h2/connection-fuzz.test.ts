// Random frames after a good handshake: whatever a client sends, the server either goes on (it answers a PING
// sent behind them), closes after the client's own GOAWAY, or ends the connection with a GOAWAY whose code is a protocol one, never INTERNAL_ERROR (an
// exception of ours), and it answers a fresh connection afterwards. Seeded by test/fast-check-seed.ts.
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { ErrorCode, Flag, frame, FrameType } from '../../../transports/h2/frames.js';
import { serveGrpcUnary } from '../../../transports/h2/grpc-unary.js';
import { encodeHeaderBlock } from '../../../transports/h2/hpack.js';
import { H2Server } from '../../../transports/h2/server.js';
import { RawClient } from './raw-client.js';

const GOOD_BLOCK = encodeHeaderBlock([
  [':method', 'POST'],
  [':scheme', 'http'],
  [':path', '/t.Test/Echo'],
  ['content-type', 'application/grpc'],
]);

const anyFrame = fc.record({
  type: fc.integer({ min: 0, max: 10 }),
  flags: fc.oneof(
    fc.constantFrom(0, Flag.END_STREAM, Flag.END_HEADERS, Flag.END_HEADERS | Flag.END_STREAM),
    fc.integer({ min: 0, max: 255 }),
  ),
  streamId: fc.constantFrom(0, 1, 2, 3, 5, 7),
  payload: fc.oneof(
    fc.uint8Array({ maxLength: 40 }).map((bytes) => Buffer.from(bytes)),
    fc.constant(GOOD_BLOCK),
    fc.constant(Buffer.from([0, 0, 0, 0, 2, 0x0a, 0x00])),
    fc.constant(Buffer.alloc(4, 0xff)),
  ),
});

describe('h2 server connection, random frames', () => {
  let server: H2Server;
  before(async () => {
    server = await H2Server.listen('127.0.0.1', 0, {
      onStream: serveGrpcUnary({
        handlers: new Map([['/t.Test/Echo', (request: Buffer) => ({ message: Buffer.from(request) })]]),
        messageBytesMax: 1024,
      }),
    });
  });
  after(() => server.close());

  it('goes on or ends with a protocol GOAWAY, never an internal error or a hang', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(anyFrame, { minLength: 1, maxLength: 12 }), async (frames) => {
        const client = await RawClient.connect(server.port);
        try {
          client.write(...frames.map((f) => frame(f.type, f.flags, f.streamId, f.payload)));
          client.write(frame(FrameType.PING, 0, 0, Buffer.from('probe!!!')));
          // A client GOAWAY lets the server close quietly once nothing is open.
          const saidGoAway = frames.some(
            (f) => f.type === FrameType.GOAWAY && f.streamId === 0 && f.payload.length >= 8,
          );
          const seen = await client
            .until(
              (f) => f.type === FrameType.GOAWAY || (f.type === FrameType.PING && f.payload.toString() === 'probe!!!'),
            )
            .catch((error: Error) => {
              if (saidGoAway && client.closed) return null;
              throw error;
            });
          if (seen === null) return;
          if (seen.type === FrameType.GOAWAY) {
            assert.notEqual(
              seen.payload.readUInt32BE(4),
              ErrorCode.INTERNAL_ERROR,
              seen.payload.subarray(8).toString(),
            );
            await client.closedByServer();
          }
        } finally {
          client.destroy();
        }
      }),
      { numRuns: 300 },
    );
    const fresh = await RawClient.connect(server.port);
    fresh.write(frame(FrameType.PING, 0, 0, Buffer.alloc(8)));
    await fresh.until((f) => f.type === FrameType.PING);
    fresh.destroy();
  });
});
