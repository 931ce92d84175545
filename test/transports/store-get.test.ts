// svc.store.v1 Get and GetStream: a client's read of one key at any member. Against a server whose answers
// the test controls: reads share one GetStream call, each answered under its own id (found or not, or its own
// refusal); a member without GetStream gets unary Get calls. Then on a real 3-node cluster (mTLS, a member's
// certificate): a read at a follower, over the stream and as a unary call, sees a write the leader
// acknowledged before it.
import assert from 'node:assert/strict';
import * as grpc from '@grpc/grpc-js';
import * as pb from '../../proto/gen/svc/store/v1/store.js';
import {
  StoreCallError,
  StoreClientPool,
  storeService,
  storeServiceDefinition,
  type StoreServiceHandler,
} from '../../transports/store-rpc/store-service.js';
import { startOldStoreServer } from '../node/grpc-probe.js';
import { InProcessCluster } from '../node/in-process-cluster.js';
import { insecureTransport, STORE_POOL_TRANSPORTS, tlsTransport } from './store-pool-transports.js';

const DEADLINE_MS = 10_000;

for (const unaryClient of STORE_POOL_TRANSPORTS)
  describe(`store-rpc: Get and GetStream (a client reads one key at any member) (${unaryClient} unary calls)`, function () {
    this.timeout(60_000);
    const stored = new Map<string, { valueJson: string; version: number }>([
      ['a', { valueJson: '{"v":"x"}', version: 3 }],
      ['b', { valueJson: '{"v":"y"}', version: 5 }],
    ]);
    const handler: StoreServiceHandler = {
      propose: () => Promise.reject(new StoreCallError(grpc.status.UNIMPLEMENTED, 'not in this test')),
      readIndex: () => Promise.reject(new StoreCallError(grpc.status.UNIMPLEMENTED, 'not in this test')),
      get: (key) => {
        if (key === 'cut-off')
          return Promise.reject(new StoreCallError(grpc.status.UNAVAILABLE, 'no read index in time'));
        const found = stored.get(key);
        return Promise.resolve(found ? { found: true, ...found } : { found: false, valueJson: '', version: 0 });
      },
    };
    const service = storeService({
      handler,
      commandBytesMax: 1024,
      callDeadlineMs: 5_000,
      proposeBatchCountMax: 8,
      streamOpenRequestCountMax: 64,
    });
    const server = new grpc.Server();
    let address = '';
    const pool = new StoreClientPool({ ...insecureTransport(unaryClient) });

    before(async () => {
      server.addService(storeServiceDefinition(), service.implementation);
      const port = await new Promise<number>((resolve, reject) =>
        server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, p) =>
          err ? reject(err) : resolve(p),
        ),
      );
      address = `127.0.0.1:${port}`;
    });
    after(() => {
      pool.close();
      server.forceShutdown();
    });

    it('sends concurrent reads on one GetStream call, each answered with its own key, a missing key as not found', async () => {
      const keys = ['a', 'b', 'missing', 'a', 'b', 'missing', 'a', 'b'];
      const answers = await Promise.all(keys.map((key) => pool.get(address, key, Date.now() + DEADLINE_MS)));
      answers.forEach((answer, i) => {
        const expected = stored.get(keys[i]!);
        assert.deepEqual(
          answer,
          expected ? { found: true, ...expected } : { found: false, valueJson: '', version: 0 },
          keys[i],
        );
      });
      assert.equal(pool.callCounts.get, keys.length);
      assert.equal(pool.callCounts.getUnary, 0, 'no unary call: every read went on the stream');
      assert.equal(service.openStreamCount(), 1, 'one call carried them all');
    });

    it('fails one read with its own status and answers the others', async () => {
      const [refused, fine] = await Promise.allSettled([
        pool.get(address, 'cut-off', Date.now() + DEADLINE_MS),
        pool.get(address, 'a', Date.now() + DEADLINE_MS),
      ]);
      assert.equal(refused.status, 'rejected');
      const err = (refused as PromiseRejectedResult).reason as unknown;
      assert.ok(err instanceof StoreCallError && err.code === grpc.status.UNAVAILABLE, String(err));
      assert.deepEqual(fine.status === 'fulfilled' ? fine.value : null, { found: true, ...stored.get('a')! });
    });

    it('reads with unary Get calls from a member without GetStream, and does not try the stream again', async () => {
      const old = await startOldStoreServer('get', (call) =>
        Buffer.from(pb.GetResponse.encode({ found: true, valueJson: `{"call":${call}}`, version: call }).finish()),
      );
      const fresh = new StoreClientPool({ ...insecureTransport(unaryClient) });
      try {
        const first = await fresh.get(old.address, 'k', Date.now() + DEADLINE_MS);
        assert.equal(first.found, true);
        assert.equal((await fresh.get(old.address, 'k', Date.now() + DEADLINE_MS)).version, 2);
        assert.equal(old.calls, 2);
        assert.equal(fresh.callCounts.getUnary, 2);
      } finally {
        fresh.close();
        old.stop();
      }
    });
  });

for (const unaryClient of STORE_POOL_TRANSPORTS)
  describe(`store-rpc: Get on a 3-node cluster (${unaryClient} unary calls)`, function () {
    this.timeout(90_000);
    const cluster = new InProcessCluster();

    before(async function () {
      await cluster.start(['g1', 'g2', 'g3'], ['g1', 'g2', 'g3']);
      await cluster.waitLeader(30_000);
    });
    after(() => cluster.stop());

    it('reads at a follower, over the stream and as a unary call, what the leader acknowledged before', async () => {
      const leader = await cluster.waitLeader();
      const follower = cluster.followers()[0]!;
      // svc.store.v1 serves members' peer certificates only: the reader holds g3's, with the cluster id.
      const transportOptions = tlsTransport(unaryClient, cluster.pki.tls('g3'), cluster.pki.clusterId);
      const streamed = new StoreClientPool(transportOptions);
      const unary = new StoreClientPool({ ...transportOptions, overStreams: false });
      try {
        const { version } = await leader.store.put('get/a', { v: 'one' });
        for (const pool of [streamed, unary]) {
          assert.deepEqual(await pool.get(follower.grpcAddress, 'get/a', Date.now() + DEADLINE_MS), {
            found: true,
            valueJson: '{"v":"one"}',
            version,
          });
          assert.deepEqual(await pool.get(leader.grpcAddress, 'get/none', Date.now() + DEADLINE_MS), {
            found: false,
            valueJson: '',
            version: 0,
          });
          const bad = await pool.get(follower.grpcAddress, '', Date.now() + DEADLINE_MS).then(
            () => null,
            (err: unknown) => err,
          );
          assert.ok(
            bad instanceof StoreCallError && bad.code === grpc.status.INVALID_ARGUMENT,
            `an empty key: ${String(bad)}`,
          );
        }
        assert.equal(streamed.callCounts.getUnary, 0);
        assert.equal(unary.callCounts.getUnary, 3);
      } finally {
        streamed.close();
        unary.close();
      }
    });
  });
