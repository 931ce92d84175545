// An independent client: built at run time from the .proto with
// @grpc/proto-loader (not the ts-proto code the server uses), it calls our
// server wired to a small fake handler. The engine provides the real answers
// later; here every field of every method's request and response must survive
// the round trip, errors must carry their trailers, and streams must flow.
import assert from 'node:assert/strict';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { StatusCode, TRAILER_CATCHUP, TRAILER_TERM, type RpcRequest, type RpcResponse } from '../../engine/rpc.js';
import type { PeerServer } from '../../transports/grpc/server.js';
import { FakePeerHandler, startServer } from './helpers.js';

const repoRoot = path.resolve(fileURLToPath(new URL('.', import.meta.url)), '../..');

type Plain = Record<string, unknown>;
type UnaryFn = (
  request: Plain,
  metadata: grpc.Metadata,
  options: grpc.CallOptions,
  callback: (err: grpc.ServiceError | null, response: Plain) => void,
) => void;
type StreamFn = (request: Plain) => grpc.ClientReadableStream<Plain>;

function loadSpecClient(address: string): grpc.Client & Record<string, unknown> {
  const definition = protoLoader.loadSync('svc/replication/v1/replication.proto', {
    includeDirs: [path.join(repoRoot, 'proto')],
    keepCase: true,
    longs: String,
    defaults: true,
    oneofs: true,
  });
  const loaded = grpc.loadPackageDefinition(definition) as unknown as {
    svc: { replication: { v1: { WalShipping: grpc.ServiceClientConstructor } } };
  };
  return new loaded.svc.replication.v1.WalShipping(address, grpc.credentials.createInsecure()) as grpc.Client &
    Record<string, unknown>;
}

const NS_PAST_2_53 = '1763791200123456789';

/** Each unary method: a request with every field set, what the server must decode, and the answer. */
const UNARY_CASES: { method: string; request: Plain; decoded: RpcRequest; response: RpcResponse; expected: Plain }[] = [
  {
    method: 'ShipSegment',
    request: {
      id: { region_id: 2, shard_id: 3, seqno: '41' },
      payload: Buffer.from('frame'),
      event_count: '5',
      leader_last_seq: '45',
      stream_baseline: '40',
      term: '7',
      leader_region: 2,
    },
    decoded: {
      method: 'ShipSegment',
      body: {
        id: { regionId: 2, shardId: 3, seqno: 41 },
        payload: Buffer.from('frame'),
        eventCount: 5,
        leaderLastSeq: 45,
        streamBaseline: 40,
        term: 7,
        leaderRegion: 2,
      },
    },
    response: { method: 'ShipSegment', body: { accepted: true, appliedSeqno: 45, term: 7 } },
    expected: { accepted: true, applied_seqno: '45', term: '7' },
  },
  {
    method: 'Heartbeat',
    request: {
      shard_id: 1,
      region_id: 2,
      entity_count: '1000',
      signal_throughput_eps: 12.5,
      disk_bytes: '4096',
      replication_lag: { 1: '0', 3: '17' },
      last_heartbeat_ns: NS_PAST_2_53,
      term: '7',
      leader_region: 2,
      stream_baseline: '40',
      prev_log_term: '6',
      prev_log_seq: '39',
      build_version: '1.2.3',
      leader_last_seq: '45',
    },
    decoded: {
      method: 'Heartbeat',
      body: {
        shardId: 1,
        regionId: 2,
        entityCount: 1000,
        signalThroughputEps: 12.5,
        diskBytes: 4096,
        replicationLag: { 1: 0, 3: 17 },
        lastHeartbeatNs: NS_PAST_2_53,
        term: 7,
        leaderRegion: 2,
        streamBaseline: 40,
        prevLogTerm: 6,
        prevLogSeq: 39,
        buildVersion: '1.2.3',
        leaderLastSeq: 45,
      },
    },
    response: {
      method: 'Heartbeat',
      body: { acknowledged: true, term: 7, accepted: true, capabilities: 1, removed: true },
    },
    expected: { acknowledged: true, term: '7', accepted: true, capabilities: '1', removed: true },
  },
  {
    method: 'ReportApplied',
    request: { reporter_shard: 3, source_shard: 2, applied_seqno: '44', reporter_term: '7', capabilities: '1' },
    decoded: {
      method: 'ReportApplied',
      body: { reporterShard: 3, sourceShard: 2, appliedSeqno: 44, reporterTerm: 7, capabilities: 1 },
    },
    response: { method: 'ReportApplied', body: { acknowledged: true } },
    expected: { acknowledged: true },
  },
  {
    method: 'RequestVote',
    request: { term: '8', candidate_region: 3, last_log_term: '7', last_log_seq: '45', prevote: true, transfer: true },
    decoded: {
      method: 'RequestVote',
      body: { term: 8, candidateRegion: 3, lastLogTerm: 7, lastLogSeq: 45, prevote: true, transfer: true },
    },
    response: { method: 'RequestVote', body: { term: 8, granted: true, removed: true } },
    expected: { term: '8', granted: true, removed: true },
  },
  {
    method: 'TimeoutNow',
    request: { term: '7', leader_region: 2 },
    decoded: { method: 'TimeoutNow', body: { term: 7, leaderRegion: 2 } },
    response: { method: 'TimeoutNow', body: { accepted: true } },
    expected: { accepted: true },
  },
  {
    method: 'JoinCluster',
    request: {
      name: 'node-4',
      grpc_addr: 'node-4.peers:7000',
      http_addr: 'http://node-4.peers:8080',
      capabilities: '1',
    },
    decoded: {
      method: 'JoinCluster',
      body: { name: 'node-4', grpcAddr: 'node-4.peers:7000', httpAddr: 'http://node-4.peers:8080', capabilities: 1 },
    },
    response: {
      method: 'JoinCluster',
      body: {
        accepted: true,
        refusalReason: 'none',
        assignedId: 4,
        term: 7,
        leaderRegion: '2',
        leaderGrpcAddr: 'node-2.peers:7000',
        leaderHttpAddr: 'http://node-2.peers:8080',
        membershipVersion: 5,
        members: [
          { id: 2, name: 'node-2', grpcAddr: 'node-2.peers:7000', httpAddr: 'http://node-2.peers:8080', role: 0 },
          { id: 4, name: 'node-4', grpcAddr: 'node-4.peers:7000', httpAddr: 'http://node-4.peers:8080', role: 1 },
        ],
      },
    },
    expected: {
      accepted: true,
      refusal_reason: 'none',
      assigned_id: 4,
      term: '7',
      leader_region: '2',
      leader_grpc_addr: 'node-2.peers:7000',
      leader_http_addr: 'http://node-2.peers:8080',
      membership_version: '5',
      members: [
        { id: 2, name: 'node-2', grpc_addr: 'node-2.peers:7000', http_addr: 'http://node-2.peers:8080', role: 0 },
        { id: 4, name: 'node-4', grpc_addr: 'node-4.peers:7000', http_addr: 'http://node-4.peers:8080', role: 1 },
      ],
    },
  },
];

/** normalize turns proto-loader's Buffers into plain bytes for comparison. */
function normalize(value: unknown): unknown {
  if (Buffer.isBuffer(value)) return [...value];
  if (Array.isArray(value)) return value.map(normalize);
  if (value !== null && typeof value === 'object')
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, normalize(v)]));
  return value;
}

describe('spec client (proto-loader) against the server with a fake handler', function () {
  this.timeout(30_000);
  let server: PeerServer;
  let client: grpc.Client & Record<string, unknown>;
  let handler: FakePeerHandler;

  before(async function () {
    // FakePeerHandler answers from the table above; a term-0 heartbeat is refused with a term trailer.
    handler = new FakePeerHandler();
    for (const c of UNARY_CASES) {
      handler.on(c.decoded.method, (_id, request, call) => {
        if (request.method === 'Heartbeat' && request.body.term === 0) {
          call.replyError({
            code: StatusCode.FAILED_PRECONDITION,
            details: 'term-0 traffic refused at term 7',
            trailers: { [TRAILER_TERM]: '7' },
          });
          return;
        }
        call.reply(c.response);
      });
    }
    handler.on('StreamSegments', (_id, request, call) => {
      if (request.method !== 'StreamSegments') return;
      if (request.body.fromSeqno < 40) {
        call.replyError({
          code: StatusCode.FAILED_PRECONDITION,
          details: 'compacted past from_seqno',
          trailers: {
            [TRAILER_CATCHUP]: JSON.stringify({ firstAvailableSeq: 40, snapshotSeq: 45, term: 7, leaderRegion: 2 }),
            [TRAILER_TERM]: '7',
          },
        });
        return;
      }
      for (let seqno = request.body.fromSeqno; seqno < request.body.fromSeqno + 50; seqno += 1) {
        call.streamChunk({
          id: { regionId: 2, shardId: 2, seqno },
          payload: Buffer.alloc(1000, seqno % 256),
          eventCount: 1,
          leaderLastSeq: seqno,
          streamBaseline: 0,
          term: 7,
          leaderRegion: 2,
        });
      }
      call.streamEnd();
    });
    handler.on('FetchSnapshot', (_id, request, call) => {
      if (request.method !== 'FetchSnapshot') return;
      const needed = request.body.fromSeqno < 40;
      async function* files(): AsyncGenerator<{ path: string; offset: number; data: Buffer; last: boolean }> {
        for (let i = 0; i < 3; i += 1)
          yield { path: 'state/kv.json', offset: i * 4, data: Buffer.from(`abc${i}`), last: i === 2 };
        yield { path: 'meta.json', offset: 0, data: Buffer.from('{}'), last: true };
      }
      call.serveSnapshot(
        {
          needed,
          snapshotSeq: needed ? 45 : 0,
          term: 7,
          leaderRegion: 2,
          files: needed
            ? [
                { path: 'state/kv.json', size: 12, blake3: Buffer.alloc(32, 9) },
                { path: 'meta.json', size: 2, blake3: Buffer.alloc(32, 8) },
              ]
            : [],
        },
        files(),
      );
    });
    let address: string;
    ({ server, address } = await startServer(handler));
    client = loadSpecClient(address);
  });

  after(async function () {
    client?.close();
    await server?.close();
  });

  function unary(method: string, request: Plain): Promise<{ err: grpc.ServiceError | null; response: Plain }> {
    const fn = (client[method[0]!.toLowerCase() + method.slice(1)] as UnaryFn).bind(client);
    return new Promise((resolve) =>
      fn(request, new grpc.Metadata(), { deadline: Date.now() + 5_000 }, (err, response) => resolve({ err, response })),
    );
  }

  function stream(method: string, request: Plain): Promise<{ messages: Plain[]; status: grpc.StatusObject }> {
    const call = (client[method[0]!.toLowerCase() + method.slice(1)] as StreamFn).call(client, request);
    const messages: Plain[] = [];
    return new Promise((resolve) => {
      call.on('data', (m: Plain) => messages.push(m));
      call.on('error', () => {});
      call.on('status', (status: grpc.StatusObject) => resolve({ messages, status }));
    });
  }

  for (const c of UNARY_CASES) {
    it(`${c.method}: every request and response field round-trips`, async function () {
      const { err, response } = await unary(c.method, c.request);
      assert.equal(err, null);
      assert.deepEqual(normalize(handler.requests.at(-1)!.request), normalize(c.decoded));
      assert.deepEqual(normalize(response), normalize(c.expected));
    });
  }

  it('StreamSegments: 50 chunks flow in order, then OK', async function () {
    const { messages, status } = await stream('StreamSegments', { shard_id: 2, from_seqno: '40', term: '7' });
    assert.equal(status.code, grpc.status.OK);
    assert.deepEqual(
      messages.map((m) => (m.id as Plain).seqno),
      Array.from({ length: 50 }, (_, i) => String(40 + i)),
    );
    assert.deepEqual(
      normalize(messages[0]),
      normalize({
        id: { region_id: 2, shard_id: 2, seqno: '40' },
        payload: Buffer.alloc(1000, 40),
        event_count: '1',
        leader_last_seq: '40',
        stream_baseline: '0',
        term: '7',
        leader_region: 2,
      }),
    );
    assert.deepEqual(handler.requests.at(-1)!.request, {
      method: 'StreamSegments',
      body: { shardId: 2, fromSeqno: 40, term: 7 },
    });
  });

  it('StreamSegments: FAILED_PRECONDITION carries the x-svc-catchup and x-svc-term trailers', async function () {
    const { messages, status } = await stream('StreamSegments', { shard_id: 2, from_seqno: '3', term: '7' });
    assert.equal(messages.length, 0);
    assert.equal(status.code, grpc.status.FAILED_PRECONDITION);
    assert.deepEqual(JSON.parse(String(status.metadata.get(TRAILER_CATCHUP)[0])), {
      firstAvailableSeq: 40,
      snapshotSeq: 45,
      term: 7,
      leaderRegion: 2,
    });
    assert.deepEqual(status.metadata.get(TRAILER_TERM), ['7']);
  });

  it('FetchSnapshot: the header first, then the files in manifest order', async function () {
    const { messages, status } = await stream('FetchSnapshot', { shard_id: 2, from_seqno: '3', term: '7' });
    assert.equal(status.code, grpc.status.OK);
    assert.deepEqual(
      messages.map((m) => m.chunk),
      ['header', 'file', 'file', 'file', 'file'],
    );
    const header = messages[0]!.header as Plain;
    assert.equal(header.needed, true);
    assert.equal(header.snapshot_seq, '45');
    assert.deepEqual(
      normalize(header.files),
      normalize([
        { path: 'state/kv.json', size: '12', blake3: Buffer.alloc(32, 9) },
        { path: 'meta.json', size: '2', blake3: Buffer.alloc(32, 8) },
      ]),
    );
    assert.deepEqual(
      messages.slice(1).map((m) => Buffer.from((m.file as Plain).data as Buffer).toString()),
      ['abc0', 'abc1', 'abc2', '{}'],
    );
    assert.deepEqual(
      messages.slice(1).map((m) => (m.file as Plain).last),
      [false, false, true, true],
    );
  });

  it('FetchSnapshot: needed=false is the header alone', async function () {
    const { messages, status } = await stream('FetchSnapshot', { shard_id: 2, from_seqno: '44', term: '7' });
    assert.equal(status.code, grpc.status.OK);
    assert.equal(messages.length, 1);
    assert.deepEqual((messages[0]!.header as Plain).files, []);
  });

  it('a refused unary call carries its status and trailer', async function () {
    const { err } = await unary('Heartbeat', { term: '0' });
    assert.equal(err?.code, grpc.status.FAILED_PRECONDITION);
    assert.equal(err?.details, 'term-0 traffic refused at term 7');
    assert.deepEqual(err?.metadata.get(TRAILER_TERM), ['7']);
  });
});
