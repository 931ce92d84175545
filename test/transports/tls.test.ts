// Mutual TLS between peers: a certificate from the cluster CA talks; one from
// another CA, none at all, or plaintext is refused, and the server goes on
// serving the good client.
import assert from 'node:assert/strict';
import { StatusCode, type RpcRequest } from '../../engine/rpc.js';
import * as pb from '../../proto/gen/svc/replication/v1/replication.js';
import * as grpc from '@grpc/grpc-js';
import { PeerPool, type TransportInput } from '../../transports/grpc/client.js';
import { PeerServer } from '../../transports/grpc/server.js';
import { peerCertificateReads } from '../../transports/grpc/peer-identity.js';
import { clientCredentials, insecureClientCredentials, serverCredentials } from '../../transports/grpc/tls.js';
import { FakePeerHandler, waitFor } from './helpers.js';
import { ThrowawayPki } from './throwaway-pki.js';

const heartbeat: RpcRequest = { method: 'Heartbeat', body: pb.HeartbeatRequest.fromPartial({ term: 4 }) };

// Each case runs against both ways of serving unary calls: the lean path (lean-serve.ts) and grpc-js's server.
for (const leanUnary of [true, false])
  describe(`transports/grpc TLS (${leanUnary ? 'lean' : 'grpc-js'} unary serving)`, function () {
    this.timeout(60_000);
    let pki: ThrowawayPki;
    let server: PeerServer;
    let address: string;
    let handler: FakePeerHandler;
    const pools: PeerPool[] = [];

    /** call sends one heartbeat with the given credentials and returns its outcome. */
    // Peers dial each other by DNS name; naming the server 'localhost' here also keeps Node from
    // warning about an IP address used as the TLS server name.
    async function call(
      credentials: grpc.ChannelCredentials,
      channelOptions: grpc.ChannelOptions = { 'grpc.ssl_target_name_override': 'localhost' },
    ): Promise<TransportInput> {
      let outcome: TransportInput | undefined;
      const pool = new PeerPool({
        credentials,
        deliver: (input) => {
          outcome = input;
        },
        limits: { unaryDeadlineMs: 3_000 },
        channelOptions,
      });
      pools.push(pool);
      pool.send(1, address, heartbeat);
      await waitFor(() => outcome !== undefined, 'the outcome');
      pool.close();
      return outcome!;
    }

    before(async function () {
      pki = new ThrowawayPki();
      pki.ca('cluster-ca');
      pki.ca('other-ca');
      const serverCert = pki.issue('cluster-ca', 'node-0', [
        'IP:127.0.0.1',
        'DNS:localhost',
        'DNS:*.peers.svc.cluster.local',
      ]);
      handler = new FakePeerHandler().on('Heartbeat', (_id, _request, sink) => {
        sink.reply({ method: 'Heartbeat', body: pb.HeartbeatResponse.fromPartial({ acknowledged: true, term: 4 }) });
      });
      server = await PeerServer.listen('127.0.0.1:0', {
        handler,
        credentials: serverCredentials(pki.material('cluster-ca', serverCert)),
        leanUnary,
      });
      address = `127.0.0.1:${server.port}`;
    });

    it('serves its unary calls as asked', function () {
      assert.equal(server.unaryServing, leanUnary ? 'lean' : 'grpc-js');
    });

    after(async function () {
      for (const pool of pools) pool.close();
      await server?.close();
      pki?.dispose();
    });

    it('a client with a certificate from the cluster CA talks', async function () {
      const material = pki.material(
        'cluster-ca',
        pki.issue('cluster-ca', 'node-1', ['DNS:node-1.peers.svc.cluster.local']),
      );
      const outcome = await call(clientCredentials(material));
      assert.equal(outcome.type, 'response', JSON.stringify(outcome));
    });

    it('the wildcard pod-name SAN covers any pod under the peers service', async function () {
      const material = pki.material(
        'cluster-ca',
        pki.issue('cluster-ca', 'node-2', ['DNS:node-2.peers.svc.cluster.local']),
      );
      const outcome = await call(clientCredentials(material), {
        'grpc.ssl_target_name_override': 'node-7.peers.svc.cluster.local',
      });
      assert.equal(outcome.type, 'response', JSON.stringify(outcome));
      const elsewhere = await call(clientCredentials(material), {
        'grpc.ssl_target_name_override': 'node-7.other.svc.cluster.local',
      });
      assert.equal(elsewhere.type, 'callFailed', 'a name the certificate does not cover is refused');
    });

    it('refuses a client whose certificate comes from another CA, one with none, and plaintext', async function () {
      const served = handler.requests.length;
      const otherCa = pki.material('cluster-ca', pki.issue('other-ca', 'intruder', ['DNS:intruder']));
      const noCert = grpc.credentials.createSsl(Buffer.from(otherCa.ca));
      for (const [who, credentials] of [
        ['another CA', clientCredentials(otherCa)],
        ['no certificate', noCert],
        ['plaintext', insecureClientCredentials()],
      ] as const) {
        const outcome = await call(credentials);
        assert.equal(outcome.type, 'callFailed', `${who}: ${JSON.stringify(outcome)}`);
        assert.equal(
          (outcome as Extract<TransportInput, { type: 'callFailed' }>).status.code,
          StatusCode.UNAVAILABLE,
          who,
        );
      }
      assert.equal(handler.requests.length, served, 'no refused call reached the handler');
    });

    it('refuses a server whose certificate the client does not trust', async function () {
      // A good cluster certificate, but trusting only other-ca: the client must refuse the server.
      const material = pki.material('other-ca', pki.issue('cluster-ca', 'node-9', ['DNS:node-9']));
      const outcome = await call(clientCredentials(material));
      assert.equal(outcome.type, 'callFailed');
      assert.equal((outcome as Extract<TransportInput, { type: 'callFailed' }>).status.code, StatusCode.UNAVAILABLE);
    });

    it('still serves a cluster client after the refusals', async function () {
      const material = pki.material('cluster-ca', pki.issue('cluster-ca', 'node-3', ['DNS:node-3']));
      assert.equal((await call(clientCredentials(material))).type, 'response');
    });

    it('reads a client certificate once per connection, not once per call', async function () {
      // grpc-js reads the certificate afresh (TLSSocket.getPeerCertificate) on each getAuthContext(); the server
      // keys what it read on the connection's HTTP/2 session (peer-identity.ts). Without that cache, or with a
      // grpc-js whose call no longer leads to its session, every call below reads it again.
      const material = pki.material('cluster-ca', pki.issue('cluster-ca', 'node-4', ['DNS:node-4']));
      const outcomes: TransportInput[] = [];
      const pool = new PeerPool({
        credentials: clientCredentials(material),
        deliver: (input) => void outcomes.push(input),
        limits: { unaryDeadlineMs: 3_000 },
        channelOptions: { 'grpc.ssl_target_name_override': 'localhost' },
      });
      pools.push(pool);
      const before = peerCertificateReads();
      const CALLS = 10;
      for (let i = 1; i <= CALLS; i++) {
        pool.send(i, address, heartbeat);
        await waitFor(() => outcomes.length === i, `call ${i}'s outcome`);
      }
      assert.ok(
        outcomes.every((o) => o.type === 'response'),
        JSON.stringify(outcomes),
      );
      assert.equal(peerCertificateReads() - before, 1, `${CALLS} calls on one connection read the certificate once`);
      pool.close();
      // A new connection is read anew: a second client's certificate is its own.
      const other = pki.material('cluster-ca', pki.issue('cluster-ca', 'node-5', ['DNS:node-5']));
      assert.equal((await call(clientCredentials(other))).type, 'response');
      assert.equal(peerCertificateReads() - before, 2);
    });

    it('rejects material that is not PEM with a clear error', function () {
      assert.throws(() => serverCredentials({ ca: 'nope', cert: 'nope', key: 'nope' }), /ca is not PEM/);
    });
  });
