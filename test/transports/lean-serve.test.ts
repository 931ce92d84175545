// Lean unary serving (transports/grpc/lean-serve.ts) against grpc-js's server, side by side: two PeerServers
// with the same mutual TLS, peer gate, handlers and Store service, one serving unary calls on the lean path and
// one through grpc-js (leanUnary false). Every call below, well-formed, forged, oversized or broken, goes to both
// over a raw HTTP/2 connection (so the test chooses every header and byte) and must come back the same: HTTP
// status, grpc-status, grpc-message, the x-svc-* trailers, the answer's bytes; and each must be the outcome the
// rules name (so both cannot be wrong alike). The first test pins the grpc-js internals the lean path attaches
// through: it fails loudly when a grpc-js update changes them.
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import * as http2 from 'node:http2';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import * as grpc from '@grpc/grpc-js';
import { BinaryWriter } from '@bufbuild/protobuf/wire';
import { createAdminCert, createClusterCa, createNodeCert, newClusterId } from '../../cli/certs/certs.js';
import type { CallSink } from '../../transports/grpc/call-sink.js';
import { serveUnaryLean } from '../../transports/grpc/lean-serve.js';
import { LEAN_CONNECTION_SETTINGS } from '../../transports/grpc/lean-connections.js';
import { RPC_METHODS, isUnaryMethod, methodPath } from '../../transports/grpc/methods.js';
import { PeerGate, type RefusalReason } from '../../transports/grpc/peer-gate.js';
import { CLUSTER_ID_METADATA_KEY } from '../../transports/grpc/peer-identity.js';
import { PeerServer } from '../../transports/grpc/server.js';
import { serverCredentials } from '../../transports/grpc/tls.js';
import {
  STORE_METHODS,
  StoreCallError,
  storeService,
  storeServiceDefinition,
} from '../../transports/store-rpc/store-service.js';
import * as pb from '../../proto/gen/svc/replication/v1/replication.js';
import * as storePb from '../../proto/gen/svc/store/v1/store.js';
import { FakePeerHandler, waitFor } from './helpers.js';

const MESSAGE_BYTES_MAX = 64 * 1024;
const COMMAND_BYTES_MAX = 1024;
const ROSTER = new Map([
  ['n1', 1],
  ['n2', 2],
  ['n3', 3],
]);

interface Tls {
  ca: Buffer;
  cert: Buffer;
  key: Buffer;
}

/** Outcome is everything a caller can see of a unary answer (or of a connection that failed). */
interface Outcome {
  httpStatus: number | null;
  grpcStatus: string | null;
  grpcMessage: string | null;
  trailers: Record<string, string>;
  message: string;
  failure: string | null;
}

interface RawCall {
  path: string;
  body: Buffer;
  headers?: http2.OutgoingHttpHeaders;
  /** clusterId: the svc-cluster-id header (undefined: the cluster's; null: none). */
  clusterId?: string | null;
}

const frame = (message: Buffer, compressed = false): Buffer => {
  const out = Buffer.alloc(5 + message.length);
  out[0] = compressed ? 1 : 0;
  out.writeUInt32BE(message.length, 1);
  message.copy(out, 5);
  return out;
};

/** STREAM_PATHS: WalShipping's server-streaming methods (a lean connection answers them UNIMPLEMENTED). */
const STREAM_PATHS = new Set(RPC_METHODS.filter((method) => !isUnaryMethod(method)).map(methodPath));

const unimplemented = (path: string): Outcome => ({
  httpStatus: 200,
  grpcStatus: String(grpc.status.UNIMPLEMENTED),
  grpcMessage: `The server does not implement the method ${path}`,
  trailers: {},
  message: '',
  failure: null,
});

const heartbeat = (fields: Partial<pb.HeartbeatRequest>): Buffer =>
  Buffer.from(pb.HeartbeatRequest.encode(pb.HeartbeatRequest.fromPartial({ term: 4, ...fields })).finish());
const propose = (command: Buffer, requestId = 'r1'): Buffer =>
  Buffer.from(storePb.ProposeRequest.encode({ command, requestId }).finish());

describe('transports/grpc lean unary serving, beside grpc-js serving', function () {
  this.timeout(60_000);
  let dir: string;
  let clusterId: string;
  const tls: Record<string, Tls> = {};
  const servers: Record<'lean' | 'grpc-js', { server: PeerServer; address: string; refused: RefusalReason[] }> =
    {} as never;
  const sessions = new Map<string, http2.ClientHttp2Session>();

  before(async function () {
    dir = await mkdtemp(join(tmpdir(), 'svc-lean-serve-'));
    clusterId = newClusterId();
    await createClusterCa({ dir });
    const node = (name: string, cluster = clusterId) =>
      createNodeCert({ dir, name, clusterId: cluster, peersService: 'peers', namespace: 'test' });
    await node('n1');
    await node('n2');
    await node('n9');
    await node('x1', 'another-cluster');
    await createAdminCert({ dir, name: 'ops', clusterId });
    const ca = await readFile(join(dir, 'ca.crt'));
    for (const name of ['n1', 'n2', 'n9', 'x1', 'ops'])
      tls[name] = { ca, cert: await readFile(join(dir, `${name}.crt`)), key: await readFile(join(dir, `${name}.key`)) };
    for (const leanUnary of [true, false]) {
      const refused: RefusalReason[] = [];
      const handler = new FakePeerHandler()
        .on('Heartbeat', (_id, request, call: CallSink) =>
          call.reply({
            method: 'Heartbeat',
            body: pb.HeartbeatResponse.fromPartial({
              acknowledged: true,
              term: (request.body as pb.HeartbeatRequest).term,
            }),
          }),
        )
        .on('TimeoutNow', () => {
          // never answers: the caller's deadline ends the call
        })
        .on('StreamSegments', (_id, _request, call: CallSink) => call.streamEnd())
        .on('RequestVote', () => {
          throw new Error('the fake handler fails on purpose');
        });
      const store = storeService({
        handler: {
          propose: (command) => {
            if (command.toString() === 'hang') return new Promise(() => {});
            if (command.toString() === 'elsewhere')
              return Promise.reject(new StoreCallError(grpc.status.FAILED_PRECONDITION, 'not the leader', 'n3:7000'));
            return Promise.resolve({ seq: 7, result: storePb.CommandResult.fromPartial({ version: 7 }) });
          },
          readIndex: () => Promise.resolve({ commitSeq: 3, term: 4 }),
          get: (key) => Promise.resolve({ found: key === 'k', valueJson: '"v"', version: 2 }),
        },
        commandBytesMax: COMMAND_BYTES_MAX,
        callDeadlineMs: 5_000,
        proposeBatchCountMax: 4,
        streamOpenRequestCountMax: 8,
      });
      const server = await PeerServer.listen('127.0.0.1:0', {
        handler,
        credentials: serverCredentials(tls.n1!),
        limits: {
          messageBytesMax: MESSAGE_BYTES_MAX,
          streamBufferedBytesMax: MESSAGE_BYTES_MAX,
          stringFieldBytesMax: 64,
        },
        gate: new PeerGate({
          clusterId,
          requireCertificate: true,
          memberIdByName: (name) => ROSTER.get(name) ?? 0,
          memberNameById: (id) => [...ROSTER].find(([, i]) => i === id)?.[0],
        }),
        onRefused: (reason) => refused.push(reason),
        leanUnary,
        services: [
          {
            name: 'svc.store.v1.Store',
            definition: storeServiceDefinition(),
            implementation: store.implementation,
            role: 'peer',
            membersOnly: true,
            leanUnary: true,
          },
        ],
      });
      servers[leanUnary ? 'lean' : 'grpc-js'] = { server, address: `localhost:${server.port}`, refused };
    }
  });

  after(async function () {
    for (const session of sessions.values()) session.destroy();
    for (const { server } of Object.values(servers)) await server.close();
    await rm(dir, { recursive: true, force: true });
  });

  /**
   * session: one HTTP/2 connection per server and certificate, reused by the calls (as a peer's is); `marked`
   * asks for the lean connection path (lean-connections.ts), as lean-unary.ts's dial does.
   */
  function session(address: string, who: string, marked = false): http2.ClientHttp2Session {
    const key = `${address} ${who} ${marked}`;
    const open = sessions.get(key);
    if (open && !open.closed && !open.destroyed) return open;
    const made = http2.connect(`https://${address}`, {
      ...tls[who]!,
      servername: 'localhost',
      ...(marked ? { settings: LEAN_CONNECTION_SETTINGS } : {}),
    });
    made.on('error', () => {});
    sessions.set(key, made);
    return made;
  }

  /** rawCall sends one unary call as `who` and gathers what comes back. */
  function rawCall(address: string, who: string, call: RawCall, marked = false): Promise<Outcome> {
    return new Promise((resolve) => {
      const outcome: Outcome = {
        httpStatus: null,
        grpcStatus: null,
        grpcMessage: null,
        trailers: {},
        message: '',
        failure: null,
      };
      const ending = (headers: http2.IncomingHttpHeaders): void => {
        if (headers['grpc-status'] !== undefined) outcome.grpcStatus = String(headers['grpc-status']);
        if (headers['grpc-message'] !== undefined) outcome.grpcMessage = String(headers['grpc-message']);
        for (const [k, v] of Object.entries(headers)) if (k.startsWith('x-svc-')) outcome.trailers[k] = String(v);
      };
      const chunks: Buffer[] = [];
      let stream: http2.ClientHttp2Stream;
      try {
        stream = session(address, who, marked).request({
          ':method': 'POST',
          ':path': call.path,
          'content-type': 'application/grpc',
          te: 'trailers',
          ...(call.clusterId === null ? {} : { [CLUSTER_ID_METADATA_KEY]: call.clusterId ?? clusterId }),
          ...call.headers,
        });
      } catch (err) {
        outcome.failure = String(err);
        resolve(outcome);
        return;
      }
      stream.on('response', (headers) => {
        outcome.httpStatus = Number(headers[':status']);
        ending(headers);
      });
      stream.on('trailers', ending);
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('error', (err) => (outcome.failure = err.message));
      stream.on('close', () => {
        outcome.message = Buffer.concat(chunks).toString('hex');
        resolve(outcome);
      });
      stream.end(call.body);
    });
  }

  /**
   * both sends the call to each server, and to the lean one again on a connection marked for the lean
   * connection path, and checks all three answered alike; it returns the (shared) outcome.
   */
  async function both(who: string, call: RawCall): Promise<Outcome> {
    const lean = await rawCall(servers.lean.address, who, call);
    const classic = await rawCall(servers['grpc-js'].address, who, call);
    const connection = await rawCall(servers.lean.address, who, call, true);
    assert.deepEqual(lean, classic, `lean and grpc-js serving answer ${call.path} from ${who} alike`);
    // A lean connection serves the unary calls only (its client asks for it for them alone): a stream's path is
    // one it does not implement.
    const streamPath = STREAM_PATHS.has(call.path);
    assert.deepEqual(
      connection,
      streamPath ? unimplemented(call.path) : classic,
      `a lean connection and grpc-js answer ${call.path} from ${who} alike`,
    );
    return lean;
  }

  it("attaches to grpc-js's http2 servers (fails loudly when grpc-js's internals change)", async function () {
    // PeerServer falls back to grpc-js serving with a warning when serveUnaryLean cannot attach; this is where
    // a grpc-js update that moved `http2Servers` or its 'stream' listener shows.
    assert.equal(servers.lean.server.unaryServing, 'lean', 'the lean server attached');
    assert.equal(servers['grpc-js'].server.unaryServing, 'grpc-js');
    const server = new grpc.Server();
    await new Promise<number>((resolve, reject) =>
      server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, port) =>
        err ? reject(err) : resolve(port),
      ),
    );
    try {
      const attached = serveUnaryLean(server, new Map(), { messageBytesMax: MESSAGE_BYTES_MAX });
      assert.equal(typeof attached, 'object', `serveUnaryLean could not attach: ${String(attached)}`);
    } finally {
      server.forceShutdown();
    }
    // A server that has bound nothing has nothing to attach to: a reason, not a throw.
    assert.equal(typeof serveUnaryLean(new grpc.Server(), new Map(), { messageBytesMax: 1 }), 'string');
  });

  it('serves the unary calls on the lean path and passes the streams to grpc-js', async function () {
    const before = servers.lean.server.stats().leanCallCount;
    const ok = await both('n2', { path: methodPath('Heartbeat'), body: frame(heartbeat({ regionId: 2 })) });
    assert.equal(ok.grpcStatus, '0');
    assert.equal(ok.httpStatus, 200);
    const answer = pb.HeartbeatResponse.decode(Buffer.from(ok.message, 'hex').subarray(5));
    assert.equal(answer.acknowledged, true);
    const proposed = await both('n2', { path: STORE_METHODS.propose, body: frame(propose(Buffer.from('put'))) });
    assert.equal(proposed.grpcStatus, '0');
    assert.equal(storePb.ProposeResponse.decode(Buffer.from(proposed.message, 'hex').subarray(5)).seq, 7);
    const stream = await both('n2', {
      path: methodPath('StreamSegments'),
      body: frame(Buffer.from(pb.StreamRequest.encode({ shardId: 2, fromSeqno: 1, term: 1 }).finish())),
    });
    assert.ok(stream.grpcStatus !== null);
    assert.equal(
      servers.lean.server.stats().leanCallCount - before,
      4,
      'the two unary calls went lean (on a node:http2 stream, then on a lean connection), the stream not',
    );
    assert.ok(servers.lean.server.stats().leanConnectionCount >= 1, 'the marked connection was served lean');
    assert.equal(servers['grpc-js'].server.stats().leanConnectionCount, 0);
    assert.equal(servers['grpc-js'].server.stats().leanCallCount, 0);
  });

  it('refuses forged callers alike: role, cluster, claims, roster', async function () {
    const cases: Array<[string, RawCall, RefusalReason]> = [
      ['ops', { path: methodPath('Heartbeat'), body: frame(heartbeat({})) }, 'wrong-role'],
      ['x1', { path: methodPath('ReportApplied'), body: frame(Buffer.alloc(0)) }, 'cluster-mismatch'],
      ['n2', { path: methodPath('Heartbeat'), body: frame(heartbeat({})), clusterId: null }, 'cluster-missing'],
      ['n2', { path: methodPath('Heartbeat'), body: frame(heartbeat({})), clusterId: 'not-ours' }, 'cluster-mismatch'],
      ['n2', { path: methodPath('Heartbeat'), body: frame(heartbeat({ leaderRegion: 3 })) }, 'claim-mismatch'],
      ['n9', { path: methodPath('Heartbeat'), body: frame(heartbeat({ regionId: 1 })) }, 'claim-mismatch'],
      ['n9', { path: STORE_METHODS.propose, body: frame(propose(Buffer.from('put'))) }, 'not-member'],
      ['ops', { path: STORE_METHODS.propose, body: frame(propose(Buffer.from('put'))) }, 'wrong-role'],
      ['n2', { path: methodPath('Heartbeat'), body: frame(heartbeat({ term: 2 ** 53 - 1 })) }, 'bad-value'],
    ];
    for (const [who, call, reason] of cases) {
      const lean = servers.lean.refused.length;
      const classic = servers['grpc-js'].refused.length;
      const outcome = await both(who, call);
      const expected = reason === 'bad-value' ? grpc.status.INVALID_ARGUMENT : grpc.status.PERMISSION_DENIED;
      assert.equal(outcome.grpcStatus, String(expected), `${who} ${call.path}: ${JSON.stringify(outcome)}`);
      assert.deepEqual(servers.lean.refused.slice(lean), [reason, reason], `the lean server counted ${reason} twice`);
      assert.deepEqual(servers['grpc-js'].refused.slice(classic), [reason]);
    }
  });

  it('refuses bad input alike: malformed, oversized, limits, none or two messages, unknown paths', async function () {
    // HeartbeatRequest.term (field 8, a varint) = 2^60: above 2^53.
    const uint64TooBig = new BinaryWriter()
      .uint32((8 << 3) | 0)
      .uint64(2n ** 60n)
      .finish();
    const cases: Array<[RawCall, number]> = [
      [{ path: methodPath('Heartbeat'), body: frame(Buffer.from([0x08, 0x80])) }, grpc.status.INVALID_ARGUMENT],
      [{ path: methodPath('Heartbeat'), body: frame(Buffer.from(uint64TooBig)) }, grpc.status.INVALID_ARGUMENT],
      [
        { path: methodPath('Heartbeat'), body: frame(heartbeat({ buildVersion: 'v'.repeat(65) })) },
        grpc.status.INVALID_ARGUMENT,
      ],
      [
        { path: methodPath('Heartbeat'), body: frame(Buffer.alloc(MESSAGE_BYTES_MAX + 1)) },
        grpc.status.RESOURCE_EXHAUSTED,
      ],
      [
        { path: STORE_METHODS.propose, body: frame(Buffer.alloc(MESSAGE_BYTES_MAX + 1)) },
        grpc.status.RESOURCE_EXHAUSTED,
      ],
      [
        { path: STORE_METHODS.propose, body: frame(propose(Buffer.alloc(COMMAND_BYTES_MAX + 1))) },
        grpc.status.INVALID_ARGUMENT,
      ],
      [{ path: STORE_METHODS.propose, body: frame(Buffer.from([0x0a, 0x80])) }, grpc.status.INVALID_ARGUMENT],
      [{ path: methodPath('Heartbeat'), body: Buffer.alloc(0) }, grpc.status.UNIMPLEMENTED],
      [
        { path: methodPath('Heartbeat'), body: Buffer.concat([frame(heartbeat({})), frame(heartbeat({}))]) },
        grpc.status.UNIMPLEMENTED,
      ],
      [{ path: '/svc.replication.v1.WalShipping/NoSuchMethod', body: frame(heartbeat({})) }, grpc.status.UNIMPLEMENTED],
      [{ path: methodPath('RequestVote'), body: frame(Buffer.alloc(0)) }, grpc.status.INTERNAL],
    ];
    for (const [call, code] of cases) {
      const outcome = await both('n2', call);
      assert.equal(
        outcome.grpcStatus,
        String(code),
        `${call.path} ${call.body.subarray(0, 16).toString('hex')}: ${JSON.stringify(outcome)}`,
      );
    }
  });

  it('ends a call at its second message, before the caller half-closes, alike (no messages piled up)', async function () {
    for (const address of [servers.lean.address, servers['grpc-js'].address]) {
      const outcome = await new Promise<string>((resolve) => {
        const stream = session(address, 'n2').request({
          ':method': 'POST',
          ':path': methodPath('Heartbeat'),
          'content-type': 'application/grpc',
          te: 'trailers',
          [CLUSTER_ID_METADATA_KEY]: clusterId,
        });
        stream.on('response', (headers) => resolve(String(headers['grpc-status'])));
        stream.on('error', (err) => resolve(err.message));
        // Never half-closed: only the second whole message can end the call.
        stream.write(Buffer.concat([frame(heartbeat({})), frame(heartbeat({}))]));
      });
      assert.equal(outcome, String(grpc.status.UNIMPLEMENTED), address);
    }
  });

  it('answers a Store refusal with its leader trailer alike', async function () {
    const outcome = await both('n2', { path: STORE_METHODS.propose, body: frame(propose(Buffer.from('elsewhere'))) });
    assert.equal(outcome.grpcStatus, String(grpc.status.FAILED_PRECONDITION));
    assert.deepEqual(outcome.trailers, { 'x-svc-leader': 'n3:7000' });
  });

  it('honours grpc-timeout alike: DEADLINE_EXCEEDED, and the server frees the call', async function () {
    for (const call of [
      { path: methodPath('TimeoutNow'), body: frame(Buffer.alloc(0)), headers: { 'grpc-timeout': '300m' } },
      { path: STORE_METHODS.propose, body: frame(propose(Buffer.from('hang'))), headers: { 'grpc-timeout': '300m' } },
    ]) {
      const outcome = await both('n2', call);
      assert.equal(outcome.grpcStatus, String(grpc.status.DEADLINE_EXCEEDED), JSON.stringify(outcome));
    }
    await waitFor(
      () => servers.lean.server.stats().activeCallCount === 0,
      'the lean server to free the calls past their deadline',
    );
  });

  it('passes unusual requests to grpc-js: a bad grpc-timeout, another content type, a compressed message', async function () {
    const before = servers.lean.server.stats().leanCallCount;
    const badTimeout = await both('n2', {
      path: methodPath('Heartbeat'),
      body: frame(heartbeat({})),
      headers: { 'grpc-timeout': 'soon' },
    });
    assert.equal(badTimeout.grpcStatus, String(grpc.status.INTERNAL));
    const notGrpc = await both('n2', {
      path: methodPath('Heartbeat'),
      body: frame(heartbeat({})),
      headers: { 'content-type': 'text/plain' },
    });
    assert.equal(notGrpc.httpStatus, 415);
    const gzipped = await both('n2', {
      path: methodPath('Heartbeat'),
      body: frame(gzipSync(heartbeat({ regionId: 2 })), true),
      headers: { 'grpc-encoding': 'gzip' },
    });
    assert.equal(gzipped.grpcStatus, '0');
    // On node:http2 streams these go to grpc-js; a lean connection answers them itself, as grpc-js does: the
    // first two before any handler, the gzipped one through its handler once inflated.
    assert.equal(servers.lean.server.stats().leanCallCount, before + 1, 'only the inflated one on the lean connection');
  });

  it('a caller without a client certificate never gets a call through either server', async function () {
    for (const address of [servers.lean.address, servers['grpc-js'].address]) {
      const failure = await new Promise<string>((resolve) => {
        const bare = http2.connect(`https://${address}`, { ca: tls.n2!.ca, servername: 'localhost' });
        bare.on('error', (err) => resolve(err.message));
        const stream = bare.request({
          ':method': 'POST',
          ':path': methodPath('Heartbeat'),
          'content-type': 'application/grpc',
        });
        stream.on('error', (err) => resolve(err.message));
        stream.on('response', (headers) => resolve(`answered ${String(headers['grpc-status'])}`));
        stream.end(frame(heartbeat({})));
      });
      assert.doesNotMatch(failure, /^answered/, `${address}: ${failure}`);
    }
  });
});
