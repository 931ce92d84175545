// ReportApplied on an open call (transports/grpc/report-stream.ts, over open-call-carrier.ts), the mirror of
// heartbeat-stream.test.ts: each report's outcome is the one the unary ReportApplied delivers for the same
// answer (response, status code, details, x-svc-* trailers), every report to a leader shares one call, a report
// the unary call would refuse as bad input is refused per request (the call lives on), more open than the
// server's limit are refused per request, an unanswered one fails at the unary deadline and the next opens a
// new call, and a leader that does not serve the rpc gets its reports as unary calls again.
import assert from 'node:assert/strict';
import * as grpc from '@grpc/grpc-js';
import { CLOSED_HERE_DETAILS_PREFIX, StatusCode, TRAILER_TERM, type RpcRequest } from '../../engine/rpc.js';
import * as pb from '../../proto/gen/svc/replication/v1/replication.js';
import { PeerStreamsService, ReportStreamRequest, ReportStreamResponse } from '../../proto/gen/svc/peer/v1/peer.js';
import { PeerPool, type TransportInput } from '../../transports/grpc/client.js';
import {
  REPORT_STREAM_CALL_ID_BASE,
  ReportStreamServer,
  ReportStreams,
  reportStreamDefinition,
} from '../../transports/grpc/report-stream.js';
import { heartbeatStreamDefinition, HeartbeatStreamServer } from '../../transports/grpc/heartbeat-stream.js';
import { resolveGrpcLimits } from '../../transports/grpc/limits.js';
import { encodeRequest, identity } from '../../transports/grpc/methods.js';
import { PeerServer } from '../../transports/grpc/server.js';
import { insecureClientCredentials, insecureServerCredentials } from '../../transports/grpc/tls.js';
import { FakePeerHandler, outcomes, startServer, waitFor } from './helpers.js';

type Report = Extract<RpcRequest, { method: 'ReportApplied' }>;
const report = (reporterTerm: number, appliedSeqno = 10): Report => ({
  method: 'ReportApplied',
  body: pb.AppliedReport.fromPartial({ reporterShard: 2, sourceShard: 1, appliedSeqno, reporterTerm, capabilities: 1 }),
});
const DEADLINE_MS = 400;
const NEVER_ANSWERED_TERM = 99;
const OPEN_REQUEST_COUNT_MAX = 4;

describe('transports/grpc report stream', function () {
  this.timeout(60_000);
  let server: PeerServer;
  let address: string;
  let handler: FakePeerHandler;
  let streamServer: ReportStreamServer;
  let heartbeatServer: HeartbeatStreamServer;
  const limits = resolveGrpcLimits({ unaryDeadlineMs: DEADLINE_MS });

  before(async function () {
    handler = new FakePeerHandler().on('ReportApplied', (_id, request, call) => {
      if (request.method !== 'ReportApplied') throw new Error('not a report');
      if (request.body.reporterTerm === NEVER_ANSWERED_TERM) return; // the caller's deadline ends it
      if (request.body.reporterTerm < 5)
        call.replyError({
          code: StatusCode.FAILED_PRECONDITION,
          details: 'stale term, 100%',
          trailers: { [TRAILER_TERM]: '5' },
        });
      else call.reply({ method: 'ReportApplied', body: { acknowledged: request.body.appliedSeqno % 2 === 0 } });
    });
    streamServer = new ReportStreamServer({ handler, limits, openRequestCountMax: OPEN_REQUEST_COUNT_MAX });
    heartbeatServer = new HeartbeatStreamServer({ handler, limits, openRequestCountMax: OPEN_REQUEST_COUNT_MAX });
    // Both rpcs of the one service, as a node serves them.
    server = await PeerServer.listen('127.0.0.1:0', {
      handler,
      credentials: insecureServerCredentials(),
      limits,
      services: [
        {
          name: 'svc.peer.v1.PeerStreams',
          definition: { ...heartbeatStreamDefinition(), ...reportStreamDefinition() },
          implementation: { ...heartbeatServer.implementation(), ...streamServer.implementation() },
        },
      ],
    });
    address = `127.0.0.1:${server.port}`;
  });

  after(async function () {
    streamServer?.endAll('test over');
    heartbeatServer?.endAll('test over');
    await server?.close();
  });

  function streams(deliver: (input: TransportInput) => void, fallback: (id: number, to: string, r: Report) => void) {
    return new ReportStreams({
      credentials: insecureClientCredentials(),
      channelOptions: {},
      limits,
      deliver,
      fallback,
    });
  }

  /** rawCall opens a ReportStream call by hand, to send what ReportStreams never would. */
  function rawCall(client: grpc.Client) {
    const call = client.makeBidiStreamRequest<Buffer, Buffer>(
      PeerStreamsService.reportStream.path,
      identity,
      identity,
      new grpc.Metadata(),
    );
    const answers: ReportStreamResponse[] = [];
    call.on('data', (b: Buffer) => answers.push(ReportStreamResponse.decode(b)));
    const ended = new Promise<grpc.ServiceError>((resolve) => call.on('error', resolve));
    const write = (requestId: number, bytes: Uint8Array) =>
      call.write(Buffer.from(ReportStreamRequest.encode({ requestId, report: bytes }).finish()));
    return { call, answers, ended, write };
  }

  it('delivers what the unary call delivers, every report on one call, each served as a ReportApplied call', async function () {
    const streamed = outcomes();
    const unary = outcomes();
    const fallbacks: number[] = [];
    const s = streams(streamed.deliver, (id) => fallbacks.push(id));
    const pool = new PeerPool({ credentials: insecureClientCredentials(), deliver: unary.deliver, limits });
    try {
      for (const [id, request] of [
        [1, report(7, 10)],
        [2, report(3)],
        [3, report(8, 11)],
      ] as const) {
        s.send(id, address, request);
        pool.send(id, address, request);
        assert.deepEqual(await streamed.of(id), await unary.of(id));
      }
      const acked = await streamed.of(1);
      assert.ok(acked.type === 'response' && acked.response.method === 'ReportApplied');
      assert.equal(acked.response.body.acknowledged, true);
      const refused = await streamed.of(2);
      assert.ok(refused.type === 'callFailed');
      assert.equal(refused.status.details, 'stale term, 100%');
      assert.deepEqual(refused.status.trailers, { [TRAILER_TERM]: '5' });
      assert.equal(s.callsOpened, 1, 'the three reports shared one call');
      assert.equal(s.streamed, 3);
      assert.deepEqual(fallbacks, []);
      // The handler saw each as a ReportApplied call of its own id, in the reports' range, and each closed.
      const streamedCalls = handler.requests.filter((r) => r.callId >= REPORT_STREAM_CALL_ID_BASE);
      assert.equal(streamedCalls.length, 3);
      for (const r of streamedCalls) {
        assert.equal(r.request.method, 'ReportApplied');
        assert.ok(handler.closed.has(r.callId), `call ${r.callId} closed`);
      }
    } finally {
      s.close();
      pool.close();
    }
  });

  it('refuses a report the unary call would refuse as bad input, per request, and the call lives on', async function () {
    const client = new grpc.Client(address, insecureClientCredentials());
    try {
      const raw = rawCall(client);
      raw.write(1, Buffer.from([0xff, 0xff, 0xff])); // a well-framed message whose AppliedReport does not decode
      raw.write(2, encodeRequest(report(7, 12)));
      await waitFor(() => raw.answers.length === 2, 'both answers');
      const bad = raw.answers.find((a) => a.requestId === 1)!;
      assert.equal(bad.statusCode, grpc.status.INVALID_ARGUMENT);
      assert.match(bad.details, /malformed ReportApplied request/);
      const good = raw.answers.find((a) => a.requestId === 2)!;
      assert.equal(good.statusCode, grpc.status.OK);
      assert.deepEqual(pb.AppliedReportAck.decode(good.ack), { acknowledged: true });
      raw.call.cancel();
    } finally {
      client.close();
    }
  });

  it('refuses reports over the open-request limit per request', async function () {
    const client = new grpc.Client(address, insecureClientCredentials());
    try {
      const raw = rawCall(client);
      for (let id = 1; id <= OPEN_REQUEST_COUNT_MAX + 1; id++)
        raw.write(id, encodeRequest(report(NEVER_ANSWERED_TERM)));
      await waitFor(() => raw.answers.length === 1, 'the answer to the one over the limit');
      assert.equal(raw.answers[0]!.requestId, OPEN_REQUEST_COUNT_MAX + 1);
      assert.equal(raw.answers[0]!.statusCode, grpc.status.RESOURCE_EXHAUSTED);
      assert.match(raw.answers[0]!.details, /at its limit of 4/);
      raw.call.cancel();
    } finally {
      client.close();
    }
  });

  it('ends a malformed message’s call with INVALID_ARGUMENT', async function () {
    const client = new grpc.Client(address, insecureClientCredentials());
    try {
      const raw = rawCall(client);
      raw.write(1, encodeRequest(report(7)));
      await waitFor(() => raw.answers.length === 1, 'the answer to a good message');
      raw.call.write(Buffer.from([0xff, 0xff, 0xff]));
      const err = await raw.ended;
      assert.equal(err.code, grpc.status.INVALID_ARGUMENT);
      assert.match(err.details, /malformed ReportStream message/);
    } finally {
      client.close();
    }
  });

  it('fails an unanswered report at the unary deadline, and the next report opens a new call', async function () {
    const streamed = outcomes();
    const s = streams(streamed.deliver, () => assert.fail('no fallback'));
    try {
      s.send(21, address, report(NEVER_ANSWERED_TERM));
      const late = await streamed.of(21);
      assert.ok(late.type === 'callFailed' && late.status.code === StatusCode.DEADLINE_EXCEEDED, JSON.stringify(late));
      assert.match(late.status.details, /ReportApplied not answered within 400 ms/);
      s.send(22, address, report(7));
      assert.equal((await streamed.of(22)).type, 'response');
      assert.equal(s.callsOpened, 2);
    } finally {
      s.close();
    }
  });

  it('ends a call at once when its address is not retained (a new leader), failing its open report UNAVAILABLE', async function () {
    const streamed = outcomes();
    const s = streams(streamed.deliver, () => assert.fail('no fallback'));
    try {
      s.send(41, address, report(7));
      assert.equal((await streamed.of(41)).type, 'response');
      s.retain(new Set([address]), 'still the leader');
      assert.deepEqual(s.openTo, [address], 'a retained address keeps its call');
      s.send(42, address, report(NEVER_ANSWERED_TERM));
      await waitFor(() => streamServer.openCallCount === 1, 'the call open at the server');
      s.retain(new Set(['127.0.0.1:1']), "no longer this node's leader");
      const failed = await streamed.of(42);
      assert.ok(failed.type === 'callFailed' && failed.status.code === StatusCode.UNAVAILABLE, JSON.stringify(failed));
      assert.equal(failed.status.details, `${CLOSED_HERE_DETAILS_PREFIX}no longer this node's leader`);
      assert.deepEqual(s.openTo, []);
      await waitFor(() => streamServer.openCallCount === 0, 'the server saw the call end');
      s.send(43, address, report(7));
      assert.equal((await streamed.of(43)).type, 'response', 'a later report opens a new call');
      assert.equal(s.callsOpened, 2);
    } finally {
      s.close();
    }
  });

  it('sends reports as unary calls to a leader that does not serve the rpc', async function () {
    const plain = new FakePeerHandler().on('ReportApplied', (_id, _request, call) =>
      call.reply({ method: 'ReportApplied', body: { acknowledged: true } }),
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
      s.send(31, olderAddress, report(7));
      assert.equal((await delivered.of(31)).type, 'response');
      s.send(32, olderAddress, report(7));
      assert.equal((await delivered.of(32)).type, 'response');
      assert.deepEqual(fallbacks, [31, 32], 'the first after UNIMPLEMENTED, the next at once');
      assert.equal(s.callsOpened, 1);
      assert.equal(plain.requests.filter((r) => r.request.method === 'ReportApplied').length, 2);
    } finally {
      s.close();
      pool.close();
      await older.close();
    }
  });
});
