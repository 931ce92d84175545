// A forwarded write carries its request id beside the command (ProposeRequest/ProposeItem.request_id), on every
// transport the client pool uses (ProposeStream, ProposeBatch, Propose), so the leader finds it without decoding
// the command; the leader trusts it only when the command's last bytes name the same id (commandNamesRequestId),
// and otherwise decodes. Without the field on the wire, the recorded ids below come back empty.
import assert from 'node:assert/strict';
import * as grpc from '@grpc/grpc-js';
import fc from 'fast-check';
import * as pb from '../../proto/gen/svc/store/v1/store.js';
import { commandNamesRequestId, decodeCommand, encodeCommand } from '../../store/command.js';
import { DEFAULT_STORE_LIMITS } from '../../store/limits.js';
import { StoreClientPool, storeService, storeServiceDefinition } from '../../transports/store-rpc/store-service.js';
import { insecureTransport, STORE_POOL_TRANSPORTS } from './store-pool-transports.js';

const DEADLINE_MS = 5_000;

for (const unaryClient of STORE_POOL_TRANSPORTS)
  describe(`store rpc: the request id beside a forwarded command (${unaryClient} unary calls)`, function () {
    this.timeout(30_000);
    const received: Array<{ requestId: string; commandId: string }> = [];
    let server: grpc.Server;
    let address: string;

    before(async function () {
      server = new grpc.Server();
      const service = storeService({
        handler: {
          propose: (command, _deadlineAt, requestId) => {
            const decoded = decodeCommand(command);
            received.push({ requestId, commandId: decoded.ok ? decoded.command.requestId : '' });
            return Promise.resolve({
              seq: received.length,
              result: { outcome: pb.Outcome.OUTCOME_APPLIED, version: 1, existed: false, actualVersion: 0, reason: '' },
            });
          },
          readIndex: () => Promise.reject(new Error('not in this test')),
          get: () => Promise.reject(new Error('not in this test')),
        },
        commandBytesMax: DEFAULT_STORE_LIMITS.commandBytesMax,
        callDeadlineMs: DEADLINE_MS,
        proposeBatchCountMax: DEFAULT_STORE_LIMITS.proposeBatchCountMax,
        streamOpenRequestCountMax: DEFAULT_STORE_LIMITS.streamOpenRequestCountMax,
      });
      server.addService(storeServiceDefinition(), service.implementation);
      const port = await new Promise<number>((resolve, reject) =>
        server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, p) =>
          err ? reject(err) : resolve(p),
        ),
      );
      address = `127.0.0.1:${port}`;
    });

    after(function () {
      server?.forceShutdown();
    });

    for (const [transport, options] of [
      ['ProposeStream', {}],
      ['ProposeBatch', { overStreams: false }],
      ['Propose', { overStreams: false, proposeBatchCountMax: 1 }],
    ] as const) {
      it(`sends it on ${transport}`, async function () {
        const pool = new StoreClientPool({
          ...insecureTransport(unaryClient),
          ...options,
        });
        try {
          received.length = 0;
          const ids = [`${transport}-1`, `${transport}-2`];
          await Promise.all(
            ids.map((id) =>
              pool.propose(
                address,
                encodeCommand({ op: 'put', key: id, value: { id }, requestId: id }),
                Date.now() + DEADLINE_MS,
                id,
              ),
            ),
          );
          assert.deepEqual(received.map((r) => r.requestId).sort(), ids, 'the server had each command’s id beside it');
          assert.ok(received.every((r) => r.requestId === r.commandId));
        } finally {
          pool.close();
        }
      });
    }

    it('commandNamesRequestId: true for what encodeCommand makes with that id, false for any other id or encoding', function () {
      const id = fc.oneof(
        fc.string({ minLength: 1, maxLength: 40 }),
        fc.string({ unit: 'binary', minLength: 1, maxLength: 40 }),
      );
      fc.assert(
        fc.property(
          // Printable ASCII (read in place) and any code points (encoded and compared).
          id,
          id,
          fc.string({ maxLength: 20 }),
          fc.option(fc.nat(), { nil: undefined }),
          (requestId, otherId, key, expectedVersion) => {
            const command = encodeCommand({
              op: 'put',
              key: `k${key}`,
              value: { requestId: otherId },
              requestId,
              ...(expectedVersion === undefined ? {} : { expectedVersion }),
            });
            assert.equal(commandNamesRequestId(command, requestId), true);
            if (otherId !== requestId) assert.equal(commandNamesRequestId(command, otherId), false);
          },
        ),
      );
      const reordered = new TextEncoder().encode('{"requestId":"r1","v":1,"op":"delete","key":"k"}');
      assert.equal(commandNamesRequestId(reordered, 'r1'), false, 'another key order is decoded instead');
      assert.equal(commandNamesRequestId(new Uint8Array(), 'r1'), false);
      const unclosed = new TextEncoder().encode('{"op":"delete","key":"k","requestId":"r1"]');
      assert.equal(commandNamesRequestId(unclosed, 'r1'), false, 'the id must end the object');
      assert.equal(commandNamesRequestId(encodeCommand({ op: 'delete', key: 'k', requestId: 'r1' }), ''), false);
    });
  });
