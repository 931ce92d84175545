// The lean unary client (transports/grpc/lean-unary.ts) behind PeerPool: each outcome is the one the grpc-js path
// delivers for the same answer (response, status code, details, x-svc-* trailers), deadlines and cancels end a
// call, an unreachable peer fails fast during its back-off and is dialled again after it, an attempt that does not
// connect is dropped at connectTimeoutMs and a connection whose keepalive ping goes unanswered is dropped, no outcome arrives
// inside send(), and over TLS it trusts only the cluster CA and checks the host name and the cluster.
import assert from 'node:assert/strict';
import * as net from 'node:net';
import { StatusCode, TRAILER_TERM, type RpcRequest } from '../../engine/rpc.js';
import * as pb from '../../proto/gen/svc/replication/v1/replication.js';
import { PeerPool, type TransportInput } from '../../transports/grpc/client.js';
import { CLUSTER_ID_METADATA_KEY, identityUri } from '../../transports/grpc/peer-identity.js';
import { PeerServer } from '../../transports/grpc/server.js';
import {
  clientCredentials,
  insecureClientCredentials,
  insecureServerCredentials,
  peerHttp2Dial,
  serverCredentials,
} from '../../transports/grpc/tls.js';
import { FakePeerHandler, SilenceableProxy, startServer, waitFor } from './helpers.js';
import { ThrowawayPki } from './throwaway-pki.js';

const heartbeat = (term: number): RpcRequest => ({
  method: 'Heartbeat',
  body: pb.HeartbeatRequest.fromPartial({ term, regionId: 1, replicationLag: { 2: 5 } }),
});
const vote: RpcRequest = { method: 'RequestVote', body: pb.VoteRequest.fromPartial({ term: 9, candidateRegion: 1 }) };

/** Pools: a lean pool and a grpc-js pool, each recording its outcomes by requestId. */
function pool(lean: boolean, limits = {}): { pool: PeerPool; outcome: (id: number) => Promise<TransportInput> } {
  const seen = new Map<number, TransportInput>();
  const p = new PeerPool({
    credentials: insecureClientCredentials(),
    deliver: (input) => seen.set(input.requestId, input),
    limits: { unaryDeadlineMs: 300, initialReconnectBackoffMs: 300, maxReconnectBackoffMs: 600, ...limits },
    ...(lean
      ? { lean: { dial: peerHttp2Dial({ mode: 'insecure' }), headers: { [CLUSTER_ID_METADATA_KEY]: 'c1' } } }
      : {}),
  });
  return {
    pool: p,
    outcome: async (id) => {
      await waitFor(() => seen.has(id), `the outcome of request ${id}`);
      return seen.get(id)!;
    },
  };
}

/** comparable drops what may differ between transports: the wording of a transport failure's details. */
function comparable(input: TransportInput): unknown {
  if (input.type !== 'callFailed') return input;
  return { type: input.type, requestId: input.requestId, code: input.status.code, trailers: input.status.trailers };
}

describe('transports/grpc lean unary client', function () {
  this.timeout(60_000);
  let server: PeerServer;
  let address: string;
  let handler: FakePeerHandler;

  before(async function () {
    handler = new FakePeerHandler()
      .on('Heartbeat', (_id, request, call) => {
        if (request.method !== 'Heartbeat') throw new Error('not a heartbeat');
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
      })
      .on('RequestVote', () => {
        /* never answers: the caller's deadline ends it */
      });
    ({ server, address } = await startServer(handler));
  });

  after(async function () {
    await server?.close();
  });

  it('delivers what the grpc-js path delivers: an answer, and a refusal with its details and trailers', async function () {
    const lean = pool(true);
    const classic = pool(false);
    try {
      for (const [id, request] of [
        [1, heartbeat(7)],
        [2, heartbeat(3)],
      ] as const) {
        lean.pool.send(id, address, request);
        classic.pool.send(id, address, request);
        const [a, b] = [await lean.outcome(id), await classic.outcome(id)];
        assert.deepEqual(a, b);
      }
      const refused = await lean.outcome(2);
      assert.equal(refused.type, 'callFailed');
      if (refused.type === 'callFailed') {
        assert.equal(refused.status.details, 'stale term, 100%');
        assert.deepEqual(refused.status.trailers, { [TRAILER_TERM]: '5' });
      }
    } finally {
      lean.pool.close();
      classic.pool.close();
    }
  });

  it('ends a call at its deadline and on cancel, never inside send()', async function () {
    const lean = pool(true);
    const classic = pool(false);
    try {
      lean.pool.send(3, address, vote);
      classic.pool.send(3, address, vote);
      assert.deepEqual(comparable(await lean.outcome(3)), comparable(await classic.outcome(3)));
      const timedOut = await lean.outcome(3);
      assert.ok(timedOut.type === 'callFailed' && timedOut.status.code === StatusCode.DEADLINE_EXCEEDED);

      let delivered = false;
      const own = new PeerPool({
        credentials: insecureClientCredentials(),
        deliver: (input) => {
          delivered = true;
          assert.equal(input.type, 'callFailed');
          if (input.type === 'callFailed') assert.equal(input.status.code, StatusCode.CANCELLED);
        },
        limits: { unaryDeadlineMs: 5_000 },
        lean: { dial: peerHttp2Dial({ mode: 'insecure' }), headers: {} },
      });
      own.send(4, address, vote);
      own.cancel(4);
      assert.equal(delivered, false, 'no outcome inside send() or cancel()');
      await waitFor(() => delivered, 'the cancelled outcome');
      own.close();
    } finally {
      lean.pool.close();
      classic.pool.close();
    }
  });

  it('fails fast UNAVAILABLE while an unreachable peer backs off, then dials it again', async function () {
    const port = await freePort();
    const lean = pool(true);
    try {
      lean.pool.send(5, `127.0.0.1:${port}`, heartbeat(7));
      const first = await lean.outcome(5);
      assert.ok(first.type === 'callFailed' && first.status.code === StatusCode.UNAVAILABLE, JSON.stringify(first));
      const began = Date.now();
      lean.pool.send(6, `127.0.0.1:${port}`, heartbeat(7));
      const second = await lean.outcome(6);
      assert.ok(second.type === 'callFailed' && /back-off/.test(second.status.details), JSON.stringify(second));
      assert.ok(Date.now() - began < 250, 'failed at once, not at the deadline');
      // A server on that port now: after the back-off the next call is dialled and answered.
      const late = await PeerServer.listen(`127.0.0.1:${port}`, {
        handler,
        credentials: insecureServerCredentials(),
      });
      try {
        // Bounded: one call every 50 ms until the back-off has passed and a call is answered.
        let answered: TransportInput | undefined;
        for (let id = 7; id < 100 && answered?.type !== 'response'; id++) {
          lean.pool.send(id, `127.0.0.1:${port}`, heartbeat(7));
          answered = await lean.outcome(id);
          if (answered.type !== 'response') await new Promise((resolve) => setTimeout(resolve, 50));
        }
        assert.equal(answered?.type, 'response', JSON.stringify(answered));
      } finally {
        await late.close();
      }
    } finally {
      lean.pool.close();
    }
  });

  it('drops a connection whose keepalive ping goes unanswered: a call on it fails UNAVAILABLE before its deadline', async function () {
    const proxy = await SilenceableProxy.start(Number(address.split(':')[1]));
    const lean = pool(true, {
      keepaliveTimeMs: 150,
      keepaliveTimeoutMs: 150,
      minPingIntervalWithoutDataMs: 150,
      unaryDeadlineMs: 10_000,
    });
    try {
      lean.pool.send(20, proxy.address, heartbeat(7));
      assert.equal((await lean.outcome(20)).type, 'response');
      proxy.silence();
      const began = Date.now();
      lean.pool.send(21, proxy.address, heartbeat(7));
      const cut = await lean.outcome(21);
      assert.ok(cut.type === 'callFailed' && cut.status.code === StatusCode.UNAVAILABLE, JSON.stringify(cut));
      assert.ok(
        Date.now() - began < 5_000,
        `dropped by the keepalive, not the 10 s deadline (${Date.now() - began} ms)`,
      );
    } finally {
      lean.pool.close();
      proxy.close();
    }
  });

  describe('over mutual TLS', function () {
    let pki: ThrowawayPki;
    let tlsServer: PeerServer;
    let tlsAddress: string;

    before(async function () {
      pki = new ThrowawayPki();
      pki.ca('cluster-ca');
      pki.ca('other-ca');
      const serverCert = pki.issue('cluster-ca', 'node-0', [
        'DNS:localhost',
        `URI:${identityUri({ role: 'peer', clusterId: 'c1', name: 'node-0' })}`,
      ]);
      tlsServer = await PeerServer.listen('127.0.0.1:0', {
        handler,
        credentials: serverCredentials(pki.material('cluster-ca', serverCert)),
      });
      tlsAddress = `127.0.0.1:${tlsServer.port}`;
    });

    after(async function () {
      await tlsServer?.close();
      pki?.dispose();
    });

    async function heartbeatOver(caName: string, clusterId: string, serverName: string): Promise<TransportInput> {
      const material = pki.material(
        caName,
        pki.issue(caName, `client-${caName}-${clusterId}-${serverName}`, ['DNS:client']),
      );
      let outcome: TransportInput | undefined;
      const p = new PeerPool({
        credentials: clientCredentials(material),
        deliver: (input) => {
          outcome = input;
        },
        limits: { unaryDeadlineMs: 3_000 },
        lean: { dial: peerHttp2Dial({ mode: 'mtls', material, clusterId }, serverName), headers: {} },
      });
      p.send(1, tlsAddress, heartbeat(7));
      await waitFor(() => outcome !== undefined, 'the outcome');
      p.close();
      return outcome!;
    }

    it('talks to a peer of its cluster signed by its CA, under the expected name', async function () {
      const outcome = await heartbeatOver('cluster-ca', 'c1', 'localhost');
      assert.equal(outcome.type, 'response', JSON.stringify(outcome));
    });

    it('drops a connection attempt that does not connect within connectTimeoutMs and backs off', async function () {
      // A loopback black hole: TCP is accepted, TLS never answered (as a SYN into a partition never is).
      const sockets: net.Socket[] = [];
      const hole = net.createServer((socket) => sockets.push(socket));
      await new Promise<void>((resolve) => hole.listen(0, '127.0.0.1', resolve));
      const port = (hole.address() as net.AddressInfo).port;
      const material = pki.material('cluster-ca', pki.issue('cluster-ca', 'client-hole', ['DNS:client']));
      const seen = new Map<number, TransportInput>();
      const p = new PeerPool({
        credentials: clientCredentials(material),
        deliver: (input) => seen.set(input.requestId, input),
        limits: { unaryDeadlineMs: 10_000, connectTimeoutMs: 300, initialReconnectBackoffMs: 5_000 },
        lean: { dial: peerHttp2Dial({ mode: 'mtls', material, clusterId: 'c1' }, 'localhost'), headers: {} },
      });
      try {
        const began = Date.now();
        p.send(1, `127.0.0.1:${port}`, heartbeat(7));
        await waitFor(() => seen.has(1), 'the first outcome');
        const first = seen.get(1)!;
        assert.ok(first.type === 'callFailed' && first.status.code === StatusCode.UNAVAILABLE, JSON.stringify(first));
        assert.ok(
          Date.now() - began < 5_000,
          `failed at the connect bound, not the 10 s deadline (${Date.now() - began} ms)`,
        );
        p.send(2, `127.0.0.1:${port}`, heartbeat(7));
        await waitFor(() => seen.has(2), 'the second outcome', 1_000);
        const second = seen.get(2)!;
        assert.ok(second.type === 'callFailed' && /back-off/.test(second.status.details), JSON.stringify(second));
      } finally {
        p.close();
        for (const socket of sockets) socket.destroy();
        await new Promise<void>((resolve) => hole.close(() => resolve()));
      }
    });

    it('refuses a server signed by another CA, under another name, or of another cluster', async function () {
      for (const [ca, cluster, name] of [
        ['other-ca', 'c1', 'localhost'],
        ['cluster-ca', 'c1', 'node-9.elsewhere'],
        ['cluster-ca', 'c2', 'localhost'],
      ] as const) {
        const outcome = await heartbeatOver(ca, cluster, name);
        assert.ok(
          outcome.type === 'callFailed' && outcome.status.code === StatusCode.UNAVAILABLE,
          `${ca} ${cluster} ${name}: ${JSON.stringify(outcome)}`,
        );
      }
    });
  });
});

async function freePort(): Promise<number> {
  const probe = net.createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const port = (probe.address() as net.AddressInfo).port;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}
