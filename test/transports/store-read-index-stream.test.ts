// ReadIndexStream: a follower's read indexes go to the leader as messages on one open call. Against a
// server whose answers the test controls: requests share one call and get their own answers; refusals
// keep their code and leader hint; a request times out alone; ended calls reopen; an old peer gets
// unary ReadIndex calls; bad and excess requests get clear statuses; an idle call is ended. Then on a
// real 3-node cluster (mTLS): a follower's reads use the stream, and a stopping leader ends it.
import assert from 'node:assert/strict';
import * as grpc from '@grpc/grpc-js';
import * as pb from '../../proto/gen/svc/store/v1/store.js';
import {
  StoreCallError,
  StoreClientPool,
  storeService,
  storeServiceDefinition,
  type ReadIndexAskerClaim,
  type StoreServiceHandler,
} from '../../transports/store-rpc/store-service.js';
import { startOldStoreServer } from '../node/grpc-probe.js';
import { InProcessCluster } from '../node/in-process-cluster.js';
import { metricValue, waitFor } from '../node/harness.js';
import { insecureTransport, STORE_POOL_TRANSPORTS, tlsTransport } from './store-pool-transports.js';

const DEADLINE_MS = 10_000;

/** Held is a read-index request the test answers by hand. */
interface Held {
  resolve: (answer: { commitSeq: number; term: number }) => void;
  reject: (err: unknown) => void;
  deadlineAt: number;
  asker: ReadIndexAskerClaim | undefined;
}

async function serve(server: grpc.Server): Promise<string> {
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, p) =>
      err ? reject(err) : resolve(p),
    ),
  );
  return `127.0.0.1:${port}`;
}

function rejection(promise: Promise<unknown>): Promise<StoreCallError> {
  return promise.then(
    () => assert.fail('expected a failure'),
    (err: unknown) => {
      assert.ok(err instanceof StoreCallError, `a StoreCallError, got ${String(err)}`);
      return err;
    },
  );
}

for (const unaryClient of STORE_POOL_TRANSPORTS)
  describe(`node: ReadIndexStream (read indexes as messages on one open call) (${unaryClient} unary calls)`, function () {
    this.timeout(60_000);
    const held: Held[] = [];
    let unaryReadIndexCalls = 0;
    const handler: StoreServiceHandler = {
      propose: () => Promise.reject(new StoreCallError(grpc.status.UNIMPLEMENTED, 'not in this test')),
      readIndex: (deadlineAt, asker) =>
        new Promise((resolve, reject) => held.push({ resolve, reject, deadlineAt, asker })),
      get: () => Promise.reject(new StoreCallError(grpc.status.UNIMPLEMENTED, 'not in this test')),
    };
    const service = storeService({
      handler,
      commandBytesMax: 1024,
      callDeadlineMs: 5_000,
      proposeBatchCountMax: 8,
      streamOpenRequestCountMax: 4,
    });
    const server = new grpc.Server();
    const countingImplementation = { ...service.implementation };
    const unary = countingImplementation.readIndex as grpc.handleUnaryCall<Buffer, Buffer>;
    countingImplementation.readIndex = (
      call: grpc.ServerUnaryCall<Buffer, Buffer>,
      respond: grpc.sendUnaryData<Buffer>,
    ) => {
      unaryReadIndexCalls++;
      unary(call, respond);
    };
    let to = '';
    let pool: StoreClientPool;

    before(async () => {
      server.addService(storeServiceDefinition(), countingImplementation);
      to = await serve(server);
    });
    beforeEach(() => {
      held.length = 0;
      pool = new StoreClientPool({
        ...insecureTransport(unaryClient),
        streamIdleMs: 60_000,
      });
    });
    afterEach(() => pool.close());
    after(() => server.forceShutdown());

    it('sends many requests on one call, each answered with its own read index', async () => {
      const asks = [0, 1, 2].map(() => pool.readIndex(to, Date.now() + DEADLINE_MS));
      await waitFor(() => held.length === 3, 'three requests at the server');
      // Answered out of order: each answer reaches its own request.
      held[2]!.resolve({ commitSeq: 30, term: 3 });
      held[0]!.resolve({ commitSeq: 10, term: 3 });
      held[1]!.resolve({ commitSeq: 20, term: 3 });
      assert.deepEqual(await Promise.all(asks), [
        { commitSeq: 10, term: 3 },
        { commitSeq: 20, term: 3 },
        { commitSeq: 30, term: 3 },
      ]);
      const later = pool.readIndex(to, Date.now() + DEADLINE_MS);
      await waitFor(() => held.length === 4, 'the fourth request');
      held[3]!.resolve({ commitSeq: 40, term: 3 });
      assert.deepEqual(await later, { commitSeq: 40, term: 3 });
      assert.equal(pool.readIndexStreamCalls, 1, 'one call carried all four');
      assert.equal(unaryReadIndexCalls, 0);
      assert.ok(
        held.every((h) => h.deadlineAt <= Date.now() + DEADLINE_MS),
        'each request carries its own deadline',
      );
    });

    it('names no asker without a peer certificate, whatever term the request says (plaintext: stream and unary)', async () => {
      const streamed = pool.readIndex(to, Date.now() + DEADLINE_MS, 7);
      await waitFor(() => held.length === 1, 'the request');
      assert.equal(held[0]!.asker, undefined);
      held[0]!.resolve({ commitSeq: 1, term: 7 });
      await streamed;
      const unaryPool = new StoreClientPool({
        ...insecureTransport(unaryClient),
        overStreams: false,
      });
      try {
        const unaryAsked = unaryPool.readIndex(to, Date.now() + DEADLINE_MS, 7);
        await waitFor(() => held.length === 2, 'the unary request');
        assert.equal(held[1]!.asker, undefined);
        held[1]!.resolve({ commitSeq: 1, term: 7 });
        await unaryAsked;
      } finally {
        unaryPool.close();
      }
    });

    it("keeps a refusal's code and leader hint, and a request past its deadline fails alone", async () => {
      const refused = pool.readIndex(to, Date.now() + DEADLINE_MS);
      const slow = pool.readIndex(to, Date.now() + 200);
      await waitFor(() => held.length === 2, 'two requests');
      held[0]!.reject(
        new StoreCallError(grpc.status.FAILED_PRECONDITION, 'not the leader; the leader is n2', '127.0.0.1:1234'),
      );
      const err = await rejection(refused);
      assert.equal(err.code, grpc.status.FAILED_PRECONDITION);
      assert.equal(err.leaderHint, '127.0.0.1:1234');
      assert.equal((await rejection(slow)).code, grpc.status.DEADLINE_EXCEEDED);
      assert.ok(held[1]!.deadlineAt <= Date.now() + 1_000, 'the server was told the short deadline');
      held[1]!.resolve({ commitSeq: 1, term: 1 }); // too late: ignored
      const next = pool.readIndex(to, Date.now() + DEADLINE_MS);
      await waitFor(() => held.length === 3, 'a request after the timeout');
      held[2]!.resolve({ commitSeq: 5, term: 2 });
      assert.deepEqual(await next, { commitSeq: 5, term: 2 });
      assert.equal(pool.readIndexStreamCalls, 1, 'the timeout did not end the call');
    });

    it('fails open requests with UNAVAILABLE when the server ends its calls, then opens a new call', async () => {
      const open = pool.readIndex(to, Date.now() + DEADLINE_MS);
      await waitFor(() => held.length === 1, 'a request');
      service.endStreams('node stopping');
      const err = await rejection(open);
      assert.equal(err.code, grpc.status.UNAVAILABLE);
      assert.match(err.details, /node stopping/);
      const again = pool.readIndex(to, Date.now() + DEADLINE_MS);
      await waitFor(() => held.length === 2, 'a request on a new call');
      held[1]!.resolve({ commitSeq: 9, term: 4 });
      assert.deepEqual(await again, { commitSeq: 9, term: 4 });
      assert.equal(pool.readIndexStreamCalls, 2);
    });

    it('answers RESOURCE_EXHAUSTED to requests beyond the open-request limit, and the others normally', async () => {
      const asks = [0, 1, 2, 3, 4].map(() =>
        pool.readIndex(to, Date.now() + DEADLINE_MS).then(
          (a) => a,
          (err: unknown) => err,
        ),
      );
      await waitFor(() => held.length === 4, 'four requests held (the limit)');
      const fifth = await asks[4]!;
      assert.ok(
        fifth instanceof StoreCallError && fifth.code === grpc.status.RESOURCE_EXHAUSTED,
        `the fifth is refused: ${String(fifth)}`,
      );
      held.forEach((h, i) => h.resolve({ commitSeq: i, term: 1 }));
      assert.deepEqual(
        await Promise.all(asks.slice(0, 4)),
        [0, 1, 2, 3].map((i) => ({ commitSeq: i, term: 1 })),
      );
    });

    it('ends a malformed call with INVALID_ARGUMENT', async () => {
      const client = new grpc.Client(to, grpc.credentials.createInsecure());
      try {
        const call = client.makeBidiStreamRequest<Buffer, Buffer>(
          pb.StoreService.readIndexStream.path,
          (b) => b,
          (b) => b,
        );
        const status = new Promise<grpc.ServiceError>((resolve) => call.on('error', resolve));
        call.on('data', () => undefined);
        call.write(Buffer.from([0xff, 0xff, 0xff]));
        const err = await status;
        assert.equal(err.code, grpc.status.INVALID_ARGUMENT);
        assert.match(err.details, /malformed ReadIndexStream request/);
      } finally {
        client.close();
      }
    });

    it('ends an idle call after streamIdleMs', async () => {
      const quick = new StoreClientPool({
        ...insecureTransport(unaryClient),
        streamIdleMs: 50,
      });
      try {
        const ask = quick.readIndex(to, Date.now() + DEADLINE_MS);
        await waitFor(() => held.length === 1, 'a request');
        held[0]!.resolve({ commitSeq: 1, term: 1 });
        await ask;
        await waitFor(() => service.openStreamCount() === 0, 'the idle call ended at the server');
      } finally {
        quick.close();
      }
    });

    it('asks a peer without ReadIndexStream with unary ReadIndex calls, and does not try the stream again', async () => {
      const old = await startOldStoreServer('readIndex', (call) =>
        Buffer.from(pb.ReadIndexResponse.encode({ commitSeq: 70 + call, term: 7 }).finish()),
      );
      const oldAddress = old.address;
      try {
        assert.deepEqual(
          await Promise.all([
            pool.readIndex(oldAddress, Date.now() + DEADLINE_MS),
            pool.readIndex(oldAddress, Date.now() + DEADLINE_MS),
          ]).then((a) => a.map((x) => x.term)),
          [7, 7],
        );
        assert.deepEqual(await pool.readIndex(oldAddress, Date.now() + DEADLINE_MS), { commitSeq: 73, term: 7 });
        assert.equal(old.calls, 3);
        assert.equal(pool.readIndexStreamCalls, 1, 'the stream was tried once, and not again');
        assert.equal(pool.callCounts.readIndexUnary, 3);
      } finally {
        old.stop();
      }
    });
  });

for (const unaryClient of STORE_POOL_TRANSPORTS)
  describe(`node: ReadIndexStream on a 3-node cluster (${unaryClient} unary calls)`, function () {
    this.timeout(90_000);
    const cluster = new InProcessCluster();

    before(async function () {
      await cluster.start(['r1', 'r2', 'r3'], ['r1', 'r2', 'r3', 'probe']);
      await cluster.waitLeader(30_000);
    });
    after(() => cluster.stop());

    async function waitForLeaderOtherThan(old: Awaited<ReturnType<InProcessCluster['waitLeader']>>) {
      await waitFor(
        () => {
          const l = cluster.leader();
          return l !== undefined && l !== old;
        },
        'a new leader',
        30_000,
      );
      return cluster.leader()!;
    }

    it("serves a follower's reads over one stream, sees the leader's writes, and a new leader gets a new stream", async () => {
      const leader = await cluster.waitLeader();
      const transportOptions = tlsTransport(unaryClient, cluster.pki.tls('r3'), cluster.pki.clusterId);
      const pool = new StoreClientPool(transportOptions);
      try {
        await leader.store.put('ri/a', { v: 1 });
        const answers = await Promise.all(
          Array.from({ length: 20 }, () => pool.readIndex(leader.grpcAddress, Date.now() + DEADLINE_MS)),
        );
        for (const a of answers) assert.ok(a.commitSeq >= 1 && a.term >= 1);
        assert.equal(pool.readIndexStreamCalls, 1);
        assert.equal(pool.callCounts.readIndexUnary, 0);
        const follower = cluster.followers()[0]!;
        const { version } = await leader.store.put('ri/b', { v: 2 });
        assert.deepEqual(
          (await follower.store.get('ri/b'))?.value,
          { v: 2 },
          'a read on a follower sees a write acknowledged before it',
        );
        assert.ok(version > 0);
        // The follower's read went over a stream it opened; the leader serves it (and the probe's).
        const metrics = async (url: string) => (await fetch(`${url}/metrics`)).text();
        const followerMetrics = await metrics(follower.metricsAddress);
        assert.ok(
          (metricValue(followerMetrics, 'svc_store_streams_opened_total') ?? 0) >= 1,
          'the follower opened a stream',
        );
        assert.ok((metricValue(followerMetrics, 'svc_store_requests_sent_total', 'kind="read_index"') ?? 0) >= 1);
        assert.equal(metricValue(followerMetrics, 'svc_store_requests_sent_total', 'kind="read_index_unary"'), 0);
        assert.ok(
          (metricValue(followerMetrics, 'svc_store_read_index_readers_total') ?? 0) >=
            (metricValue(followerMetrics, 'svc_store_read_index_calls_total') ?? 0),
        );
        assert.ok(
          (metricValue(await metrics(leader.metricsAddress), 'svc_store_streams_served') ?? 0) >= 2,
          "the leader serves the follower's and the probe's streams",
        );
        const refusal = await rejection(pool.readIndex(follower.grpcAddress, Date.now() + DEADLINE_MS));
        assert.equal(refusal.code, grpc.status.FAILED_PRECONDITION, 'a follower refuses, naming the leader');
        assert.equal(refusal.leaderHint, leader.grpcAddress);

        // The leader stops: its streams are ended (it does not wait them out), a request to it fails, and the
        // followers' reads go to the new leader on a new stream.
        const openedBeforeStop = pool.readIndexStreamCalls;
        await leader.stop();
        const stopped = await rejection(pool.readIndex(leader.grpcAddress, Date.now() + 2_000));
        assert.ok(
          [grpc.status.UNAVAILABLE, grpc.status.DEADLINE_EXCEEDED].includes(stopped.code),
          `a stopped leader: ${stopped.message}`,
        );
        const next = await waitForLeaderOtherThan(leader);
        await next.store.put('ri/c', { v: 3 });
        const reader = cluster.followers().find((n) => n !== leader && n !== next)!;
        assert.deepEqual((await reader.store.get('ri/c'))?.value, { v: 3 });
        const answer = await pool.readIndex(next.grpcAddress, Date.now() + DEADLINE_MS);
        assert.ok(answer.term > 0 && answer.commitSeq > 0);
        assert.ok(pool.readIndexStreamCalls > openedBeforeStop, 'the ended streams were reopened');
      } finally {
        pool.close();
      }
    });
  });

for (const unaryClient of STORE_POOL_TRANSPORTS)
  describe(`node: a follower's read-index request is one ack of the leader's round (the asker's ack) (${unaryClient} unary calls)`, function () {
    this.timeout(90_000);
    const cluster = new InProcessCluster();

    before(async function () {
      // A slow clock (500 ms ticks): the leader, cut off below, keeps leading for seconds, not one.
      await cluster.start(['a1', 'a2', 'a3'], ['a1', 'a2', 'a3'], { tickMs: 500 });
      await cluster.waitLeader(30_000);
    });
    after(() => cluster.stop());

    it("with both followers gone, a voter's certificate and the leader's term still get a read index; a round-less read does not", async () => {
      const leader = await cluster.waitLeader();
      const { version } = await leader.store.put('ack/a', { v: 1 });
      const [gone, other] = cluster.followers();
      await Promise.all([gone!.stop(), other!.stop()]);
      const term = leader.status().term;
      assert.equal(leader.status().role, 'leader', 'still leading (check-quorum has not run out)');
      // The pool holds the stopped follower's certificate: to the leader it is that voter, asking in its term.
      const transportOptions = tlsTransport(unaryClient, cluster.pki.tls(gone!.status().name), cluster.pki.clusterId);
      const pool = new StoreClientPool(transportOptions);
      try {
        const answer = await pool.readIndex(leader.grpcAddress, Date.now() + 2_000, term);
        assert.equal(answer.term, term);
        assert.ok(answer.commitSeq >= version, 'the index covers the acknowledged write');
        const unaryPool = new StoreClientPool({ ...transportOptions, overStreams: false });
        try {
          assert.equal(
            (await unaryPool.readIndex(leader.grpcAddress, Date.now() + 2_000, term)).term,
            term,
            'unary too',
          );
        } finally {
          unaryPool.close();
        }
        // Without the asker's ack the leader needs a round no follower can answer.
        for (const [what, askTerm] of [
          ['no term', 0],
          ['a term above the leader', term + 1],
          ['a term below the leader', term - 1],
        ] as const) {
          const refused = await rejection(pool.readIndex(leader.grpcAddress, Date.now() + 800, askTerm));
          assert.ok(
            [grpc.status.DEADLINE_EXCEEDED, grpc.status.ABORTED].includes(refused.code),
            `${what}: no index (${refused.message})`,
          );
        }
      } finally {
        pool.close();
      }
    });
  });
