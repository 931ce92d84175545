// The server under bad input: each case gets its named status, the handler
// never sees it, and the server goes on serving the next call.
import assert from 'node:assert/strict';
import { BinaryWriter } from '@bufbuild/protobuf/wire';
import * as grpc from '@grpc/grpc-js';
import { StatusCode } from '../../engine/rpc.js';
import * as pb from '../../proto/gen/svc/replication/v1/replication.js';
import { methodPath } from '../../transports/grpc/methods.js';
import type { PeerServer } from '../../transports/grpc/server.js';
import { FakePeerHandler, rawUnary, startServer, waitFor } from './helpers.js';

const encode = <T>(codec: pb.MessageFns<T>, message: Partial<T>): Buffer =>
  Buffer.from(codec.encode(codec.fromPartial(message as pb.DeepPartial<T>)).finish());

// Each case runs against both ways of serving unary calls: the lean path (lean-serve.ts) and grpc-js's server.
for (const leanUnary of [true, false])
  describe(`transports/grpc server: bad input (${leanUnary ? 'lean' : 'grpc-js'} unary serving)`, function () {
    let server: PeerServer;
    let address: string;
    let handler: FakePeerHandler;
    const warnings: string[] = [];
    const messageBytesMax = 64 * 1024;
    const replicationLagEntryCountMax = 8;

    before(async function () {
      handler = new FakePeerHandler()
        .on('Heartbeat', (_id, request, call) => {
          assert.equal(request.method, 'Heartbeat');
          call.reply({
            method: 'Heartbeat',
            body: { acknowledged: true, term: request.body.term, accepted: true, capabilities: 1, removed: false },
          });
        })
        .on('RequestVote', () => {
          throw new Error('the fake handler fails on purpose');
        })
        .on('TimeoutNow', () => {
          // never answers: the server's handler-idle bound must end the call
        })
        .on('ReportApplied', (_id, _request, call) => call.streamChunk(pb.ShipSegmentRequest.fromPartial({})))
        .on('ShipSegment', (_id, _request, call) => {
          call.reply({ method: 'ShipSegment', body: { accepted: true, appliedSeqno: 7, term: 2 } });
          call.reply({ method: 'ShipSegment', body: { accepted: false, appliedSeqno: 0, term: 0 } });
        })
        .on('JoinCluster', (_id, _request, call) =>
          call.reply({ method: 'Heartbeat', body: pb.HeartbeatResponse.fromPartial({}) }),
        );
      ({ server, address } = await startServer(
        handler,
        {
          messageBytesMax,
          streamBufferedBytesMax: messageBytesMax,
          replicationLagEntryCountMax,
          stringFieldBytesMax: 64,
          handlerIdleTimeoutMs: 300,
        },
        warnings,
        leanUnary,
      ));
    });

    it('serves its unary calls as asked', function () {
      assert.equal(server.unaryServing, leanUnary ? 'lean' : 'grpc-js');
    });

    after(async function () {
      await server.close();
    });

    async function heartbeatStillServed(): Promise<void> {
      const ok = await rawUnary(address, methodPath('Heartbeat'), encode(pb.HeartbeatRequest, { term: 5 }));
      assert.equal(ok.error, null);
      assert.equal(pb.HeartbeatResponse.decode(ok.value!).term, 5);
    }

    it('answers a good call (the baseline the rest compare with)', async function () {
      await heartbeatStillServed();
    });

    it('refuses malformed protobuf with INVALID_ARGUMENT and keeps serving', async function () {
      const before = handler.requests.length;
      const garbage = [
        Buffer.from([0x0f, 0x01, 0x02]), // field 1 with wire type 7, which does not exist
        Buffer.from([0x0a, 0xff, 0xff, 0xff, 0x0f]), // a length-delimited field claiming 4 GiB
        Buffer.from([0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]), // a varint that never ends
      ];
      for (const bytes of garbage) {
        const outcome = await rawUnary(address, methodPath('Heartbeat'), bytes);
        assert.equal(
          outcome.error?.code,
          grpc.status.INVALID_ARGUMENT,
          `for ${bytes.toString('hex')}: ${outcome.error?.details}`,
        );
        assert.match(outcome.error!.details, /malformed Heartbeat request/);
      }
      assert.equal(handler.requests.length, before, 'the handler never sees malformed input');
      await heartbeatStillServed();
    });

    it('refuses a uint64 beyond 2^53 with INVALID_ARGUMENT instead of losing precision', async function () {
      const writer = new BinaryWriter();
      writer.uint32(8).uint64(2n ** 60n); // VoteRequest.term = 2^60
      const outcome = await rawUnary(address, methodPath('RequestVote'), Buffer.from(writer.finish()));
      assert.equal(outcome.error?.code, grpc.status.INVALID_ARGUMENT);
      assert.match(outcome.error!.details, /MAX_SAFE_INTEGER/);
    });

    it('refuses a message above messageBytesMax with RESOURCE_EXHAUSTED', async function () {
      const big = encode(pb.ShipSegmentRequest, { payload: Buffer.alloc(messageBytesMax + 1, 7), term: 1 });
      const outcome = await rawUnary(address, methodPath('ShipSegment'), big);
      assert.equal(outcome.error?.code, grpc.status.RESOURCE_EXHAUSTED);
      await heartbeatStillServed();
    });

    it('refuses a replication_lag map above replicationLagEntryCountMax with INVALID_ARGUMENT', async function () {
      const lag = (count: number): Record<number, number> =>
        Object.fromEntries(Array.from({ length: count }, (_, i) => [i + 1, i * 10]));
      const atLimit = await rawUnary(
        address,
        methodPath('Heartbeat'),
        encode(pb.HeartbeatRequest, { replicationLag: lag(replicationLagEntryCountMax) }),
      );
      assert.equal(atLimit.error, null, 'exactly the limit is fine');
      const huge = await rawUnary(
        address,
        methodPath('Heartbeat'),
        encode(pb.HeartbeatRequest, { replicationLag: lag(5_000) }),
      );
      assert.equal(huge.error?.code, grpc.status.INVALID_ARGUMENT);
      assert.match(huge.error!.details, /replication_lag has 5000 entries, above replicationLagEntryCountMax 8/);
      await heartbeatStillServed();
    });

    it('refuses a string field above stringFieldBytesMax with INVALID_ARGUMENT', async function () {
      const outcome = await rawUnary(
        address,
        methodPath('JoinCluster'),
        encode(pb.JoinRequest, { name: 'n'.repeat(65) }),
      );
      assert.equal(outcome.error?.code, grpc.status.INVALID_ARGUMENT);
      assert.match(outcome.error!.details, /field name is 65 bytes/);
    });

    it('answers an unknown method path with UNIMPLEMENTED', async function () {
      for (const path of [
        '/svc.replication.v1.WalShipping/DropTables',
        '/svc.replication.v2.WalShipping/Heartbeat',
        '/nope',
      ]) {
        const outcome = await rawUnary(address, path, Buffer.alloc(0));
        assert.equal(outcome.error?.code, grpc.status.UNIMPLEMENTED, path);
      }
      await heartbeatStillServed();
    });

    it('turns a handler that throws into INTERNAL', async function () {
      const outcome = await rawUnary(address, methodPath('RequestVote'), encode(pb.VoteRequest, { term: 3 }));
      assert.equal(outcome.error?.code, grpc.status.INTERNAL);
      assert.ok(warnings.some((w) => w.includes('handler threw')));
      await heartbeatStillServed();
    });

    it('ends a call its handler never answers with DEADLINE_EXCEEDED after handlerIdleTimeoutMs', async function () {
      const started = Date.now();
      const outcome = await rawUnary(address, methodPath('TimeoutNow'), encode(pb.TimeoutNowRequest, { term: 3 }));
      assert.equal(outcome.error?.code, grpc.status.DEADLINE_EXCEEDED);
      assert.match(outcome.error!.details, /did not act within 300 ms/);
      assert.ok(Date.now() - started >= 250);
      const last = handler.requests.at(-1)!;
      assert.equal(handler.closed.get(last.callId)?.code, StatusCode.DEADLINE_EXCEEDED);
      await waitFor(() => server.stats().activeCallCount === 0, 'the call to be freed');
    });

    it('ends a call the handler answers with the wrong verb or method with INTERNAL, and ignores a second reply', async function () {
      const misused = await rawUnary(address, methodPath('ReportApplied'), encode(pb.AppliedReport, {}));
      assert.equal(misused.error?.code, grpc.status.INTERNAL);
      assert.match(misused.error!.details, /misused the call \(streamChunk\)/);
      const wrongMethod = await rawUnary(address, methodPath('JoinCluster'), encode(pb.JoinRequest, { name: 'x' }));
      assert.equal(wrongMethod.error?.code, grpc.status.INTERNAL);
      const twice = await rawUnary(address, methodPath('ShipSegment'), encode(pb.ShipSegmentRequest, { term: 2 }));
      assert.equal(twice.error, null);
      assert.equal(pb.ShipSegmentResponse.decode(twice.value!).appliedSeqno, 7, 'the first reply wins');
      await heartbeatStillServed();
    });

    it('counts the calls it refused and frees every call', async function () {
      await waitFor(() => server.stats().activeCallCount === 0, 'no active calls');
      assert.ok(server.stats().rejectedCallCount >= 6);
      assert.equal(server.stats().bufferedBytes, 0);
    });
  });
