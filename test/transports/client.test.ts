// The peer pool: each send ends in exactly one outcome input (response,
// callFailed, streamEnded) with the right requestId; failures carry code,
// details and trailers; channels come back after a peer restarts; FetchSnapshot
// is an async iterable that throws RpcStatusError.
import assert from 'node:assert/strict';
import * as grpc from '@grpc/grpc-js';
import { StatusCode, TRAILER_CATCHUP, TRAILER_TERM, type RpcRequest } from '../../engine/rpc.js';
import * as pb from '../../proto/gen/svc/replication/v1/replication.js';
import { clientChannelOptions } from '../../transports/grpc/channel-options.js';
import { PeerPool, type TransportInput } from '../../transports/grpc/client.js';
import { resolveGrpcLimits } from '../../transports/grpc/limits.js';
import type { PeerServer } from '../../transports/grpc/server.js';
import { RpcStatusError } from '../../transports/grpc/status.js';
import { insecureClientCredentials } from '../../transports/grpc/tls.js';
import { FakePeerHandler, startRawServer, startServer, waitFor } from './helpers.js';

const heartbeat = (term: number): RpcRequest => ({
  method: 'Heartbeat',
  body: pb.HeartbeatRequest.fromPartial({ term, regionId: 1, replicationLag: { 2: 5 } }),
});

/** Outcomes collects what a pool delivers, by requestId. */
class Outcomes {
  readonly all: TransportInput[] = [];
  readonly deliver = (input: TransportInput): void => {
    this.all.push(input);
  };
  of(requestId: number): TransportInput[] {
    return this.all.filter((i) => i.requestId === requestId);
  }
  terminal(requestId: number): TransportInput | undefined {
    return this.of(requestId).find((i) => i.type !== 'streamChunk');
  }
  async waitTerminal(requestId: number, timeoutMs = 10_000): Promise<TransportInput> {
    await waitFor(() => this.terminal(requestId) !== undefined, `the outcome of request ${requestId}`, timeoutMs);
    return this.terminal(requestId)!;
  }
}

function failure(input: TransportInput): { code: number; details: string; trailers: Record<string, string> } {
  assert.equal(input.type, 'callFailed', `expected callFailed, got ${JSON.stringify(input)}`);
  return (input as Extract<TransportInput, { type: 'callFailed' }>).status;
}

describe('transports/grpc client: PeerPool', function () {
  this.timeout(60_000);
  let server: PeerServer;
  let address: string;
  let handler: FakePeerHandler;
  let outcomes: Outcomes;
  let pool: PeerPool;
  const limits = {
    unaryDeadlineMs: 300,
    initialReconnectBackoffMs: 50,
    maxReconnectBackoffMs: 200,
    snapshotIdleTimeoutMs: 300,
  };

  before(async function () {
    handler = new FakePeerHandler()
      .on('Heartbeat', (_id, request, call) => {
        if (request.method !== 'Heartbeat') throw new Error('not a heartbeat');
        if (request.body.term < 5) {
          call.replyError({
            code: StatusCode.FAILED_PRECONDITION,
            details: 'stale term',
            trailers: { [TRAILER_TERM]: '5' },
          });
        } else {
          call.reply({
            method: 'Heartbeat',
            body: { acknowledged: true, term: request.body.term, accepted: true, capabilities: 1, removed: false },
          });
        }
      })
      .on('RequestVote', () => {
        /* never answers: the client's deadline ends it */
      })
      .on('StreamSegments', (_id, request, call) => {
        if (request.method !== 'StreamSegments') throw new Error('not a stream request');
        for (let seq = request.body.fromSeqno; seq < request.body.fromSeqno + 3; seq += 1) {
          call.streamChunk(pb.ShipSegmentRequest.fromPartial({ id: { seqno: seq }, term: 3 }));
        }
        if (request.body.fromSeqno >= 10) {
          call.streamEnd();
        } else {
          call.replyError({
            code: StatusCode.FAILED_PRECONDITION,
            details: 'compacted',
            trailers: {
              [TRAILER_CATCHUP]: '{"firstAvailableSeq":10,"snapshotSeq":9,"term":3,"leaderRegion":1}',
              [TRAILER_TERM]: '3',
            },
          });
        }
      })
      .on('FetchSnapshot', (_id, request, call) => {
        if (request.method !== 'FetchSnapshot') throw new Error('not a snapshot request');
        if (request.body.term === 5) {
          const endless = async function* (): AsyncGenerator<pb.SnapshotFileChunk> {
            for (let i = 0; i < 100_000; i += 1)
              yield { path: 'f', offset: i * 65_536, data: Buffer.alloc(65_536), last: false };
          };
          call.serveSnapshot({ needed: true, snapshotSeq: 9, term: 5, leaderRegion: 1, files: [] }, endless());
          return;
        }
        if (request.body.fromSeqno > 9) {
          call.serveSnapshot(
            { needed: false, snapshotSeq: 0, term: 3, leaderRegion: 1, files: [] },
            (async function* () {})(),
          );
          return;
        }
        if (request.body.term !== 3) {
          call.replyError({
            code: StatusCode.FAILED_PRECONDITION,
            details: 'term mismatch',
            trailers: { [TRAILER_TERM]: '3' },
          });
          return;
        }
        const files = async function* (): AsyncGenerator<pb.SnapshotFileChunk> {
          for (let i = 0; i < 4; i += 1) yield { path: 'f', offset: i * 10, data: Buffer.alloc(10, i), last: i === 3 };
        };
        call.serveSnapshot(
          {
            needed: true,
            snapshotSeq: 9,
            term: 3,
            leaderRegion: 1,
            files: [{ path: 'f', size: 40, blake3: Buffer.alloc(32) }],
          },
          files(),
        );
      });
    ({ server, address } = await startServer(handler));
  });

  beforeEach(function () {
    outcomes = new Outcomes();
    pool = new PeerPool({ credentials: insecureClientCredentials(), deliver: outcomes.deliver, limits });
  });

  afterEach(function () {
    pool.close();
  });

  after(async function () {
    await server.close();
  });

  it('configures reconnect back-off, keepalive, message limits and the receive window on its channels', function () {
    const options = clientChannelOptions(resolveGrpcLimits(limits));
    assert.equal(options['grpc.initial_reconnect_backoff_ms'], 50);
    assert.equal(options['grpc.max_reconnect_backoff_ms'], 200);
    assert.equal(options['grpc-node.flow_control_window'], 16 * 1024 * 1024);
    assert.equal(options['grpc.keepalive_time_ms'], 10_000);
    assert.equal(options['grpc.keepalive_permit_without_calls'], 1);
    assert.ok(Number(options['grpc.max_receive_message_length']) >= 4 * 1024 * 1024);
  });

  it('delivers a unary answer as a response input with the requestId', async function () {
    pool.send(11, address, heartbeat(7));
    const outcome = await outcomes.waitTerminal(11);
    assert.deepEqual(outcome, {
      type: 'response',
      requestId: 11,
      response: {
        method: 'Heartbeat',
        body: { acknowledged: true, term: 7, accepted: true, capabilities: 1, removed: false },
      },
    });
    const sent = handler.requests.at(-1)!.request;
    assert.deepEqual(sent, heartbeat(7), 'the request arrives field for field');
  });

  it('delivers a refusal as callFailed with code, details and trailers', async function () {
    pool.send(12, address, heartbeat(2));
    const status = failure(await outcomes.waitTerminal(12));
    assert.deepEqual(status, {
      code: StatusCode.FAILED_PRECONDITION,
      details: 'stale term',
      trailers: { [TRAILER_TERM]: '5' },
    });
  });

  it('ends an unanswered call at its deadline with DEADLINE_EXCEEDED', async function () {
    pool.send(13, address, { method: 'RequestVote', body: pb.VoteRequest.fromPartial({ term: 1 }) });
    const status = failure(await outcomes.waitTerminal(13, 5_000));
    assert.equal(status.code, StatusCode.DEADLINE_EXCEEDED);
    await waitFor(() => server.stats().activeCallCount === 0, 'the server to free the expired call');
  });

  it('StreamSegments: streamChunks then streamEnded', async function () {
    pool.send(14, address, { method: 'StreamSegments', body: { shardId: 1, fromSeqno: 10, term: 3 } });
    await outcomes.waitTerminal(14);
    assert.deepEqual(
      outcomes.of(14).map((i) => (i.type === 'streamChunk' ? i.chunk.id?.seqno : i.type)),
      [10, 11, 12, 'streamEnded'],
    );
  });

  it('StreamSegments: the x-svc-catchup trailer arrives on FAILED_PRECONDITION, after the chunks', async function () {
    pool.send(15, address, { method: 'StreamSegments', body: { shardId: 1, fromSeqno: 1, term: 3 } });
    await outcomes.waitTerminal(15);
    const inputs = outcomes.of(15);
    assert.deepEqual(
      inputs.map((i) => i.type),
      ['streamChunk', 'streamChunk', 'streamChunk', 'callFailed'],
    );
    const status = failure(inputs[3]!);
    assert.equal(status.code, StatusCode.FAILED_PRECONDITION);
    assert.deepEqual(JSON.parse(status.trailers[TRAILER_CATCHUP]!), {
      firstAvailableSeq: 10,
      snapshotSeq: 9,
      term: 3,
      leaderRegion: 1,
    });
    assert.equal(status.trailers[TRAILER_TERM], '3');
  });

  it('reports an unreachable peer as UNAVAILABLE, and a FetchSnapshot through send as INTERNAL', async function () {
    pool.send(16, '127.0.0.1:1', heartbeat(7));
    pool.send(17, address, { method: 'FetchSnapshot', body: { shardId: 1, fromSeqno: 1, term: 3 } });
    pool.send(18, '', heartbeat(7));
    assert.equal(failure(await outcomes.waitTerminal(16)).code, StatusCode.UNAVAILABLE);
    assert.equal(failure(await outcomes.waitTerminal(17)).code, StatusCode.INTERNAL);
    assert.equal(failure(await outcomes.waitTerminal(18)).code, StatusCode.UNAVAILABLE);
  });

  it('gives every send exactly one outcome, and none twice', async function () {
    for (let id = 100; id < 140; id += 1) pool.send(id, address, id % 2 === 0 ? heartbeat(7) : heartbeat(1));
    pool.send(140, address, { method: 'StreamSegments', body: { shardId: 1, fromSeqno: 10, term: 3 } });
    await waitFor(() => pool.inflightCount === 0, 'every call to finish');
    for (let id = 100; id <= 140; id += 1) {
      assert.equal(outcomes.of(id).filter((i) => i.type !== 'streamChunk').length, 1, `request ${id}`);
    }
  });

  it('close() cancels calls in flight (callFailed CANCELLED) and refuses later sends', async function () {
    pool.send(20, address, { method: 'RequestVote', body: pb.VoteRequest.fromPartial({ term: 1 }) });
    await waitFor(
      () => handler.requests.some((r) => r.request.method === 'RequestVote' && !handler.closed.has(r.callId)),
      'the call to reach the server',
    );
    pool.close();
    assert.equal(failure(await outcomes.waitTerminal(20)).code, StatusCode.CANCELLED);
    pool.send(21, address, heartbeat(7));
    assert.equal(failure(await outcomes.waitTerminal(21)).code, StatusCode.UNAVAILABLE);
  });

  it('reconnects with back-off once a peer comes back on its address', async function () {
    const spare = await startServer(handler);
    const port = spare.server.port;
    pool.send(30, spare.address, heartbeat(7));
    assert.equal((await outcomes.waitTerminal(30)).type, 'response');
    await spare.server.close(0);
    pool.send(31, spare.address, heartbeat(7));
    assert.equal(failure(await outcomes.waitTerminal(31)).code, StatusCode.UNAVAILABLE);
    const { PeerServer } = await import('../../transports/grpc/server.js');
    const back = await PeerServer.listen(`127.0.0.1:${port}`, {
      handler,
      credentials: grpc.ServerCredentials.createInsecure(),
    });
    try {
      // Bounded: at most 100 attempts, each ending within the unary deadline.
      let requestId = 32;
      for (; requestId < 132; requestId += 1) {
        pool.send(requestId, spare.address, heartbeat(7));
        if ((await outcomes.waitTerminal(requestId)).type === 'response') break;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      assert.ok(requestId < 132, 'the channel came back');
    } finally {
      await back.close(0);
    }
  });

  describe('fetchSnapshot', function () {
    it('yields the header, then the file chunks in order', async function () {
      const chunks: pb.SnapshotChunk[] = [];
      for await (const chunk of pool.fetchSnapshot(address, { shardId: 1, fromSeqno: 1, term: 3 })) chunks.push(chunk);
      assert.deepEqual(
        chunks.map((c) => c.chunk?.$case),
        ['header', 'file', 'file', 'file', 'file'],
      );
      assert.deepEqual(
        chunks.slice(1).map((c) => (c.chunk?.$case === 'file' ? c.chunk.value.offset : -1)),
        [0, 10, 20, 30],
      );
    });

    it('throws a refusal as RpcStatusError with its trailers', async function () {
      await assert.rejects(
        async () => {
          for await (const _ of pool.fetchSnapshot(address, { shardId: 1, fromSeqno: 1, term: 2 })) {
            /* drain */
          }
        },
        (err: unknown) =>
          err instanceof RpcStatusError &&
          err.code === StatusCode.FAILED_PRECONDITION &&
          err.details === 'term mismatch' &&
          err.trailers[TRAILER_TERM] === '3',
      );
    });

    it('throws UNAVAILABLE for an unreachable peer', async function () {
      await assert.rejects(
        async () => {
          for await (const _ of pool.fetchSnapshot('127.0.0.1:1', { shardId: 1, fromSeqno: 1, term: 3 })) {
            /* drain */
          }
        },
        (err: unknown) => err instanceof RpcStatusError && err.code === StatusCode.UNAVAILABLE,
      );
    });

    it('openSnapshot resolves with the header, then files yields the file chunks', async function () {
      const { header, files } = await pool.openSnapshot(address, { shardId: 1, fromSeqno: 1, term: 3 });
      assert.equal(header.snapshotSeq, 9);
      const offsets: number[] = [];
      for await (const file of files) offsets.push(file.offset);
      assert.deepEqual(offsets, [0, 10, 20, 30]);
      const notNeeded = await pool.openSnapshot(address, { shardId: 1, fromSeqno: 10, term: 3 });
      assert.equal(notNeeded.header.needed, false);
      for await (const _ of notNeeded.files) assert.fail('no files follow needed=false');
    });

    it('an aborted signal cancels the call: the read throws CANCELLED and the server frees it', async function () {
      const controller = new AbortController();
      const { files } = await pool.openSnapshot(
        address,
        { shardId: 1, fromSeqno: 1, term: 5 },
        { signal: controller.signal },
      );
      let received = 0;
      await assert.rejects(
        async () => {
          for await (const _ of files) {
            received += 1;
            if (received === 3) controller.abort();
          }
        },
        (err: unknown) => err instanceof RpcStatusError && err.code === StatusCode.CANCELLED,
      );
      await waitFor(() => server.stats().activeCallCount === 0, 'the server call to end');
    });

    it('cancels the call when the installer stops early', async function () {
      const before = handler.requests.length;
      for await (const chunk of pool.fetchSnapshot(address, { shardId: 1, fromSeqno: 1, term: 3 })) {
        assert.equal(chunk.chunk?.$case, 'header');
        break;
      }
      await waitFor(
        () => handler.requests.length > before && server.stats().activeCallCount === 0,
        'the server call to end',
      );
    });
  });

  describe('against a peer that breaks the protocol', function () {
    let raw: { server: grpc.Server; address: string };
    let mode = '';
    before(async function () {
      const encode = (c: pb.SnapshotChunk): Buffer => Buffer.from(pb.SnapshotChunk.encode(c).finish());
      raw = await startRawServer({
        unary: (_method, respond) => respond(null, Buffer.from([0x0f, 0x01])),
        stream: (method, call) => {
          if (method === 'StreamSegments') {
            call.write(
              Buffer.from(pb.ShipSegmentRequest.encode(pb.ShipSegmentRequest.fromPartial({ term: 1 })).finish()),
            );
            call.write(Buffer.from([0x0f, 0x01]));
            call.end();
            return;
          }
          if (mode === 'file-first')
            call.write(encode({ chunk: { $case: 'file', value: pb.SnapshotFileChunk.fromPartial({ path: 'f' }) } }));
          if (mode === 'files-after-not-needed') {
            call.write(encode({ chunk: { $case: 'header', value: pb.SnapshotHeader.fromPartial({ needed: false }) } }));
            call.write(encode({ chunk: { $case: 'file', value: pb.SnapshotFileChunk.fromPartial({ path: 'f' }) } }));
          }
          if (mode === 'silent') return; // never writes, never ends
          call.end();
        },
      });
    });
    after(function () {
      raw.server.forceShutdown();
    });

    it('a malformed unary response becomes callFailed INTERNAL', async function () {
      pool.send(40, raw.address, heartbeat(7));
      const status = failure(await outcomes.waitTerminal(40));
      assert.equal(status.code, StatusCode.INTERNAL);
      assert.match(status.details, /malformed Heartbeat response/);
    });

    it('a malformed stream chunk ends the stream with callFailed INTERNAL after the good chunks', async function () {
      pool.send(41, raw.address, { method: 'StreamSegments', body: { shardId: 1, fromSeqno: 1, term: 1 } });
      await outcomes.waitTerminal(41);
      assert.deepEqual(
        outcomes.of(41).map((i) => i.type),
        ['streamChunk', 'callFailed'],
      );
      assert.match(failure(outcomes.of(41)[1]!).details, /malformed StreamSegments chunk/);
    });

    for (const [scenario, expected] of [
      ['file-first', /first message is file, not the header/],
      ['files-after-not-needed', /file chunk after a header with needed=false/],
      ['empty', /stream ended before its header/],
      ['silent', /no FetchSnapshot message for snapshotIdleTimeoutMs 300 ms/],
    ] as const) {
      it(`fetchSnapshot throws on a stream that is ${scenario}`, async function () {
        mode = scenario;
        await assert.rejects(
          async () => {
            for await (const _ of pool.fetchSnapshot(raw.address, { shardId: 1, fromSeqno: 1, term: 3 })) {
              /* drain */
            }
          },
          (err: unknown) => err instanceof RpcStatusError && expected.test(err.details),
        );
      });
    }
  });
});
