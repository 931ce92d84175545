// Heartbeats on an open call (transports/grpc/heartbeat-stream.ts): each heartbeat's outcome is the one the
// unary Heartbeat delivers for the same answer (response, status code, details, x-svc-* trailers), every
// heartbeat to a peer shares one call, a heartbeat the unary call would refuse as bad input is refused per
// request (the call lives on), an unanswered one fails at the unary deadline and the next opens a new call,
// and a peer that does not serve the method gets its heartbeats as unary calls again.
import assert from 'node:assert/strict';
import * as grpc from '@grpc/grpc-js';
import { StatusCode, TRAILER_TERM, type RpcRequest } from '../../engine/rpc.js';
import * as pb from '../../proto/gen/svc/replication/v1/replication.js';
import { HeartbeatStreamRequest, HeartbeatStreamResponse } from '../../proto/gen/svc/peer/v1/peer.js';
import { PeerPool, type TransportInput } from '../../transports/grpc/client.js';
import {
  HEARTBEAT_STREAM_CALL_ID_BASE,
  HeartbeatStreamServer,
  HeartbeatStreams,
  heartbeatStreamDefinition,
} from '../../transports/grpc/heartbeat-stream.js';
import { resolveGrpcLimits } from '../../transports/grpc/limits.js';
import { encodeRequest, identity } from '../../transports/grpc/methods.js';
import { PeerServer } from '../../transports/grpc/server.js';
import { insecureClientCredentials, insecureServerCredentials } from '../../transports/grpc/tls.js';
import { FakePeerHandler, outcomes, startServer, waitFor } from './helpers.js';

type Heartbeat = Extract<RpcRequest, { method: 'Heartbeat' }>;
const heartbeat = (term: number, lagEntries = 1): Heartbeat => ({
  method: 'Heartbeat',
  body: pb.HeartbeatRequest.fromPartial({
    term,
    regionId: 1,
    replicationLag: Object.fromEntries(Array.from({ length: lagEntries }, (_, i) => [i + 2, 5])),
  }),
});
const DEADLINE_MS = 400;

describe('transports/grpc heartbeat stream', function () {
  this.timeout(60_000);
  let server: PeerServer;
  let address: string;
  let handler: FakePeerHandler;
  let streamServer: HeartbeatStreamServer;
  const limits = resolveGrpcLimits({ unaryDeadlineMs: DEADLINE_MS, replicationLagEntryCountMax: 4 });

  before(async function () {
    handler = new FakePeerHandler().on('Heartbeat', (_id, request, call) => {
      if (request.method !== 'Heartbeat') throw new Error('not a heartbeat');
      if (request.body.term === 99) return; // never answers: the caller's deadline ends it
      if (request.body.term < 5)
        call.replyError({
          code: StatusCode.FAILED_PRECONDITION,
          details: 'stale term, 100%',
          trailers: { [TRAILER_TERM]: '5' },
        });
      else
        call.reply({
          method: 'Heartbeat',
          body: { acknowledged: true, term: request.body.term, accepted: true, capabilities: 1, removed: false },
        });
    });
    streamServer = new HeartbeatStreamServer({ handler, limits, openRequestCountMax: 8 });
    server = await PeerServer.listen('127.0.0.1:0', {
      handler,
      credentials: insecureServerCredentials(),
      limits,
      services: [
        {
          name: 'svc.peer.v1.PeerStreams',
          definition: heartbeatStreamDefinition(),
          implementation: streamServer.implementation(),
        },
      ],
    });
    address = `127.0.0.1:${server.port}`;
  });

  after(async function () {
    streamServer?.endAll('test over');
    await server?.close();
  });

  function streams(deliver: (input: TransportInput) => void, fallback: (id: number, to: string, r: Heartbeat) => void) {
    return new HeartbeatStreams({
      credentials: insecureClientCredentials(),
      channelOptions: {},
      limits,
      deliver,
      fallback,
    });
  }

  it('delivers what the unary call delivers, every heartbeat on one call, each served as a Heartbeat call', async function () {
    const streamed = outcomes();
    const unary = outcomes();
    const fallbacks: number[] = [];
    const s = streams(streamed.deliver, (id) => fallbacks.push(id));
    const pool = new PeerPool({ credentials: insecureClientCredentials(), deliver: unary.deliver, limits });
    try {
      for (const [id, request] of [
        [1, heartbeat(7)],
        [2, heartbeat(3)],
        [3, heartbeat(8)],
      ] as const) {
        s.send(id, address, request);
        pool.send(id, address, request);
        assert.deepEqual(await streamed.of(id), await unary.of(id));
      }
      const refused = await streamed.of(2);
      assert.ok(refused.type === 'callFailed');
      assert.equal(refused.status.details, 'stale term, 100%');
      assert.deepEqual(refused.status.trailers, { [TRAILER_TERM]: '5' });
      assert.equal(s.callsOpened, 1, 'the three heartbeats shared one call');
      assert.equal(s.streamed, 3);
      assert.deepEqual(fallbacks, []);
      // The handler saw each as a Heartbeat call of its own id, above the server's own call ids, and each closed.
      const streamedCalls = handler.requests.filter((r) => r.callId >= HEARTBEAT_STREAM_CALL_ID_BASE);
      assert.equal(streamedCalls.length, 3);
      for (const r of streamedCalls) assert.ok(handler.closed.has(r.callId), `call ${r.callId} closed`);
    } finally {
      s.close();
      pool.close();
    }
  });

  it('refuses a heartbeat the unary call would refuse as bad input, per request, and the call lives on', async function () {
    const streamed = outcomes();
    const s = streams(streamed.deliver, () => assert.fail('no fallback'));
    try {
      s.send(11, address, heartbeat(7, 5)); // replication_lag over replicationLagEntryCountMax 4
      const bad = await streamed.of(11);
      assert.ok(bad.type === 'callFailed' && bad.status.code === StatusCode.INVALID_ARGUMENT, JSON.stringify(bad));
      assert.match(bad.status.details, /replicationLagEntryCountMax/);
      s.send(12, address, heartbeat(7));
      assert.equal((await streamed.of(12)).type, 'response');
      assert.equal(s.callsOpened, 1);
    } finally {
      s.close();
    }
  });

  it('ends a malformed message’s call with INVALID_ARGUMENT', async function () {
    const client = new grpc.Client(address, insecureClientCredentials());
    try {
      const call = client.makeBidiStreamRequest<Buffer, Buffer>(
        '/svc.peer.v1.PeerStreams/HeartbeatStream',
        identity,
        identity,
        new grpc.Metadata(),
      );
      const answers: HeartbeatStreamResponse[] = [];
      call.on('data', (b: Buffer) => answers.push(HeartbeatStreamResponse.decode(b)));
      const ended = new Promise<grpc.ServiceError>((resolve) => call.on('error', resolve));
      call.write(
        Buffer.from(HeartbeatStreamRequest.encode({ requestId: 1, heartbeat: encodeRequest(heartbeat(7)) }).finish()),
      );
      await waitFor(() => answers.length === 1, 'the answer to a good message');
      call.write(Buffer.from([0xff, 0xff, 0xff]));
      const err = await ended;
      assert.equal(err.code, grpc.status.INVALID_ARGUMENT);
    } finally {
      client.close();
    }
  });

  it('fails an unanswered heartbeat at the unary deadline, and the next heartbeat opens a new call', async function () {
    const streamed = outcomes();
    const s = streams(streamed.deliver, () => assert.fail('no fallback'));
    try {
      s.send(21, address, heartbeat(99));
      const late = await streamed.of(21);
      assert.ok(late.type === 'callFailed' && late.status.code === StatusCode.DEADLINE_EXCEEDED, JSON.stringify(late));
      s.send(22, address, heartbeat(7));
      assert.equal((await streamed.of(22)).type, 'response');
      assert.equal(s.callsOpened, 2);
    } finally {
      s.close();
    }
  });

  it('sends heartbeats as unary calls to a peer that does not serve the method', async function () {
    const plain = new FakePeerHandler().on('Heartbeat', (_id, _request, call) =>
      call.reply({
        method: 'Heartbeat',
        body: { acknowledged: true, term: 7, accepted: true, capabilities: 1, removed: false },
      }),
    );
    const { server: older, address: olderAddress } = await startServer(plain, limits);
    const delivered = outcomes();
    const pool = new PeerPool({ credentials: insecureClientCredentials(), deliver: delivered.deliver, limits });
    const fallbacks: number[] = [];
    const s = streams(delivered.deliver, (id, to, request) => {
      fallbacks.push(id);
      pool.send(id, to, request);
    });
    try {
      s.send(31, olderAddress, heartbeat(7));
      assert.equal((await delivered.of(31)).type, 'response');
      s.send(32, olderAddress, heartbeat(7));
      assert.equal((await delivered.of(32)).type, 'response');
      assert.deepEqual(fallbacks, [31, 32], 'the first after UNIMPLEMENTED, the next at once');
      assert.equal(s.callsOpened, 1);
    } finally {
      s.close();
      pool.close();
      await older.close();
    }
  });
});
