// Keepalive: a peer that goes silent without closing its connection (power
// loss, a partition) is noticed by both sides within keepalive time + timeout.
// The server ends and frees the call it was serving; the client's call fails
// UNAVAILABLE and its channel reconnects once the peer is reachable again.
import assert from 'node:assert/strict';
import { StatusCode } from '../../engine/rpc.js';
import * as pb from '../../proto/gen/svc/replication/v1/replication.js';
import { serverChannelOptions } from '../../transports/grpc/channel-options.js';
import { PeerPool, type TransportInput } from '../../transports/grpc/client.js';
import { DEFAULT_GRPC_LIMITS, resolveGrpcLimits } from '../../transports/grpc/limits.js';
import type { PeerServer } from '../../transports/grpc/server.js';
import { insecureClientCredentials } from '../../transports/grpc/tls.js';
import { FakePeerHandler, SilenceableProxy, startServer, waitFor } from './helpers.js';

describe('transports/grpc keepalive', function () {
  this.timeout(30_000);
  const keepalive = { keepaliveTimeMs: 200, keepaliveTimeoutMs: 300, minPingIntervalWithoutDataMs: 100 };
  let server: PeerServer;
  let address: string;
  let handler: FakePeerHandler;
  let proxy: SilenceableProxy;

  before(async function () {
    // The fake keeps every StreamSegments call open after its first chunk, like a leader with nothing new to ship.
    handler = new FakePeerHandler()
      .on('StreamSegments', (_id, _request, call) =>
        call.streamChunk(pb.ShipSegmentRequest.fromPartial({ id: { seqno: 1 }, term: 1 })),
      )
      .on('Heartbeat', (_id, _request, call) =>
        call.reply({ method: 'Heartbeat', body: pb.HeartbeatResponse.fromPartial({ acknowledged: true }) }),
      );
    ({ server, address } = await startServer(handler, keepalive));
    proxy = await SilenceableProxy.start(server.port);
  });

  after(async function () {
    proxy?.close();
    await server?.close(0);
  });

  it('servers ping idle peers, permit pings without calls, and police no faster than clients ping', function () {
    const options = serverChannelOptions(resolveGrpcLimits());
    assert.equal(options['grpc.keepalive_time_ms'], DEFAULT_GRPC_LIMITS.keepaliveTimeMs);
    assert.equal(options['grpc.keepalive_timeout_ms'], DEFAULT_GRPC_LIMITS.keepaliveTimeoutMs);
    assert.equal(options['grpc.keepalive_permit_without_calls'], 1);
    assert.ok(Number(options['grpc.http2.min_ping_interval_without_data_ms']) <= DEFAULT_GRPC_LIMITS.keepaliveTimeMs);
    assert.throws(
      () => resolveGrpcLimits({ keepaliveTimeMs: 1_000, minPingIntervalWithoutDataMs: 5_000 }),
      /must not exceed keepaliveTimeMs/,
    );
  });

  it('a silent peer: the server frees the call, the client reports UNAVAILABLE', async function () {
    const outcomes: TransportInput[] = [];
    const pool = new PeerPool({
      credentials: insecureClientCredentials(),
      deliver: (i) => outcomes.push(i),
      limits: { ...keepalive, streamDeadlineMs: 20_000 },
    });
    try {
      pool.send(1, proxy.address, { method: 'StreamSegments', body: { shardId: 1, fromSeqno: 1, term: 1 } });
      await waitFor(() => outcomes.some((i) => i.type === 'streamChunk'), 'the first chunk');
      assert.equal(server.stats().activeCallCount, 1);
      const silencedAt = Date.now();
      proxy.silence();
      await waitFor(() => server.stats().activeCallCount === 0, 'the server to drop the silent peer', 10_000);
      const callId = handler.requests.at(-1)!.callId;
      assert.equal(handler.closed.get(callId)?.code, StatusCode.CANCELLED);
      await waitFor(
        () => outcomes.some((i) => i.type === 'callFailed'),
        'the client to give up on the silent peer',
        10_000,
      );
      const failed = outcomes.find((i) => i.type === 'callFailed') as Extract<TransportInput, { type: 'callFailed' }>;
      assert.equal(failed.status.code, StatusCode.UNAVAILABLE);
      assert.ok(Date.now() - silencedAt < 10_000, 'noticed well before the 20 s stream deadline');

      // The server is unharmed, and the same pool reaches it directly.
      pool.send(2, address, { method: 'Heartbeat', body: pb.HeartbeatRequest.fromPartial({ term: 1 }) });
      await waitFor(() => outcomes.some((i) => i.requestId === 2), 'a heartbeat');
      assert.equal(outcomes.find((i) => i.requestId === 2)?.type, 'response');
    } finally {
      pool.close();
    }
  });
});
