// Store writes forwarded together: StoreClientPool coalesces the proposals of one event-loop turn into
// one ProposeStream request on an open call (or one ProposeBatch call), each command answered on its own;
// the server bounds the batch; a server without either gets single Propose calls.
import assert from 'node:assert/strict';
import * as grpc from '@grpc/grpc-js';
import * as pb from '../../proto/gen/svc/store/v1/store.js';
import type { JsonObject } from '../../store/document-store.js';
import { encodeCommand, resultFromMessage } from '../../store/command.js';
import { DEFAULT_STORE_LIMITS } from '../../store/limits.js';
import { StoreCallError, StoreClientPool } from '../../transports/store-rpc/store-service.js';
import { probeCredentials, startOldStoreServer } from '../node/grpc-probe.js';
import { metricValue } from '../node/harness.js';
import { InProcessCluster } from '../node/in-process-cluster.js';
import { insecureTransport, STORE_POOL_TRANSPORTS, tlsTransport } from './store-pool-transports.js';

const DEADLINE_MS = 10_000;
const put = (key: string, value: JsonObject, requestId: string) => encodeCommand({ op: 'put', key, value, requestId });

for (const unaryClient of STORE_POOL_TRANSPORTS)
  describe(`node: forwarded writes coalesced per loop turn (ProposeStream, ProposeBatch) (${unaryClient} unary calls)`, function () {
    this.timeout(60_000);
    const cluster = new InProcessCluster();
    let pool: StoreClientPool;
    let unaryPool: StoreClientPool;

    before(async function () {
      await cluster.start(['b1', 'b2', 'b3'], ['b1', 'b2', 'b3', 'probe']);
      await cluster.waitLeader(30_000);
      const transportOptions = tlsTransport(unaryClient, cluster.pki.tls('b3'), cluster.pki.clusterId);
      pool = new StoreClientPool(transportOptions);
      unaryPool = new StoreClientPool({ ...transportOptions, overStreams: false });
    });

    after(async function () {
      pool?.close();
      unaryPool?.close();
      await cluster.stop();
    });

    for (const transport of ['ProposeStream', 'ProposeBatch'] as const) {
      it(`sends concurrent proposals as one ${transport} request and answers each with its own seqno and outcome`, async function () {
        const leader = await cluster.waitLeader();
        const client = transport === 'ProposeStream' ? pool : unaryPool;
        const before = { ...client.callCounts };
        const count = 40;
        const answers = await Promise.all(
          Array.from({ length: count }, (_, i) =>
            client.propose(
              leader.grpcAddress,
              put(`${transport}/${i}`, { i }, `${transport}-${i}`),
              Date.now() + DEADLINE_MS,
            ),
          ),
        );
        const sent = (kind: keyof typeof before) => client.callCounts[kind] - before[kind];
        assert.deepEqual(
          { stream: sent('proposeStream'), batch: sent('proposeBatch'), single: sent('propose') },
          transport === 'ProposeStream' ? { stream: 1, batch: 0, single: 0 } : { stream: 0, batch: 1, single: 0 },
        );
        const seqs = answers.map((a) => a.seq);
        assert.equal(new Set(seqs).size, count, 'a distinct entry per command');
        for (let i = 1; i < count; i++) assert.ok(seqs[i]! > seqs[i - 1]!, 'seqnos follow the order proposed');
        for (const a of answers) assert.equal(resultFromMessage(a.result).outcome, 'applied');
        for (let i = 0; i < count; i++) assert.deepEqual((await leader.store.get(`${transport}/${i}`))?.value, { i });
      });
    }

    it('sends a lone proposal as a ProposeStream message too, on the same call', async function () {
      const leader = await cluster.waitLeader();
      const opened = pool.proposeStreamCalls;
      const before = pool.callCounts.proposeStream;
      const answer = await pool.propose(
        leader.grpcAddress,
        put('lone/1', { n: 1 }, 'lone-1'),
        Date.now() + DEADLINE_MS,
      );
      assert.equal(resultFromMessage(answer.result).outcome, 'applied');
      assert.equal(pool.callCounts.proposeStream - before, 1);
      assert.equal(pool.proposeStreamCalls, opened, 'no new call');
    });

    it('refuses a ProposeStream request above proposeBatchCountMax whole, as RESOURCE_EXHAUSTED', async function () {
      const leader = await cluster.waitLeader();
      const transportOptions = tlsTransport(unaryClient, cluster.pki.tls('b3'), cluster.pki.clusterId);
      const greedy = new StoreClientPool({
        ...transportOptions,
        proposeBatchCountMax: DEFAULT_STORE_LIMITS.proposeBatchCountMax + 10,
      });
      try {
        const outcomes = await Promise.allSettled(
          Array.from({ length: DEFAULT_STORE_LIMITS.proposeBatchCountMax + 1 }, (_, i) =>
            greedy.propose(leader.grpcAddress, put(`greedy/${i}`, { i }, `greedy-${i}`), Date.now() + DEADLINE_MS),
          ),
        );
        assert.equal(greedy.callCounts.proposeStream, 1);
        for (const o of outcomes)
          assert.ok(
            o.status === 'rejected' &&
              o.reason instanceof StoreCallError &&
              o.reason.code === grpc.status.RESOURCE_EXHAUSTED,
          );
        assert.equal(await leader.store.get('greedy/0'), null, 'nothing of a refused request was written');
      } finally {
        greedy.close();
      }
    });

    it("hands the leader's concurrent writes to its engine in batches (svc_proposal_batch_size)", async function () {
      const leader = await cluster.waitLeader();
      const metrics = async () => await (await fetch(`${leader.metricsAddress}/metrics`)).text();
      const count = (text: string, name: string) => metricValue(text, name) ?? 0;
      const before = await metrics();
      const writes = 50;
      await Promise.all(Array.from({ length: writes }, (_, i) => leader.store.put(`together/${i}`, { i })));
      const after = await metrics();
      const proposals = count(after, 'svc_proposal_batch_size_sum') - count(before, 'svc_proposal_batch_size_sum');
      const steps = count(after, 'svc_proposal_batch_size_count') - count(before, 'svc_proposal_batch_size_count');
      assert.equal(proposals, writes, 'every write was proposed once');
      assert.ok(steps <= writes / 5, `${writes} concurrent writes took ${steps} engine steps`);
    });

    it('fails only the bad command of a batch, and a refusal by a follower names the leader for each', async function () {
      const leader = await cluster.waitLeader();
      const [good, bad, alsoGood] = await Promise.allSettled([
        pool.propose(leader.grpcAddress, put('mixed/a', { n: 1 }, 'mixed-a'), Date.now() + DEADLINE_MS),
        pool.propose(leader.grpcAddress, new TextEncoder().encode('{not json'), Date.now() + DEADLINE_MS),
        pool.propose(leader.grpcAddress, put('mixed/b', { n: 2 }, 'mixed-b'), Date.now() + DEADLINE_MS),
      ]);
      assert.equal(good.status, 'fulfilled', String(good.status === 'rejected' ? good.reason : ''));
      assert.equal(alsoGood.status, 'fulfilled');
      assert.ok(
        bad.status === 'rejected' &&
          bad.reason instanceof StoreCallError &&
          bad.reason.code === grpc.status.INVALID_ARGUMENT,
        String(bad.status === 'rejected' ? bad.reason : 'fulfilled'),
      );

      const follower = cluster.followers()[0]!;
      const refused = await Promise.allSettled(
        [0, 1, 2].map((i) =>
          pool.propose(follower.grpcAddress, put(`refused/${i}`, { i }, `refused-${i}`), Date.now() + DEADLINE_MS),
        ),
      );
      for (const r of refused) {
        assert.ok(r.status === 'rejected' && r.reason instanceof StoreCallError, 'refused');
        assert.equal(r.reason.code, grpc.status.FAILED_PRECONDITION);
        assert.equal(r.reason.leaderHint, leader.grpcAddress);
      }
    });

    it('refuses a batch above proposeBatchCountMax as RESOURCE_EXHAUSTED and a malformed one as INVALID_ARGUMENT', async function () {
      const leader = await cluster.waitLeader();
      const { credentials, options } = probeCredentials(cluster.pki.tls('b3'), cluster.pki.clusterId);
      const client = new grpc.Client(leader.grpcAddress, credentials, options);
      const call = (bytes: Buffer) =>
        new Promise<grpc.ServiceError | null>((resolve) => {
          client.makeUnaryRequest(
            pb.StoreService.proposeBatch.path,
            (b: Buffer) => b,
            (b: Buffer) => b,
            bytes,
            { deadline: Date.now() + DEADLINE_MS },
            (err) => resolve(err),
          );
        });
      try {
        const items = Array.from({ length: DEFAULT_STORE_LIMITS.proposeBatchCountMax + 1 }, (_, i) => ({
          command: put(`big/${i}`, { i }, `big-${i}`),
          timeoutMs: 0,
          requestId: `big-${i}`,
        }));
        const tooMany = await call(Buffer.from(pb.ProposeBatchRequest.encode({ items }).finish()));
        assert.equal(tooMany?.code, grpc.status.RESOURCE_EXHAUSTED);
        assert.equal(await leader.store.get('big/0'), null, 'nothing of a refused batch was written');
        const garbage = await call(Buffer.from([0xff, 0xff, 0xff, 0x07]));
        assert.equal(garbage?.code, grpc.status.INVALID_ARGUMENT);
      } finally {
        client.close();
      }
    });

    it('falls back to single Propose calls against a server without ProposeStream and ProposeBatch', async function () {
      const old = await startOldStoreServer('propose', (call) =>
        Buffer.from(
          pb.ProposeResponse.encode({
            seq: call,
            result: {
              outcome: pb.Outcome.OUTCOME_APPLIED,
              version: call,
              existed: false,
              actualVersion: 0,
              reason: '',
            },
          }).finish(),
        ),
      );
      const plain = new StoreClientPool({ ...insecureTransport(unaryClient) });
      try {
        const to = old.address;
        const answers = await Promise.all(
          [0, 1, 2].map((i) => plain.propose(to, put(`old/${i}`, { i }, `old-${i}`), Date.now() + DEADLINE_MS)),
        );
        assert.deepEqual(
          answers.map((a) => resultFromMessage(a.result).outcome),
          ['applied', 'applied', 'applied'],
        );
        assert.equal(old.calls, 3);
        assert.equal(plain.callCounts.proposeStream, 1, 'the stream tried once, UNIMPLEMENTED');
        assert.equal(plain.callCounts.proposeBatch, 1, 'the batch tried once, UNIMPLEMENTED');
        await Promise.all(
          [3, 4].map((i) => plain.propose(to, put(`old/${i}`, { i }, `old-${i}`), Date.now() + DEADLINE_MS)),
        );
        assert.equal(plain.callCounts.proposeBatch, 1, 'not tried again');
        assert.equal(plain.callCounts.proposeStream, 1, 'not tried again');
        assert.equal(old.calls, 5);
      } finally {
        plain.close();
        old.stop();
      }
    });
  });
