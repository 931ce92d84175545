// H2UnaryClient (transports/h2/unary-client.ts) as a drop-in for LeanUnaryClient (transports/grpc/lean-unary.ts):
// lean-unary.test.ts's cases on the new client, side by side with the old one against the node's PeerServer
// (grpc-js, with and without lean-serve): the same outcome for the same answer (message, status, details,
// x-svc-* trailers), deadlines and cancels, never an outcome inside call() or cancel(), the back-off of an
// unreachable peer, a connect timeout, a keepalive ping dropping a dead connection, and over mutual TLS the same
// server-certificate checks as the node's dial (tls.ts peerSocketDial against peerHttp2Dial).
import assert from 'node:assert/strict';
import * as net from 'node:net';
import { StatusCode, TRAILER_TERM } from '../../../engine/rpc.js';
import * as pb from '../../../proto/gen/svc/replication/v1/replication.js';
import { LeanUnaryClient } from '../../../transports/grpc/lean-unary.js';
import { resolveGrpcLimits, type GrpcLimits } from '../../../transports/grpc/limits.js';
import { methodPath } from '../../../transports/grpc/methods.js';
import { CLUSTER_ID_METADATA_KEY, identityUri } from '../../../transports/grpc/peer-identity.js';
import { PeerServer } from '../../../transports/grpc/server.js';
import {
  insecureServerCredentials,
  peerHttp2Dial,
  peerSocketDial,
  serverCredentials,
  type PeerSecurity,
} from '../../../transports/grpc/tls.js';
import type { LeanOutcome } from '../../../transports/grpc/unary-answer.js';
import { H2UnaryClient } from '../../../transports/h2/unary-client.js';
import { FakePeerHandler, SilenceableProxy, startServer, waitFor } from '../helpers.js';
import { ThrowawayPki } from '../throwaway-pki.js';

const HEARTBEAT = methodPath('Heartbeat');
const VOTE = methodPath('RequestVote');
const heartbeat = (term: number): Buffer =>
  Buffer.from(
    pb.HeartbeatRequest.encode(
      pb.HeartbeatRequest.fromPartial({ term, regionId: 1, replicationLag: { 2: 5 } }),
    ).finish(),
  );
const vote = Buffer.from(pb.VoteRequest.encode(pb.VoteRequest.fromPartial({ term: 9, candidateRegion: 1 })).finish());

type Client = H2UnaryClient | LeanUnaryClient;

function clients(
  security: PeerSecurity,
  limits: Partial<GrpcLimits> = {},
  serverName?: string,
): { h2: H2UnaryClient; lean: LeanUnaryClient; close(): void } {
  const resolved = resolveGrpcLimits({ initialReconnectBackoffMs: 300, maxReconnectBackoffMs: 600, ...limits });
  const headers = { [CLUSTER_ID_METADATA_KEY]: 'c1' };
  const h2 = new H2UnaryClient({ dial: peerSocketDial(security, serverName), headers, limits: resolved });
  const lean = new LeanUnaryClient({ dial: peerHttp2Dial(security, serverName), headers, limits: resolved });
  return {
    h2,
    lean,
    close: () => {
      h2.close();
      lean.close();
    },
  };
}

/** outcomeOf makes one call and awaits its outcome, failing if one arrives inside call() or a second arrives. */
async function outcomeOf(
  client: Client,
  to: string,
  path: string,
  request: Buffer,
  deadlineMs = 3_000,
): Promise<LeanOutcome> {
  let outcome: LeanOutcome | undefined;
  let count = 0;
  client.call(to, path, request, deadlineMs, (o) => {
    count++;
    outcome = o;
  });
  assert.equal(count, 0, 'no outcome inside call()');
  await waitFor(() => outcome !== undefined, 'the outcome');
  await new Promise((resolve) => setTimeout(resolve, 10));
  assert.equal(count, 1, 'one outcome');
  return outcome!;
}

/** comparable drops what may differ between the two clients: a transport failure's wording. */
function comparable(outcome: LeanOutcome): unknown {
  return outcome.ok
    ? outcome
    : { code: outcome.status.code, trailers: outcome.status.trailers, wire: outcome.wire.code };
}

describe('transports/h2 unary client: a drop-in for the lean unary client', function () {
  this.timeout(60_000);
  let handler: FakePeerHandler;

  before(function () {
    handler = new FakePeerHandler()
      .on('Heartbeat', (_id, request, call) => {
        if (request.method !== 'Heartbeat') throw new Error('not a heartbeat');
        if (request.body.term < 5)
          call.replyError({
            code: StatusCode.FAILED_PRECONDITION,
            details: 'stale term, 100% ü',
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
  });

  for (const leanServe of [true, false])
    describe(`against PeerServer (grpc-js${leanServe ? ' with lean-serve' : ''})`, function () {
      let server: PeerServer;
      let address: string;
      before(async function () {
        ({ server, address } = await startServer(handler, {}, [], leanServe));
      });
      after(async function () {
        await server?.close();
      });

      it("gives the lean client's outcome: an answer, and a refusal with its details and trailers", async function () {
        const { h2, lean, close } = clients({ mode: 'insecure' });
        try {
          for (const request of [heartbeat(7), heartbeat(3)]) {
            const [a, b] = [
              await outcomeOf(h2, address, HEARTBEAT, request),
              await outcomeOf(lean, address, HEARTBEAT, request),
            ];
            assert.deepEqual(a, b);
          }
          const refused = await outcomeOf(h2, address, HEARTBEAT, heartbeat(3));
          assert.ok(!refused.ok);
          assert.equal(refused.status.code, StatusCode.FAILED_PRECONDITION);
          assert.equal(refused.status.details, 'stale term, 100% ü');
          assert.deepEqual(refused.status.trailers, { [TRAILER_TERM]: '5' });
        } finally {
          close();
        }
      });

      it('ends a call at its deadline and on cancel, never inside call() or cancel()', async function () {
        const { h2, lean, close } = clients({ mode: 'insecure' });
        try {
          const [a, b] = [
            await outcomeOf(h2, address, VOTE, vote, 300),
            await outcomeOf(lean, address, VOTE, vote, 300),
          ];
          assert.deepEqual(comparable(a), comparable(b));
          assert.ok(!a.ok && a.status.code === StatusCode.DEADLINE_EXCEEDED);
          const seen: LeanOutcome[] = [];
          const cancel = h2.call(address, VOTE, vote, 5_000, (o) => seen.push(o));
          cancel();
          assert.equal(seen.length, 0, 'no outcome inside cancel()');
          await waitFor(() => seen.length > 0, 'the cancelled outcome');
          const cancelled = seen[0]!;
          assert.ok(!cancelled.ok && cancelled.status.code === StatusCode.CANCELLED);
          cancel();
          assert.ok((await outcomeOf(h2, address, HEARTBEAT, heartbeat(7))).ok, 'the connection goes on');
        } finally {
          close();
        }
      });
    });

  it('fails fast UNAVAILABLE while an unreachable peer backs off, then dials it again', async function () {
    const port = await freePort();
    const { h2, close } = clients({ mode: 'insecure' });
    try {
      const first = await outcomeOf(h2, `127.0.0.1:${port}`, HEARTBEAT, heartbeat(7));
      assert.ok(!first.ok && first.status.code === StatusCode.UNAVAILABLE, JSON.stringify(first));
      const began = Date.now();
      const second = await outcomeOf(h2, `127.0.0.1:${port}`, HEARTBEAT, heartbeat(7));
      assert.ok(!second.ok && /back-off/.test(second.status.details), JSON.stringify(second));
      assert.ok(Date.now() - began < 250, 'failed at once, not at the deadline');
      const late = await PeerServer.listen(`127.0.0.1:${port}`, { handler, credentials: insecureServerCredentials() });
      try {
        let answered: LeanOutcome | undefined;
        for (let i = 0; i < 100 && !answered?.ok; i++) {
          answered = await outcomeOf(h2, `127.0.0.1:${port}`, HEARTBEAT, heartbeat(7));
          if (!answered.ok) await new Promise((resolve) => setTimeout(resolve, 50));
        }
        assert.ok(answered?.ok, JSON.stringify(answered));
      } finally {
        await late.close();
      }
    } finally {
      close();
    }
  });

  it('drops a connection whose keepalive ping goes unanswered: a call on it fails UNAVAILABLE before its deadline', async function () {
    const { server, address } = await startServer(handler);
    const proxy = await SilenceableProxy.start(Number(address.split(':')[1]));
    const { h2, close } = clients(
      { mode: 'insecure' },
      { keepaliveTimeMs: 150, keepaliveTimeoutMs: 150, minPingIntervalWithoutDataMs: 150 },
    );
    try {
      assert.ok((await outcomeOf(h2, proxy.address, HEARTBEAT, heartbeat(7))).ok);
      proxy.silence();
      const began = Date.now();
      const cut = await outcomeOf(h2, proxy.address, HEARTBEAT, heartbeat(7), 10_000);
      assert.ok(!cut.ok && cut.status.code === StatusCode.UNAVAILABLE, JSON.stringify(cut));
      assert.ok(
        Date.now() - began < 5_000,
        `dropped by the keepalive, not the 10 s deadline (${Date.now() - began} ms)`,
      );
    } finally {
      close();
      proxy.close();
      await server.close();
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

    async function heartbeatOver(
      caName: string,
      clusterId: string,
      serverName: string,
    ): Promise<[LeanOutcome, LeanOutcome]> {
      const material = pki.material(
        caName,
        pki.issue(caName, `client-${caName}-${clusterId}-${serverName}`, ['DNS:client']),
      );
      const { h2, lean, close } = clients({ mode: 'mtls', material, clusterId }, {}, serverName);
      try {
        return [
          await outcomeOf(h2, tlsAddress, HEARTBEAT, heartbeat(7)),
          await outcomeOf(lean, tlsAddress, HEARTBEAT, heartbeat(7)),
        ];
      } finally {
        close();
      }
    }

    it('talks to a peer of its cluster signed by its CA, under the expected name', async function () {
      const [h2, lean] = await heartbeatOver('cluster-ca', 'c1', 'localhost');
      assert.ok(h2.ok, JSON.stringify(h2));
      assert.deepEqual(h2, lean);
    });

    it('refuses a server signed by another CA, under another name, or of another cluster, as the lean dial does', async function () {
      for (const [ca, cluster, name] of [
        ['other-ca', 'c1', 'localhost'],
        ['cluster-ca', 'c1', 'node-9.elsewhere'],
        ['cluster-ca', 'c2', 'localhost'],
      ] as const) {
        const [h2, lean] = await heartbeatOver(ca, cluster, name);
        assert.ok(
          !h2.ok && h2.status.code === StatusCode.UNAVAILABLE,
          `${ca} ${cluster} ${name}: ${JSON.stringify(h2)}`,
        );
        assert.ok(!lean.ok && lean.status.code === StatusCode.UNAVAILABLE, `lean: ${JSON.stringify(lean)}`);
      }
    });

    it('drops a connection attempt that does not connect within connectTimeoutMs and backs off', async function () {
      // A loopback black hole: TCP is accepted, TLS never answered (as a SYN into a partition never is).
      const sockets: net.Socket[] = [];
      const hole = net.createServer((socket) => sockets.push(socket));
      await new Promise<void>((resolve) => hole.listen(0, '127.0.0.1', resolve));
      const port = (hole.address() as net.AddressInfo).port;
      const material = pki.material('cluster-ca', pki.issue('cluster-ca', 'client-hole', ['DNS:client']));
      const { h2, close } = clients(
        { mode: 'mtls', material, clusterId: 'c1' },
        { connectTimeoutMs: 300, initialReconnectBackoffMs: 5_000 },
        'localhost',
      );
      try {
        const began = Date.now();
        const first = await outcomeOf(h2, `127.0.0.1:${port}`, HEARTBEAT, heartbeat(7), 10_000);
        assert.ok(!first.ok && first.status.code === StatusCode.UNAVAILABLE, JSON.stringify(first));
        assert.ok(Date.now() - began < 5_000, `failed at the connect bound (${Date.now() - began} ms)`);
        const second = await outcomeOf(h2, `127.0.0.1:${port}`, HEARTBEAT, heartbeat(7), 10_000);
        assert.ok(!second.ok && /back-off/.test(second.status.details), JSON.stringify(second));
      } finally {
        close();
        for (const socket of sockets) socket.destroy();
        await new Promise<void>((resolve) => hole.close(() => resolve()));
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
