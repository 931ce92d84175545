// StoreClientPool's unary calls (Propose, ProposeBatch, ReadIndex, Get) on the lean HTTP/2 client: they leave
// through it (the server sees no grpc-js client on them), every outcome is the one grpc-js's client gives for
// the same answer (code as sent, details, leader hint, the answer-size bound, the deadline, UNIMPLEMENTED), and
// over TLS a server signed by another CA, under another name or of another cluster is refused exactly as
// grpc-js's client refuses it, before any call reaches it.
import assert from 'node:assert/strict';
import * as grpc from '@grpc/grpc-js';
import * as pb from '../../proto/gen/svc/store/v1/store.js';
import { encodeCommand } from '../../store/command.js';
import { identityUri } from '../../transports/grpc/peer-identity.js';
import { serverCredentials, type PeerSecurity } from '../../transports/grpc/tls.js';
import {
  StoreCallError,
  StoreClientPool,
  storeClientTransport,
  storeService,
  storeServiceDefinition,
  type StoreServiceHandler,
} from '../../transports/store-rpc/store-service.js';
import { startOldStoreServer } from '../node/grpc-probe.js';
import { leanOptions, STORE_POOL_TRANSPORTS, type StorePoolTransport } from './store-pool-transports.js';
import { ThrowawayPki } from './throwaway-pki.js';

const DEADLINE_MS = 5_000;
/** ANSWER_BYTES_MAX: the pools' messageBytesMax, so that the 'big' value's answer passes it. */
const ANSWER_BYTES_MAX = 4_096;

const handler: StoreServiceHandler = {
  propose: (_command, _deadlineAt, requestId) =>
    requestId === 'refuse'
      ? Promise.reject(new StoreCallError(grpc.status.FAILED_PRECONDITION, 'not the leader, 100% sure', 'n9:7000'))
      : Promise.resolve({
          seq: 7,
          result: { outcome: pb.Outcome.OUTCOME_APPLIED, version: 1, existed: false, actualVersion: 0, reason: '' },
        }),
  readIndex: () => Promise.resolve({ commitSeq: 42, term: 3 }),
  get: (key) => {
    if (key === 'unauthenticated')
      return Promise.reject(new StoreCallError(grpc.status.UNAUTHENTICATED, 'who are you'));
    if (key === 'refuse')
      return Promise.reject(new StoreCallError(grpc.status.FAILED_PRECONDITION, 'ask the leader', 'n2:7000'));
    if (key === 'slow') return new Promise(() => {});
    if (key === 'big')
      return Promise.resolve({ found: true, valueJson: `"${'x'.repeat(2 * ANSWER_BYTES_MAX)}"`, version: 1 });
    return Promise.resolve({ found: true, valueJson: `{"key":${JSON.stringify(key)}}`, version: 2 });
  },
};

async function listen(server: grpc.Server, credentials: grpc.ServerCredentials): Promise<string> {
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', credentials, (err, p) => (err ? reject(err) : resolve(p))),
  );
  return `127.0.0.1:${port}`;
}

/** outcomeOf is what a call ended in: the answer, or the error's code, details and leader hint. */
async function outcomeOf(call: Promise<unknown>): Promise<unknown> {
  try {
    return { answer: await call };
  } catch (err) {
    assert.ok(err instanceof StoreCallError, String(err));
    return { code: grpc.status[err.code], details: err.details, leaderHint: err.leaderHint };
  }
}

describe('store-rpc: the client pool unary calls on the lean HTTP/2 client', function () {
  this.timeout(60_000);
  const service = storeService({
    handler,
    commandBytesMax: 1024,
    callDeadlineMs: DEADLINE_MS,
    proposeBatchCountMax: 8,
    streamOpenRequestCountMax: 64,
  });
  const server = new grpc.Server();
  /** userAgents: the user-agent each unary Get and Propose call arrived with ('' for none). */
  const userAgents: string[] = [];
  let address = '';
  const pools = new Map<StorePoolTransport, StoreClientPool>();

  before(async () => {
    const seen =
      (method: string) =>
      (call: grpc.ServerUnaryCall<Buffer, Buffer>, respond: grpc.sendUnaryData<Buffer>): void => {
        userAgents.push(String(call.metadata.get('user-agent')[0] ?? ''));
        (service.implementation[method] as grpc.handleUnaryCall<Buffer, Buffer>)(call, respond);
      };
    server.addService(storeServiceDefinition(), {
      ...service.implementation,
      get: seen('get'),
      propose: seen('propose'),
    });
    address = await listen(server, grpc.ServerCredentials.createInsecure());
    for (const unaryClient of STORE_POOL_TRANSPORTS)
      pools.set(
        unaryClient,
        new StoreClientPool({
          ...storeClientTransport(
            { mode: 'insecure' },
            { ...leanOptions(unaryClient), limits: { messageBytesMax: ANSWER_BYTES_MAX } },
          ),
          overStreams: false,
          proposeBatchCountMax: 1,
        }),
      );
  });
  after(() => {
    for (const pool of pools.values()) pool.close();
    server.forceShutdown();
  });

  it('sends Propose and Get through the lean client, not grpc-js (and through grpc-js with lean off)', async () => {
    for (const unaryClient of STORE_POOL_TRANSPORTS) {
      const pool = pools.get(unaryClient)!;
      userAgents.length = 0;
      const command = encodeCommand({ op: 'put', key: 'k', value: { v: 1 }, requestId: 'r1' });
      assert.equal((await pool.propose(address, command, Date.now() + DEADLINE_MS, 'r1')).seq, 7);
      assert.equal((await pool.get(address, 'a', Date.now() + DEADLINE_MS)).valueJson, '{"key":"a"}');
      assert.equal(pool.unaryClient, unaryClient);
      assert.equal(pool.callCounts.propose, 1);
      assert.equal(pool.callCounts.getUnary, 1);
      assert.equal(userAgents.length, 2, 'two unary calls arrived');
      if (unaryClient !== 'grpc-js') {
        assert.equal(pool.leanCalls, 2, 'both calls on the lean client');
        assert.ok(
          userAgents.every((agent) => !agent.startsWith('grpc-node-js')),
          `no grpc-js client sent them: ${userAgents.join(', ')}`,
        );
      } else {
        assert.equal(pool.leanCalls, 0);
        assert.ok(
          userAgents.every((agent) => agent.startsWith('grpc-node-js')),
          userAgents.join(', '),
        );
      }
    }
  });

  it('ends each call as the grpc-js client does: status as sent, leader hint, answer bound, deadline', async () => {
    const cases: Array<[string, (pool: StoreClientPool) => Promise<unknown>]> = [
      ['answer', (pool) => pool.get(address, 'a', Date.now() + DEADLINE_MS)],
      ['read index', (pool) => pool.readIndex(address, Date.now() + DEADLINE_MS, 3)],
      ['UNAUTHENTICATED kept as sent', (pool) => pool.get(address, 'unauthenticated', Date.now() + DEADLINE_MS)],
      ['leader hint', (pool) => pool.get(address, 'refuse', Date.now() + DEADLINE_MS)],
      [
        'a Propose refusal with its hint',
        (pool) =>
          pool.propose(
            address,
            encodeCommand({ op: 'delete', key: 'k', requestId: 'refuse' }),
            Date.now() + DEADLINE_MS,
            'refuse',
          ),
      ],
    ];
    for (const [what, call] of cases) {
      const lean = await outcomeOf(call(pools.get('lean')!));
      const h2 = await outcomeOf(call(pools.get('h2')!));
      const grpcJs = await outcomeOf(call(pools.get('grpc-js')!));
      assert.deepEqual(lean, grpcJs, what);
      assert.deepEqual(h2, grpcJs, `${what} (h2)`);
    }
    // Client-side ends: the same code (the wording of the details is each client's own).
    for (const [what, key, deadlineMs, code] of [
      ['answer above messageBytesMax', 'big', DEADLINE_MS, grpc.status.RESOURCE_EXHAUSTED],
      ['deadline', 'slow', 200, grpc.status.DEADLINE_EXCEEDED],
    ] as const) {
      for (const unaryClient of STORE_POOL_TRANSPORTS) {
        const err = await pools
          .get(unaryClient)!
          .get(address, key, Date.now() + deadlineMs)
          .then(
            () => null,
            (e: unknown) => e,
          );
        assert.ok(err instanceof StoreCallError && err.code === code, `${what} (${unaryClient}): ${String(err)}`);
      }
    }
  });

  it('refuses a request above messageBytesMax before sending it, as grpc-js does', async () => {
    for (const unaryClient of STORE_POOL_TRANSPORTS) {
      userAgents.length = 0;
      const command = encodeCommand({
        op: 'put',
        key: 'k',
        value: { v: 'y'.repeat(2 * ANSWER_BYTES_MAX) },
        requestId: 'r2',
      });
      const err = await pools
        .get(unaryClient)!
        .propose(address, command, Date.now() + DEADLINE_MS, 'r2')
        .then(
          () => null,
          (e: unknown) => e,
        );
      assert.ok(
        err instanceof StoreCallError && err.code === grpc.status.RESOURCE_EXHAUSTED,
        `${unaryClient}: ${String(err)}`,
      );
      assert.equal(userAgents.length, 0, 'nothing reached the server');
    }
  });

  it('falls back from ProposeBatch to Propose on UNIMPLEMENTED over the lean client', async () => {
    const old = await startOldStoreServer('propose', (call) =>
      Buffer.from(pb.ProposeResponse.encode(pb.ProposeResponse.fromPartial({ seq: call })).finish()),
    );
    const pool = new StoreClientPool({ ...storeClientTransport({ mode: 'insecure' }), overStreams: false });
    try {
      const command = encodeCommand({ op: 'put', key: 'k', value: { v: 1 }, requestId: '' });
      const answers = await Promise.all([1, 2].map(() => pool.propose(old.address, command, Date.now() + DEADLINE_MS)));
      assert.deepEqual(answers.map((a) => a.seq).sort(), [1, 2]);
      assert.equal(pool.callCounts.proposeBatch, 1, 'the batch tried once');
      assert.equal(pool.callCounts.propose, 2);
      assert.equal(pool.leanCalls, 3);
    } finally {
      pool.close();
      old.stop();
    }
  });
});

describe('store-rpc: the client pool over mutual TLS refuses the wrong server on either client', function () {
  this.timeout(60_000);
  let pki: ThrowawayPki;
  const server = new grpc.Server();
  let address = '';
  let served = 0;

  before(async () => {
    pki = new ThrowawayPki();
    pki.ca('cluster-ca');
    pki.ca('other-ca');
    const serverCert = pki.issue('cluster-ca', 'node-0', [
      'DNS:localhost',
      `URI:${identityUri({ role: 'peer', clusterId: 'c1', name: 'node-0' })}`,
    ]);
    const service = storeService({
      handler: {
        ...handler,
        readIndex: () => {
          served++;
          return Promise.resolve({ commitSeq: 1, term: 1 });
        },
      },
      commandBytesMax: 1024,
      callDeadlineMs: DEADLINE_MS,
      proposeBatchCountMax: 8,
      streamOpenRequestCountMax: 64,
    });
    server.addService(storeServiceDefinition(), service.implementation);
    address = await listen(server, serverCredentials(pki.material('cluster-ca', serverCert)));
  });
  after(() => {
    server.forceShutdown();
    pki?.dispose();
  });

  async function readIndexOver(
    unaryClient: StorePoolTransport,
    caName: string,
    clusterId: string,
    serverName: string,
  ): Promise<unknown> {
    const material = pki.material(
      caName,
      pki.issue(caName, `client-${unaryClient}-${caName}-${clusterId}-${serverName}`, ['DNS:client']),
    );
    const security: PeerSecurity = { mode: 'mtls', material, clusterId };
    const pool = new StoreClientPool({
      ...storeClientTransport(security, { serverNameOverride: serverName, ...leanOptions(unaryClient) }),
      overStreams: false,
    });
    try {
      return await outcomeOf(pool.readIndex(address, Date.now() + 3_000));
    } finally {
      pool.close();
    }
  }

  it('reads from a peer of its cluster signed by its CA under the expected name', async () => {
    for (const unaryClient of STORE_POOL_TRANSPORTS)
      assert.deepEqual(await readIndexOver(unaryClient, 'cluster-ca', 'c1', 'localhost'), {
        answer: { commitSeq: 1, term: 1 },
      });
    assert.equal(served, STORE_POOL_TRANSPORTS.length);
  });

  it('refuses a server signed by another CA, under another name, or of another cluster, UNAVAILABLE on both', async () => {
    const before = served;
    for (const [ca, cluster, name] of [
      ['other-ca', 'c1', 'localhost'],
      ['cluster-ca', 'c1', 'node-9.elsewhere'],
      ['cluster-ca', 'c2', 'localhost'],
    ] as const) {
      for (const unaryClient of STORE_POOL_TRANSPORTS) {
        const outcome = (await readIndexOver(unaryClient, ca, cluster, name)) as { code?: string };
        assert.equal(
          outcome.code,
          'UNAVAILABLE',
          `${unaryClient} ${ca} ${cluster} ${name}: ${JSON.stringify(outcome)}`,
        );
      }
    }
    assert.equal(served, before, 'no refused server saw a call');
  });
});
