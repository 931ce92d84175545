// Served streams: chunks in order then the status (with trailers), flow control
// against a slow reader, a bound on what a burst may buffer, and clean-up when
// the reader goes away mid-stream.
import assert from 'node:assert/strict';
import * as grpc from '@grpc/grpc-js';
import { StatusCode, TRAILER_CATCHUP, TRAILER_TERM } from '../../engine/rpc.js';
import * as pb from '../../proto/gen/svc/replication/v1/replication.js';
import type { PeerServer } from '../../transports/grpc/server.js';
import { FakePeerHandler, rawClient, rawStream, startServer, streamOutcome, waitFor } from './helpers.js';

const KiB = 1024;
const MiB = 1024 * KiB;

function segment(seqno: number, payloadBytes: number): pb.ShipSegmentRequest {
  return pb.ShipSegmentRequest.fromPartial({
    id: { regionId: 1, shardId: 1, seqno },
    payload: Buffer.alloc(payloadBytes, seqno % 251),
    eventCount: 1,
    leaderLastSeq: seqno,
    term: 3,
  });
}

const streamRequest = (fromSeqno: number): Buffer =>
  Buffer.from(pb.StreamRequest.encode(pb.StreamRequest.fromPartial({ shardId: 1, fromSeqno, term: 3 })).finish());
const snapshotRequest = (): Buffer =>
  Buffer.from(
    pb.SnapshotRequest.encode(pb.SnapshotRequest.fromPartial({ shardId: 1, fromSeqno: 1, term: 3 })).finish(),
  );

/** SnapshotSource yields `count` file chunks of `chunkBytes`, counting what the server pulled and whether it was closed. */
class SnapshotSource {
  pulled = 0;
  closedEarly = false;
  finishedNormally = false;
  constructor(
    readonly count: number,
    readonly chunkBytes: number,
  ) {}

  async *chunks(): AsyncGenerator<pb.SnapshotFileChunk> {
    try {
      for (let i = 0; i < this.count; i += 1) {
        this.pulled += 1;
        yield {
          path: 'state/data.bin',
          offset: i * this.chunkBytes,
          data: Buffer.alloc(this.chunkBytes, i % 251),
          last: i === this.count - 1,
        };
      }
      this.finishedNormally = true;
    } finally {
      if (!this.finishedNormally) this.closedEarly = true;
    }
  }
}

const header = (needed: boolean): pb.SnapshotHeader => ({
  needed,
  snapshotSeq: needed ? 100 : 0,
  term: 3,
  leaderRegion: 1,
  files: needed ? [{ path: 'state/data.bin', size: 0, blake3: Buffer.alloc(32, 1) }] : [],
});

describe('transports/grpc server: streams', function () {
  this.timeout(60_000);
  let server: PeerServer;
  let address: string;
  let handler: FakePeerHandler;
  let source: SnapshotSource;
  let segmentsToSend: pb.ShipSegmentRequest[] = [];
  let segmentsEnding: 'ok' | 'catchup' = 'ok';
  const limits = { streamUnflushedBytesMax: 1 * MiB, streamBufferedBytesMax: 8 * MiB, messageBytesMax: 2 * MiB };

  before(async function () {
    handler = new FakePeerHandler()
      .on('StreamSegments', (_id, request, call) => {
        if (request.method === 'StreamSegments' && request.body.fromSeqno === 777) {
          call.streamChunk(segment(777, 10));
          call.streamEnd();
          call.streamChunk(segment(778, 10)); // after the end: ignored with a warning
          call.replyError({ code: StatusCode.INTERNAL, details: 'too late', trailers: {} });
          return;
        }
        for (const chunk of segmentsToSend) call.streamChunk(chunk);
        if (segmentsEnding === 'ok') {
          call.streamEnd();
        } else {
          call.replyError({
            code: StatusCode.FAILED_PRECONDITION,
            details: 'compacted past from_seqno',
            trailers: {
              [TRAILER_CATCHUP]: JSON.stringify({ firstAvailableSeq: 40, snapshotSeq: 50, term: 3, leaderRegion: 1 }),
              [TRAILER_TERM]: '3',
            },
          });
        }
      })
      .on('FetchSnapshot', (_id, _request, call) => call.serveSnapshot(header(source.count > 0), source.chunks()))
      .on('Heartbeat', (_id, _request, call) =>
        call.reply({ method: 'Heartbeat', body: pb.HeartbeatResponse.fromPartial({ acknowledged: true }) }),
      );
    ({ server, address } = await startServer(handler, limits));
  });

  after(async function () {
    await server.close();
  });

  it('StreamSegments: delivers every chunk in order, then OK', async function () {
    segmentsToSend = Array.from({ length: 20 }, (_, i) => segment(i + 1, 10 * KiB));
    segmentsEnding = 'ok';
    const client = rawClient(address);
    const { messages, status } = await streamOutcome(rawStream(client, 'StreamSegments', streamRequest(1)));
    client.close();
    assert.equal(status.code, grpc.status.OK);
    assert.deepEqual(
      messages.map((m) => pb.ShipSegmentRequest.decode(m).id?.seqno),
      segmentsToSend.map((s) => s.id?.seqno),
    );
  });

  it('StreamSegments: chunks first, then FAILED_PRECONDITION with the x-svc-catchup and x-svc-term trailers', async function () {
    segmentsToSend = [segment(41, 100), segment(42, 100)];
    segmentsEnding = 'catchup';
    const client = rawClient(address);
    const { messages, status } = await streamOutcome(rawStream(client, 'StreamSegments', streamRequest(1)));
    client.close();
    assert.equal(messages.length, 2);
    assert.equal(status.code, grpc.status.FAILED_PRECONDITION);
    assert.equal(status.details, 'compacted past from_seqno');
    assert.deepEqual(JSON.parse(String(status.metadata.get(TRAILER_CATCHUP)[0])), {
      firstAvailableSeq: 40,
      snapshotSeq: 50,
      term: 3,
      leaderRegion: 1,
    });
    assert.equal(status.metadata.get(TRAILER_TERM)[0], '3');
  });

  it('StreamSegments: a burst a slow reader cannot take ends RESOURCE_EXHAUSTED, buffering no more than streamBufferedBytesMax', async function () {
    segmentsToSend = Array.from({ length: 24 }, (_, i) => segment(i + 1, 1 * MiB)); // 24 MiB against an 8 MiB bound
    segmentsEnding = 'ok';
    const client = rawClient(address);
    const stream = rawStream(client, 'StreamSegments', streamRequest(1));
    stream.pause();
    const outcome = streamOutcome(stream);
    await waitFor(
      () =>
        handler.closed.size > 0 && [...handler.closed.values()].some((e) => e.code === StatusCode.RESOURCE_EXHAUSTED),
      'the server to give up on the burst',
    );
    assert.ok(server.stats().bufferedBytes <= limits.streamBufferedBytesMax);
    stream.resume();
    const { messages, status } = await outcome;
    client.close();
    assert.equal(status.code, grpc.status.RESOURCE_EXHAUSTED);
    assert.match(status.details, /reader too slow/);
    assert.ok(
      messages.length >= 1 && messages.length <= 8,
      `the reader got the ${messages.length} chunks that fit, in order`,
    );
    messages.forEach((m, i) => assert.equal(pb.ShipSegmentRequest.decode(m).id?.seqno, i + 1));
  });

  it('StreamSegments: effects after the end are ignored, and the end stands', async function () {
    const client = rawClient(address);
    const { messages, status } = await streamOutcome(rawStream(client, 'StreamSegments', streamRequest(777)));
    client.close();
    assert.equal(status.code, grpc.status.OK);
    assert.deepEqual(
      messages.map((m) => pb.ShipSegmentRequest.decode(m).id?.seqno),
      [777],
    );
  });

  it('FetchSnapshot: needed=false sends the header alone and never reads the source', async function () {
    source = new SnapshotSource(0, 0);
    const client = rawClient(address);
    const { messages, status } = await streamOutcome(rawStream(client, 'FetchSnapshot', snapshotRequest()));
    client.close();
    assert.equal(status.code, grpc.status.OK);
    assert.equal(messages.length, 1);
    assert.equal(pb.SnapshotChunk.decode(messages[0]!).chunk?.$case, 'header');
    assert.equal(source.pulled, 0);
  });

  it("FetchSnapshot: a slow reader holds the server to a bounded buffer and the source to the reader's pace", async function () {
    const chunkBytes = 256 * KiB;
    source = new SnapshotSource(256, chunkBytes); // 64 MiB in all
    const client = rawClient(address);
    const stream = rawStream(client, 'FetchSnapshot', snapshotRequest());
    let received = 0;
    let bufferedMax = 0;
    let aheadMax = 0;
    let status: grpc.StatusObject | null = null;
    stream.on('status', (s: grpc.StatusObject) => {
      status = s;
    });
    stream.on('error', () => {});
    // The reader takes one message per timer turn: far slower than the server could write.
    for await (const message of stream as AsyncIterable<Buffer>) {
      const chunk = pb.SnapshotChunk.decode(message);
      if (chunk.chunk?.$case === 'file') {
        assert.equal(chunk.chunk.value.offset, received * chunkBytes, 'file chunks arrive in order');
        received += 1;
      }
      bufferedMax = Math.max(bufferedMax, server.stats().bufferedBytes);
      aheadMax = Math.max(aheadMax, (source.pulled - received) * chunkBytes);
      await new Promise((resolve) => setTimeout(resolve, 1));
    }
    client.close();
    await waitFor(() => status !== null, 'the status');
    assert.equal(status!.code, grpc.status.OK);
    assert.equal(received, 256);
    assert.ok(source.finishedNormally);
    assert.ok(bufferedMax <= limits.streamUnflushedBytesMax + chunkBytes, `server buffered up to ${bufferedMax} bytes`);
    assert.ok(aheadMax <= 16 * MiB, `the source ran ${aheadMax} bytes ahead of a reader of a 64 MiB snapshot`);
  });

  it('FetchSnapshot: a reader that disconnects mid-stream frees the call and closes the source', async function () {
    source = new SnapshotSource(256, 256 * KiB);
    const before = handler.requests.length;
    const client = rawClient(address);
    const stream = rawStream(client, 'FetchSnapshot', snapshotRequest());
    stream.on('error', () => {});
    let received = 0;
    await new Promise<void>((resolve) => {
      stream.on('data', () => {
        received += 1;
        if (received === 5) {
          client.close(); // closing the channel does not end the call; cancelling does
          stream.cancel();
          resolve();
        }
      });
    });
    await waitFor(
      () => handler.requests.length > before && server.stats().activeCallCount === 0,
      'the call to be freed',
    );
    await waitFor(() => source.closedEarly, 'the snapshot source to be closed');
    const callId = handler.requests.at(-1)!.callId;
    assert.equal(handler.closed.get(callId)?.code, StatusCode.CANCELLED);
    assert.ok(source.pulled < 256, `the server stopped reading after ${source.pulled} chunks`);
    const sink = handler.sinks.get(callId)!;
    assert.equal(sink.closed, true);
    sink.streamEnd(); // a late effect for a closed call is dropped quietly
    sink.replyError({ code: StatusCode.INTERNAL, details: 'late', trailers: {} });
  });

  it('StreamSegments: a reader that disconnects mid-stream frees the call; later chunks are dropped', async function () {
    segmentsToSend = Array.from({ length: 6 }, (_, i) => segment(i + 1, 1 * MiB));
    segmentsEnding = 'ok';
    const client = rawClient(address);
    const stream = rawStream(client, 'StreamSegments', streamRequest(1));
    stream.on('error', () => {});
    await new Promise<void>((resolve) => stream.once('data', () => resolve()));
    stream.cancel();
    client.close();
    await waitFor(
      () => server.stats().activeCallCount === 0 && server.stats().bufferedBytes === 0,
      'the call to be freed',
    );
    const callId = handler.requests.at(-1)!.callId;
    assert.equal(handler.closed.get(callId)?.code, StatusCode.CANCELLED);
    handler.sinks.get(callId)!.streamChunk(segment(99, 10));
    assert.equal(server.stats().bufferedBytes, 0);
  });

  it('still serves after all of the above', async function () {
    const client = rawClient(address);
    const ok = await new Promise<grpc.ServiceError | null>((resolve) => {
      client.makeUnaryRequest(
        '/svc.replication.v1.WalShipping/Heartbeat',
        (b: Buffer) => b,
        (b: Buffer) => b,
        Buffer.alloc(0),
        new grpc.Metadata(),
        {},
        (err) => resolve(err),
      );
    });
    client.close();
    assert.equal(ok, null);
  });
});
