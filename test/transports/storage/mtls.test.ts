// A real grpc-js mTLS handshake with certificates from cli/certs: a client holding a
// certificate from the cluster CA is served; one from another CA, or with none, is refused.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { createAdminCert, createClusterCa, createNodeCert } from '../../../cli/certs/certs.js';
import { clientCredentials } from '../../../transports/grpc/tls.js';
import { makeTempDir, removeTempDir } from './helpers.js';

const identity = (b: Buffer): Buffer => b;
const echoService: grpc.ServiceDefinition = {
  echo: {
    path: '/svc.test.Echo/Echo',
    requestStream: false,
    responseStream: false,
    originalName: 'echo',
    requestSerialize: identity,
    requestDeserialize: identity,
    responseSerialize: identity,
    responseDeserialize: identity,
  },
};
const EchoClient = grpc.makeGenericClientConstructor(echoService, 'Echo');
const CALL_DEADLINE_MS = 5000;

describe('certs: grpc-js mutual TLS', function () {
  this.timeout(30_000);
  let dir: string;
  let server: grpc.Server;
  let port: number;
  const pem = async (path: string): Promise<Buffer> => readFile(join(dir, path));

  before(async () => {
    dir = await makeTempDir('mtls');
    await createClusterCa({ dir: join(dir, 'cluster') });
    await createNodeCert({
      clusterId: 'c1',
      dir: join(dir, 'cluster'),
      name: 'svc-0',
      peersService: 'peers',
      namespace: 'ns',
      podNames: ['svc-0'],
    });
    await createNodeCert({
      clusterId: 'c1',
      dir: join(dir, 'cluster'),
      name: 'svc-1',
      peersService: 'peers',
      namespace: 'ns',
    });
    await createAdminCert({ dir: join(dir, 'cluster'), name: 'ops', clusterId: 'c1' });
    await createClusterCa({ dir: join(dir, 'foreign') });
    await createNodeCert({
      clusterId: 'c1',
      dir: join(dir, 'foreign'),
      name: 'svc-1',
      peersService: 'peers',
      namespace: 'ns',
    });

    server = new grpc.Server();
    server.addService(echoService, {
      echo: (call: grpc.ServerUnaryCall<Buffer, Buffer>, callback: grpc.sendUnaryData<Buffer>) =>
        callback(null, call.request),
    });
    const credentials = grpc.ServerCredentials.createSsl(
      await pem('cluster/ca.crt'),
      [{ cert_chain: await pem('cluster/svc-0.crt'), private_key: await pem('cluster/svc-0.key') }],
      true,
    );
    port = await new Promise<number>((resolve, reject) =>
      server.bindAsync('127.0.0.1:0', credentials, (err, bound) => (err ? reject(err) : resolve(bound))),
    );
  });
  after(async () => {
    server.forceShutdown();
    await removeTempDir(dir);
  });

  // The server listens on 127.0.0.1; the TLS name checked is a pod's DNS name, as between real peers
  // (dialling by IP would also match the 127.0.0.1 SAN, but Node warns about IP server names).
  async function call(
    trust: string,
    client: { key: string; cert: string } | null,
    serverName = 'svc-0.peers.ns.svc.cluster.local',
  ): Promise<Buffer> {
    const options: grpc.ClientOptions = {
      'grpc.ssl_target_name_override': serverName,
      'grpc.default_authority': serverName,
    };
    const credentials =
      client === null
        ? grpc.credentials.createSsl(await pem(trust))
        : grpc.credentials.createSsl(await pem(trust), await pem(client.key), await pem(client.cert));
    const stub = new EchoClient(`127.0.0.1:${port}`, credentials, options);
    try {
      return await new Promise<Buffer>((resolve, reject) => {
        stub.makeUnaryRequest(
          '/svc.test.Echo/Echo',
          identity,
          identity,
          Buffer.from('ping'),
          { deadline: Date.now() + CALL_DEADLINE_MS },
          (err: grpc.ServiceError | null, value?: Buffer) => (err ? reject(err) : resolve(value!)),
        );
      });
    } finally {
      stub.close();
    }
  }

  it('serves a peer whose certificate the cluster CA signed (by pod name, a later pod name, localhost)', async () => {
    const peer = { key: 'cluster/svc-1.key', cert: 'cluster/svc-1.crt' };
    assert.equal((await call('cluster/ca.crt', peer)).toString(), 'ping');
    assert.equal((await call('cluster/ca.crt', peer, 'svc-9.peers.ns.svc.cluster.local')).toString(), 'ping');
    assert.equal((await call('cluster/ca.crt', peer, 'localhost')).toString(), 'ping');
  });

  it('is refused by a client that dials a name the certificate does not carry', async () => {
    await assert.rejects(
      call(
        'cluster/ca.crt',
        { key: 'cluster/svc-1.key', cert: 'cluster/svc-1.crt' },
        'svc-0.peers.other.svc.cluster.local',
      ),
      (err: grpc.ServiceError) => err.code === grpc.status.UNAVAILABLE,
    );
  });

  it('refuses a client certificate from another CA', async () => {
    await assert.rejects(
      call('cluster/ca.crt', { key: 'foreign/svc-1.key', cert: 'foreign/svc-1.crt' }),
      (err: grpc.ServiceError) => err.code === grpc.status.UNAVAILABLE,
    );
  });

  it('refuses a client without a certificate', async () => {
    await assert.rejects(
      call('cluster/ca.crt', null),
      (err: grpc.ServiceError) => err.code === grpc.status.UNAVAILABLE,
    );
  });

  it('is refused by a client that trusts only another CA', async () => {
    await assert.rejects(
      call('foreign/ca.crt', { key: 'foreign/svc-1.key', cert: 'foreign/svc-1.crt' }),
      (err: grpc.ServiceError) => err.code === grpc.status.UNAVAILABLE,
    );
  });

  it('takes an admin certificate as a client, but TLS itself refuses it as a server (extendedKeyUsage clientAuth only)', async () => {
    assert.equal(
      (await call('cluster/ca.crt', { key: 'cluster/ops.key', cert: 'cluster/ops.crt' }, 'localhost')).toString(),
      'ping',
    );
    const rogue = new grpc.Server();
    rogue.addService(echoService, {
      echo: (c: grpc.ServerUnaryCall<Buffer, Buffer>, cb: grpc.sendUnaryData<Buffer>) => cb(null, c.request),
    });
    const credentials = grpc.ServerCredentials.createSsl(
      await pem('cluster/ca.crt'),
      [{ cert_chain: await pem('cluster/ops.crt'), private_key: await pem('cluster/ops.key') }],
      false,
    );
    const roguePort = await new Promise<number>((resolve, reject) =>
      rogue.bindAsync('127.0.0.1:0', credentials, (err, bound) => (err ? reject(err) : resolve(bound))),
    );
    const stub = new EchoClient(
      `127.0.0.1:${roguePort}`,
      grpc.credentials.createSsl(
        await pem('cluster/ca.crt'),
        await pem('cluster/svc-1.key'),
        await pem('cluster/svc-1.crt'),
      ),
      { 'grpc.ssl_target_name_override': 'localhost', 'grpc.default_authority': 'localhost' },
    );
    try {
      await assert.rejects(
        new Promise<Buffer>((resolve, reject) => {
          stub.makeUnaryRequest(
            '/svc.test.Echo/Echo',
            identity,
            identity,
            Buffer.from('ping'),
            { deadline: Date.now() + CALL_DEADLINE_MS },
            (err: grpc.ServiceError | null, value?: Buffer) => (err ? reject(err) : resolve(value!)),
          );
        }),
        (err: grpc.ServiceError) => err.code === grpc.status.UNAVAILABLE,
      );
    } finally {
      stub.close();
      rogue.forceShutdown();
    }
  });

  it('refuses, as a client expecting a peer of its cluster, a server of another cluster from the same CA', async () => {
    const material = {
      ca: await pem('cluster/ca.crt'),
      cert: await pem('cluster/svc-1.crt'),
      key: await pem('cluster/svc-1.key'),
    };
    const dial = async (peerOfCluster: string): Promise<Buffer> => {
      const stub = new EchoClient(`127.0.0.1:${port}`, clientCredentials(material, { peerOfCluster }), {
        'grpc.ssl_target_name_override': 'localhost',
        'grpc.default_authority': 'localhost',
      });
      try {
        return await new Promise<Buffer>((resolve, reject) => {
          stub.makeUnaryRequest(
            '/svc.test.Echo/Echo',
            identity,
            identity,
            Buffer.from('ping'),
            { deadline: Date.now() + CALL_DEADLINE_MS },
            (err: grpc.ServiceError | null, value?: Buffer) => (err ? reject(err) : resolve(value!)),
          );
        });
      } finally {
        stub.close();
      }
    };
    assert.equal((await dial('c1')).toString(), 'ping');
    await assert.rejects(
      dial('c2'),
      (err: grpc.ServiceError) => err.code === grpc.status.UNAVAILABLE && /cluster c1, not of c2/.test(err.details),
    );
  });
});
