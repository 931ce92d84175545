// Lean connections (transports/grpc/lean-connections.ts): a client that marks its first SETTINGS frame has its
// unary calls served on transports/h2's framing, on the same port where grpc-js serves everyone else. The
// answers themselves are compared with grpc-js's, call by call, in lean-serve.test.ts (every case there runs on
// a marked connection too); here: how a connection is sorted, that both kinds share the port, that a client who
// sends its first bytes slowly, oddly or not at all is served by grpc-js as before, and the close.
import assert from 'node:assert/strict';
import * as http2 from 'node:http2';
import * as net from 'node:net';
import { Duplex } from 'node:stream';
import fc from 'fast-check';
import * as grpc from '@grpc/grpc-js';
import {
  firstSettingsVerdict,
  LEAN_CONNECTION_SETTING,
  LEAN_CONNECTION_SETTINGS,
  serveLeanConnections,
} from '../../transports/grpc/lean-connections.js';
import { methodPath } from '../../transports/grpc/methods.js';
import { LeanUnaryClient, type LeanOutcome } from '../../transports/grpc/lean-unary.js';
import { resolveGrpcLimits } from '../../transports/grpc/limits.js';
import { peerHttp2Dial, peerSocketDial } from '../../transports/grpc/tls.js';
import { H2UnaryClient } from '../../transports/h2/unary-client.js';
import type { CallSink } from '../../transports/grpc/call-sink.js';
import * as pb from '../../proto/gen/svc/replication/v1/replication.js';
import { FakePeerHandler, rawClient, rawStream, startServer, streamOutcome } from './helpers.js';
import type { PeerServer } from '../../transports/grpc/server.js';
import { CONNECTION_PREFACE, frame, FrameType, Setting, settingsPayload } from '../../transports/h2/frames.js';
import { RawClient } from './h2/raw-client.js';

const PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1');

/** settingsFrame is a SETTINGS frame holding `settings` ([id, value] pairs), with `flags`. */
function settingsFrame(settings: Array<[number, number]>, flags = 0): Buffer {
  const frame = Buffer.alloc(9 + 6 * settings.length);
  frame.writeUIntBE(6 * settings.length, 0, 3);
  frame[3] = 4;
  frame[4] = flags;
  settings.forEach(([id, value], i) => {
    frame.writeUInt16BE(id, 9 + 6 * i);
    frame.writeUInt32BE(value, 11 + 6 * i);
  });
  return frame;
}

const heartbeat = (term: number): Buffer =>
  Buffer.from(pb.HeartbeatRequest.encode(pb.HeartbeatRequest.fromPartial({ term, regionId: 2 })).finish());

function call(client: LeanUnaryClient, address: string, term: number): Promise<LeanOutcome> {
  return new Promise((resolve) => client.call(address, methodPath('Heartbeat'), heartbeat(term), 5_000, resolve));
}

describe('transports/grpc lean connections', function () {
  this.timeout(60_000);

  describe('firstSettingsVerdict', function () {
    const marked = Buffer.concat([
      PREFACE,
      settingsFrame([
        [3, 100],
        [LEAN_CONNECTION_SETTING, 1],
      ]),
    ]);

    it('reads the mark from the first SETTINGS frame, and waits for the whole frame', function () {
      assert.equal(firstSettingsVerdict(marked), 'lean');
      for (let cut = 0; cut < marked.length; cut++)
        assert.equal(firstSettingsVerdict(marked.subarray(0, cut)), 'more', `${cut} bytes`);
    });

    it('gives anything else to grpc-js: no mark, mark 0, an ACK, another frame, a long frame, not HTTP/2', function () {
      const cases: Array<[string, Buffer]> = [
        ['no mark', Buffer.concat([PREFACE, settingsFrame([[3, 100]])])],
        ['the mark set to 0', Buffer.concat([PREFACE, settingsFrame([[LEAN_CONNECTION_SETTING, 0]])])],
        ['a SETTINGS ACK', Buffer.concat([PREFACE, settingsFrame([[LEAN_CONNECTION_SETTING, 1]], 1)])],
        ['a PING first', Buffer.concat([PREFACE, Buffer.from([0, 0, 8, 6, 0, 0, 0, 0, 0]), Buffer.alloc(8)])],
        [
          'a SETTINGS frame of 33 parameters',
          Buffer.concat([
            PREFACE,
            settingsFrame([
              ...Array.from({ length: 32 }, (): [number, number] => [3, 1]),
              [LEAN_CONNECTION_SETTING, 1],
            ]),
          ]),
        ],
        ['HTTP/1.1', Buffer.from('GET / HTTP/1.1\r\nHost: x\r\n\r\n')],
        ['a TLS ClientHello on a plaintext port', Buffer.from([0x16, 0x03, 0x01, 0x02, 0x00, 0x01])],
      ];
      for (const [what, bytes] of cases) assert.equal(firstSettingsVerdict(bytes), 'grpc-js', what);
    });

    it('never throws, and decides no later than the first SETTINGS frame (property)', function () {
      fc.assert(
        fc.property(fc.uint8Array({ maxLength: 300 }), fc.boolean(), (tail, withPreface) => {
          const bytes = withPreface ? Buffer.concat([PREFACE, tail]) : Buffer.from(tail);
          const verdict = firstSettingsVerdict(bytes);
          if (bytes.length >= PREFACE.length + 9 + 6 * 32) assert.notEqual(verdict, 'more');
        }),
      );
    });
  });

  describe('on a PeerServer (plaintext)', function () {
    let server: PeerServer;
    let address: string;
    const handler = new FakePeerHandler()
      .on('Heartbeat', (_id, request, sink: CallSink) =>
        sink.reply({
          method: 'Heartbeat',
          body: pb.HeartbeatResponse.fromPartial({
            acknowledged: true,
            term: (request.body as pb.HeartbeatRequest).term,
          }),
        }),
      )
      .on('StreamSegments', (_id, _request, sink: CallSink) => sink.streamEnd());
    const clients: LeanUnaryClient[] = [];
    const leanClient = (): LeanUnaryClient => {
      const client = new LeanUnaryClient({
        dial: peerHttp2Dial({ mode: 'insecure' }),
        headers: {},
        limits: resolveGrpcLimits(),
      });
      clients.push(client);
      return client;
    };

    before(async function () {
      ({ server, address } = await startServer(handler));
    });

    after(async function () {
      for (const client of clients) client.close();
      await server.close();
    });

    it("attaches to grpc-js's http2 servers (fails loudly when grpc-js's internals change)", async function () {
      const plain = new grpc.Server();
      await new Promise<number>((resolve, reject) =>
        plain.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, port) =>
          err ? reject(err) : resolve(port),
        ),
      );
      try {
        const attached = serveLeanConnections(plain, new Map(), {
          messageBytesMax: 1024,
          concurrentStreamCountMax: 8,
          keepaliveTimeMs: 60_000,
          keepaliveTimeoutMs: 20_000,
        });
        assert.equal(typeof attached, 'object', `serveLeanConnections could not attach: ${String(attached)}`);
      } finally {
        plain.forceShutdown();
      }
      const unbound = serveLeanConnections(new grpc.Server(), new Map(), {
        messageBytesMax: 1,
        concurrentStreamCountMax: 1,
        keepaliveTimeMs: 1,
        keepaliveTimeoutMs: 1,
      });
      assert.equal(typeof unbound, 'string', 'a server that bound nothing: a reason, not a throw');
    });

    it("serves a marked client's unary calls lean and a grpc-js client's calls and streams on the same port", async function () {
      const before = server.stats();
      const client = leanClient();
      for (let term = 1; term <= 5; term++) {
        const outcome = await call(client, address, term);
        assert.ok(outcome.ok, JSON.stringify(outcome));
        assert.equal(pb.HeartbeatResponse.decode(outcome.message).term, term);
      }
      const after = server.stats();
      assert.equal(after.leanConnectionCount - before.leanConnectionCount, 1, 'one connection, served lean');
      assert.equal(after.leanCallCount - before.leanCallCount, 5);
      const grpcJs = rawClient(address);
      try {
        const unary = await new Promise<grpc.ServiceError | null>((resolve) =>
          grpcJs.makeUnaryRequest<Buffer, Buffer>(
            methodPath('Heartbeat'),
            (b) => b,
            (b) => b,
            heartbeat(9),
            (error) => resolve(error),
          ),
        );
        assert.equal(unary, null);
        const stream = await streamOutcome(
          rawStream(
            grpcJs,
            'StreamSegments',
            Buffer.from(pb.StreamRequest.encode({ shardId: 2, fromSeqno: 1, term: 1 }).finish()),
          ),
        );
        assert.equal(stream.status.code, grpc.status.OK, 'the stream through grpc-js');
      } finally {
        grpcJs.close();
      }
      assert.equal(
        server.stats().leanConnectionCount,
        after.leanConnectionCount,
        'grpc-js clients are not sorted lean',
      );
    });

    it("serves transports/h2's own client (H2UnaryClient) on a lean connection too", async function () {
      const before = server.stats();
      const client = new H2UnaryClient({
        dial: peerSocketDial({ mode: 'insecure' }),
        headers: {},
        limits: resolveGrpcLimits(),
      });
      try {
        for (let term = 1; term <= 3; term++) {
          const outcome = await new Promise<LeanOutcome>((resolve) =>
            client.call(address, methodPath('Heartbeat'), heartbeat(term), 5_000, resolve),
          );
          assert.ok(outcome.ok, JSON.stringify(outcome));
          assert.equal(pb.HeartbeatResponse.decode(outcome.message).term, term);
        }
      } finally {
        client.close();
      }
      const after = server.stats();
      assert.equal(after.leanConnectionCount - before.leanConnectionCount, 1, 'its one connection, served lean');
      assert.equal(after.leanCallCount - before.leanCallCount, 3);
    });

    it('sorts a client that sends its first bytes one at a time, and one that waits before its preface', async function () {
      for (const pauseMs of [0, 50]) {
        const before = server.stats().leanConnectionCount;
        const outcome = await new Promise<string>((resolve, reject) => {
          const session = http2.connect(`http://${address}`, {
            settings: LEAN_CONNECTION_SETTINGS,
            createConnection: () => dribbling(address, pauseMs),
          });
          session.on('error', reject);
          const stream = session.request({
            ':method': 'POST',
            ':path': methodPath('Heartbeat'),
            'content-type': 'application/grpc',
            te: 'trailers',
          });
          stream.on('trailers', (trailers) => {
            session.close();
            resolve(String(trailers['grpc-status']));
          });
          stream.on('error', reject);
          const body = heartbeat(3);
          const framed = Buffer.alloc(5 + body.length);
          framed.writeUInt32BE(body.length, 1);
          body.copy(framed, 5);
          stream.end(framed);
        });
        assert.equal(outcome, '0');
        assert.equal(server.stats().leanConnectionCount - before, 1, `served lean after a ${pauseMs} ms pause`);
      }
    });

    it("pings a lean connection at the node's keepaliveTimeMs and drops it when the ping goes unanswered", async function () {
      const own = await startServer(handler, {
        keepaliveTimeMs: 100,
        keepaliveTimeoutMs: 150,
        minPingIntervalWithoutDataMs: 100,
      });
      try {
        const before = own.server.stats().leanConnectionCount;
        const client = await RawClient.connect(own.server.port, false);
        client.write(
          CONNECTION_PREFACE,
          frame(FrameType.SETTINGS, 0, 0, settingsPayload([[Setting.LEAN_CONNECTION, 1]])),
        );
        const ping = await client.until((f) => f.type === FrameType.PING && f.flags === 0);
        assert.equal(ping.payload.length, 8);
        assert.equal(own.server.stats().leanConnectionCount - before, 1, 'served on the lean path');
        await client.closedByServer(3_000);
      } finally {
        await own.server.close();
      }
    });

    it('closes its lean connections with GOAWAY when the server closes', async function () {
      const own = await startServer(handler);
      const client = leanClient();
      const outcome = await call(client, own.address, 1);
      assert.ok(outcome.ok);
      await own.server.close(2_000);
      const after = await call(client, own.address, 2);
      assert.equal(after.ok, false, 'the closed server takes no call');
    });
  });

  it('gives a silent client to grpc-js after the preface timeout, which then serves it as ever', async function () {
    const server = new grpc.Server();
    server.addService(
      {
        echo: {
          path: '/t.T/Echo',
          requestStream: false,
          responseStream: false,
          requestSerialize: (b: Buffer) => b,
          requestDeserialize: (b: Buffer) => b,
          responseSerialize: (b: Buffer) => b,
          responseDeserialize: (b: Buffer) => b,
        },
      },
      {
        echo: (c: grpc.ServerUnaryCall<Buffer, Buffer>, respond: grpc.sendUnaryData<Buffer>) =>
          respond(null, c.request),
      },
    );
    const port = await new Promise<number>((resolve, reject) =>
      server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, p) =>
        err ? reject(err) : resolve(p),
      ),
    );
    const served = serveLeanConnections(server, new Map(), {
      messageBytesMax: 1024,
      concurrentStreamCountMax: 8,
      keepaliveTimeMs: 60_000,
      keepaliveTimeoutMs: 20_000,
      prefaceTimeoutMs: 100,
    });
    assert.ok(typeof served === 'object');
    try {
      // The client's first bytes leave 300 ms after it connects, past the 100 ms the sorting waits.
      const slow = dribbling(`127.0.0.1:${port}`, 300);
      const session = http2.connect(`http://127.0.0.1:${port}`, { createConnection: () => slow });
      session.on('error', () => undefined);
      const echoed = await new Promise<string>((resolve, reject) => {
        const stream = session.request({ ':method': 'POST', ':path': '/t.T/Echo', 'content-type': 'application/grpc' });
        const chunks: Buffer[] = [];
        stream.on('data', (chunk: Buffer) => chunks.push(chunk));
        stream.on('end', () => resolve(Buffer.concat(chunks).subarray(5).toString()));
        stream.on('error', reject);
        stream.end(Buffer.from([0, 0, 0, 0, 2, 0x68, 0x69]));
      });
      assert.equal(echoed, 'hi');
      assert.equal(served.accepted, 0);
      session.close();
    } finally {
      server.forceShutdown();
    }
  });
});

/**
 * dribbling is a connection to `address` that holds what its HTTP/2 session writes for `pauseMs`, then sends it
 * a byte per loop turn until it has caught up (pauseMs 0: at once, a byte at a time), then passes writes on: the
 * server must read the preface and the first SETTINGS frame across many reads. A Duplex rather than a socket:
 * node:http2 writes to a socket's handle directly, past any JavaScript in between.
 */
function dribbling(address: string, pauseMs: number): Duplex {
  const [host, port] = address.split(':') as [string, string];
  const socket = net.connect(Number(port), host);
  socket.setNoDelay(true);
  let mode: 'hold' | 'drip' | 'pass' = 'hold';
  let pending = Buffer.alloc(0);
  const duplex = new Duplex({
    read() {
      socket.resume();
    },
    write(chunk: Buffer, _encoding, done) {
      if (mode === 'pass') return void socket.write(chunk, done);
      pending = Buffer.concat([pending, chunk]);
      done();
    },
    final(done) {
      socket.end();
      done();
    },
    destroy(error, done) {
      socket.destroy();
      done(error);
    },
  });
  socket.on('data', (chunk: Buffer) => {
    if (!duplex.push(chunk)) socket.pause();
  });
  socket.on('end', () => duplex.push(null));
  socket.on('error', (error) => duplex.destroy(error));
  const drip = (): void => {
    if (pending.length === 0) return void (mode = 'pass');
    socket.write(pending.subarray(0, 1));
    pending = pending.subarray(1);
    setImmediate(drip);
  };
  setTimeout(() => {
    mode = 'drip';
    drip();
  }, pauseMs);
  return duplex;
}
