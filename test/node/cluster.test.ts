// A three-node cluster of real nodes in this process: real sockets on 127.0.0.1, mutual TLS with
// certificates from cli/certs, WALs and snapshots in temp directories. The tests run in
// order on one cluster: writes through a follower, read-your-writes elsewhere, watches, every
// heartbeat field, foreign certificates, garbage RPCs under load, a snapshot join on an idle
// compacted cluster through a non-leader seed, and a removal.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { VersionConflictError, type StoreChange } from '../../store/document-store.js';
import { StatusCode, type HeartbeatRequest, type RpcRequest } from '../../engine/rpc.js';
import type { AdminOp } from '../../engine/types.js';
import { encodeSegmentFrame } from '../../engine/segment-frame.js';
import * as pb from '../../proto/gen/svc/replication/v1/replication.js';
import * as storePb from '../../proto/gen/svc/store/v1/store.js';
import { PeerPool, type TransportInput } from '../../transports/grpc/client.js';
import { methodPath, RPC_METHODS } from '../../transports/grpc/methods.js';
import { PeerServer } from '../../transports/grpc/server.js';
import { clusterChannelOptions } from '../../transports/grpc/peer-identity.js';
import { clientCredentials, serverCredentials } from '../../transports/grpc/tls.js';
import type { CallSink, PeerHandler } from '../../transports/grpc/call-sink.js';
import { BUILD_VERSION } from '../../transports/node/build-info.js';
import { Node } from '../../cli/node/node.js';
import { StoreCallError, StoreClientPool } from '../../transports/store-rpc/store-service.js';
import { readFileSync } from 'node:fs';
import { getStatus, httpGet, httpStatus, makePki, metricValue, waitFor } from './harness.js';
import { InProcessCluster } from './in-process-cluster.js';
import { Probe, probeCredentials } from './grpc-probe.js';

/** Engine limits for the test cluster: snapshots every 20 applied entries, compaction keeps nothing. */
// Autopilot off: these tests look at learners as learners (test/cli/autopilot-scale.test.ts covers promotions).
const ENGINE_LIMITS = {
  snapshotEntryCountThreshold: 20,
  snapshotLogBytesPercentMin: 0,
  compactionRetainEntryCount: 0,
  autopilotEnabled: 0,
};
const WRITER_PUTS_MAX = 5_000;

/**
 * adminUntilDone repeats a membership operation the leader refuses for a passing reason (a member's
 * capability not heard yet, another change still committing), within a bound.
 */
async function adminUntilDone(node: Node, op: AdminOp): Promise<void> {
  let lastError: unknown = null;
  await waitFor(
    async () => {
      try {
        await node.admin(op);
        return true;
      } catch (err) {
        lastError = err;
        return false;
      }
    },
    `admin ${op.op} of member ${op.memberId} (last refusal: ${String(lastError)})`,
    10_000,
  );
}

describe('node: a three-node cluster over mutual TLS', function () {
  this.timeout(60_000);
  const cluster = new InProcessCluster();

  before(async function () {
    await cluster.start(['n1', 'n2', 'n3'], ['n1', 'n2', 'n3', 'n4', 'probe', 'spy'], { engineLimits: ENGINE_LIMITS });
  });

  after(async function () {
    await cluster.stop();
  });

  it('elects one leader; every node turns healthy and ready', async function () {
    const leader = await cluster.waitLeader();
    await waitFor(async () => {
      for (const node of cluster.nodes.values())
        if ((await httpStatus(`${node.httpAddress}/health`)) !== 200) return false;
      return true;
    }, 'every /health to answer 200');
    for (const node of cluster.nodes.values()) {
      assert.equal(await httpStatus(`${node.httpAddress}/ready`), 200);
      const s = await getStatus(node.httpAddress);
      assert.equal(s.leaderId, leader.status().id, `${s.name} follows the leader`);
    }
    assert.equal([...cluster.nodes.values()].filter((n) => n.status().role === 'leader').length, 1);
  });

  it('serves /metrics in Prometheus format, /status as JSON, and refuses unknown routes and methods', async function () {
    const leader = await cluster.waitLeader();
    await leader.store.put('metrics/probe', { ok: true });
    const follower = cluster.followers()[0]!;
    await waitFor(() => follower.stateMachine.appliedSeq >= leader.stateMachine.appliedSeq, 'the follower to apply');
    const text = (await httpGet(`${leader.metricsAddress}/metrics`)).text;
    const s = leader.status();
    assert.equal(metricValue(text, 'svc_term'), s.term);
    assert.equal(metricValue(text, 'svc_role', 'role="leader"'), 1);
    assert.equal(metricValue(text, 'svc_role', 'role="follower"'), 0);
    assert.ok((metricValue(text, 'svc_commit_seq') ?? 0) >= 2);
    assert.ok((metricValue(text, 'svc_applied_seq') ?? 0) >= 2);
    assert.equal(metricValue(text, 'svc_ready'), 1);
    assert.equal(metricValue(text, 'svc_version_major_spread'), 0);
    assert.ok((metricValue(text, 'svc_wal_sync_seconds_count') ?? 0) >= 1, 'WAL sync latency histogram');
    assert.match(text, /svc_wal_sync_seconds_bucket\{le="0.005"\} \d+/);
    assert.match(text, /svc_member_replication_lag_events\{member="\d+"\} \d+/);
    const followerText = (await httpGet(`${follower.metricsAddress}/metrics`)).text;
    assert.equal(
      metricValue(followerText, 'svc_replication_lag_events', `shard="${s.id}"`),
      0,
      'a caught-up follower lags by 0 events',
    );
    assert.ok((metricValue(followerText, 'svc_replication_lag_high_water_seq', `shard="${s.id}"`) ?? 0) >= 2);
    const status = await getStatus(follower.httpAddress);
    assert.equal(status.leaderId, s.id);
    assert.equal(status.leaderGrpcAddr, leader.grpcAddress);
    assert.equal(status.members.length, 3);
    assert.equal(typeof status.durableLastSeq, 'number');
    assert.equal(await httpStatus(`${leader.httpAddress}/nope`), 404);
    assert.equal(await httpStatus(`${leader.httpAddress}/metrics`), 404, '/metrics is not on the HTTP port');
    assert.equal(await httpStatus(`${leader.metricsAddress}/nope`), 404);
    const post = await fetch(`${leader.httpAddress}/health`, { method: 'POST', signal: AbortSignal.timeout(2_000) });
    assert.equal(post.status, 405);
  });

  it('commits writes through the DocumentStore of a follower, with compare-and-set decided at apply', async function () {
    await cluster.waitLeader();
    const follower = cluster.followers()[0]!;
    const { version } = await follower.store.put('users/ada', { name: 'Ada' });
    assert.ok(version > 0);
    assert.deepEqual(await follower.store.get('users/ada'), { value: { name: 'Ada' }, version });
    // version is the seqno of the committed entry that wrote it
    assert.ok(follower.status().appliedSeq >= version);

    await assert.rejects(
      follower.store.put('users/ada', { name: 'Eve' }, { expectedVersion: version + 1000 }),
      (err: unknown) => err instanceof VersionConflictError && err.actualVersion === version,
    );
    await assert.rejects(
      follower.store.put('users/ada', { name: 'Eve' }, { expectedVersion: 0 }),
      VersionConflictError,
    );
    const second = await follower.store.put('users/ada', { name: 'Ada L.' }, { expectedVersion: version });
    assert.ok(second.version > version);
    const created = await follower.store.put('users/bob', { name: 'Bob' }, { expectedVersion: 0 });
    assert.deepEqual(await follower.store.delete('users/bob', { expectedVersion: created.version }), { deleted: true });
    assert.deepEqual(await follower.store.delete('users/bob'), { deleted: false });
    assert.equal(await follower.store.get('users/bob'), null);
    // The failed compare-and-sets were committed no-ops: every node holds the same state.
    for (const node of cluster.nodes.values()) {
      await waitFor(
        () => node.stateMachine.appliedSeq >= follower.stateMachine.appliedSeq,
        `${node.config.name} to catch up`,
      );
      assert.deepEqual(node.stateMachine.get('users/ada'), { value: { name: 'Ada L.' }, version: second.version });
    }
  });

  it('reads its own writes on another node at once', async function () {
    await cluster.waitLeader();
    const nodes = [...cluster.nodes.values()];
    for (let i = 0; i < 12; i++) {
      const writer = nodes[i % nodes.length]!;
      const reader = nodes[(i + 1) % nodes.length]!;
      const { version } = await writer.store.put(`ryw/${String(i).padStart(2, '0')}`, { i });
      // No waiting: the reader's read index covers the acknowledged write.
      assert.deepEqual(
        await reader.store.get(`ryw/${String(i).padStart(2, '0')}`),
        { value: { i }, version },
        `write ${i} on ${writer.config.name}, read on ${reader.config.name}`,
      );
    }
    const page = await nodes[2]!.store.list('ryw/', { limit: 5 });
    assert.deepEqual(
      page.entries.map((e) => e.key),
      ['ryw/00', 'ryw/01', 'ryw/02', 'ryw/03', 'ryw/04'],
    );
    assert.equal(page.nextAfter, 'ryw/04');
    const rest = await nodes[0]!.store.list('ryw/', { after: page.nextAfter! });
    assert.equal(rest.entries.length, 7);
    assert.equal(rest.nextAfter, null);
  });

  it('tells watchers on every node about each committed change as the node applies it', async function () {
    await cluster.waitLeader();
    const seen = new Map<string, StoreChange[]>();
    const unsubscribe = [...cluster.nodes.values()].map((node) => {
      seen.set(node.config.name, []);
      return node.store.watch('watched/', (change) => seen.get(node.config.name)!.push(change));
    });
    const writer = cluster.followers()[0]!;
    const { version } = await writer.store.put('watched/a', { n: 1 });
    await writer.store.put('unwatched/b', { n: 2 });
    const deleted = await writer.store.delete('watched/a');
    assert.equal(deleted.deleted, true);
    await waitFor(() => [...seen.values()].every((changes) => changes.length === 2), 'two changes on every node');
    for (const [name, changes] of seen) {
      assert.deepEqual(changes[0], { kind: 'put', key: 'watched/a', value: { n: 1 }, version }, name);
      assert.equal(changes[1]!.kind, 'delete', name);
    }
    for (const off of unsubscribe) off();
  });

  it('fills every heartbeat field with a real value', async function () {
    const leader = await cluster.waitLeader();
    for (let i = 0; i < 10; i++) await leader.store.put(`hb/${i}`, { i });
    // A spy joins as a learner and records the heartbeats the leader sends it.
    const heartbeats: HeartbeatRequest[] = [];
    const handler: PeerHandler = {
      onRequest(_callId: number, request: RpcRequest, call: CallSink) {
        switch (request.method) {
          case 'Heartbeat':
            heartbeats.push(request.body);
            call.reply({
              method: 'Heartbeat',
              body: { acknowledged: true, term: request.body.term, accepted: true, capabilities: 1, removed: false },
            });
            return;
          case 'ShipSegment':
            // It claims to hold what it is shipped, so the leader stops shipping once it is removed.
            call.reply({
              method: 'ShipSegment',
              body: { accepted: true, appliedSeqno: request.body.leaderLastSeq, term: request.body.term },
            });
            return;
          default:
            call.replyError({ code: StatusCode.UNAVAILABLE, details: 'spy', trailers: {} });
        }
      },
    };
    // The spy holds a peer certificate of this cluster in its own name: a JoinCluster must name the certificate's holder.
    const material = {
      ca: readFileSync(join(cluster.pki.dir, 'ca.crt')),
      cert: readFileSync(join(cluster.pki.dir, 'spy.crt')),
      key: readFileSync(join(cluster.pki.dir, 'spy.key')),
    };
    const spy = await PeerServer.listen('127.0.0.1:0', { handler, credentials: serverCredentials(material) });
    const outcomes: TransportInput[] = [];
    const pool = new PeerPool({
      credentials: clientCredentials(material),
      channelOptions: { 'grpc.ssl_target_name_override': 'localhost', ...clusterChannelOptions(cluster.pki.clusterId) },
      deliver: (input) => outcomes.push(input),
    });
    try {
      await waitFor(async () => {
        const sent = outcomes.length;
        pool.send(sent + 1, leader.grpcAddress, {
          method: 'JoinCluster',
          body: { name: 'spy', grpcAddr: `127.0.0.1:${spy.port}`, httpAddr: 'http://127.0.0.1:9', capabilities: 1 },
        });
        await waitFor(() => outcomes.length > sent, 'the JoinCluster answer');
        const last = outcomes[outcomes.length - 1]!;
        return last.type === 'response' && last.response.method === 'JoinCluster' && last.response.body.accepted;
      }, 'the spy to be admitted');
      const entityCount = leader.stateMachine.size;
      // disk_bytes comes from a walk of the data directory every diskUsageRefreshMs, so it may trail a fresh cluster.
      await waitFor(
        () => heartbeats.some((h) => h.entityCount === entityCount && h.diskBytes > 0),
        'a heartbeat counting every document and the disk',
      );
      const hb = heartbeats.find((h) => h.entityCount === entityCount && h.diskBytes > 0)!;
      const s = leader.status();
      assert.equal(hb.term, s.term);
      assert.equal(hb.leaderRegion, s.id);
      assert.equal(hb.entityCount, leader.stateMachine.size, 'entity_count: documents in the store');
      assert.ok(
        hb.signalThroughputEps > 0,
        `signal_throughput_eps ${hb.signalThroughputEps} measures applied commands`,
      );
      assert.ok(hb.diskBytes > 0, 'disk_bytes: WAL and snapshots on disk');
      const skewMs = Math.abs(Number(BigInt(hb.lastHeartbeatNs) / 1_000_000n) - Date.now());
      assert.ok(skewMs < 5_000, `last_heartbeat_ns is the wall clock (off by ${skewMs} ms)`);
      assert.equal(hb.buildVersion, BUILD_VERSION);
      assert.match(hb.buildVersion, /^\d+\.\d+\.\d+/);
      assert.ok(hb.leaderLastSeq > 0);
      const lagMembers = Object.keys(hb.replicationLag).map(Number).sort();
      for (const node of cluster.nodes.values())
        if (node !== leader)
          assert.ok(lagMembers.includes(node.status().id), `replication_lag has member ${node.status().id}`);
      // The spy leaves the roster again, so later membership changes do not wait on it.
      await adminUntilDone(leader, { op: 'remove', memberId: leader.memberId('spy') });
      assert.equal(leader.status().members.find((m) => m.name === 'spy')?.role, 'removed');
    } finally {
      pool.close();
      await spy.close();
    }
  });

  it('refuses a peer whose certificate comes from another CA, and plaintext', async function () {
    const leader = await cluster.waitLeader();
    const foreign = await makePki(join(cluster.dir, 'foreign'), ['n1'], 'foreign');
    const foreignTls = foreign.tls('n1');
    const { credentials: foreignCredentials, options } = probeCredentials(foreignTls);
    const heartbeat = pb.HeartbeatRequest.encode(
      pb.HeartbeatRequest.fromPartial({ term: leader.status().term + 5, leaderRegion: 1 }),
    ).finish();
    const termBefore = leader.status().term;
    for (const node of cluster.nodes.values()) {
      for (const [credentials, channelOptions] of [
        [foreignCredentials, options],
        [grpc.credentials.createInsecure(), {}],
      ] as const) {
        const probe = new Probe(node.grpcAddress, credentials, channelOptions);
        const outcome = await probe.unary(methodPath('Heartbeat'), Buffer.from(heartbeat));
        probe.close();
        assert.equal(outcome.code, grpc.status.UNAVAILABLE, `${node.config.name}: ${outcome.details}`);
      }
      const foreignStore = new StoreClientPool({ credentials: foreignCredentials, channelOptions: options });
      await assert.rejects(
        foreignStore.readIndex(node.grpcAddress, Date.now() + 3_000),
        (err: unknown) => err instanceof StoreCallError && err.code === grpc.status.UNAVAILABLE,
      );
      foreignStore.close();
    }
    // The forged higher-term heartbeat never arrived: nobody stepped down.
    assert.equal(leader.status().term, termBefore);
    assert.equal(leader.status().role, 'leader');
  });

  it('answers garbage RPCs with errors while the cluster keeps committing', async function () {
    const leader = await cluster.waitLeader();
    const termBefore = leader.status().term;
    const writer = cluster.followers()[0]!;
    let acknowledged = 0;
    let stop = false;
    const writing = (async () => {
      for (let i = 0; i < WRITER_PUTS_MAX && !stop; i++) {
        await writer.store.put(`load/${String(i).padStart(5, '0')}`, { i });
        acknowledged++;
      }
    })();
    const { credentials, options } = probeCredentials(cluster.pki.tls('probe'), cluster.pki.clusterId);
    // svc.store.v1 serves members only: its garbage comes with a member's certificate.
    const member = probeCredentials(cluster.pki.tls('n1'), cluster.pki.clusterId);
    const garbage = Buffer.from([0xff, 0xff, 0xff, 0x07]);
    const s = leader.status();
    const badPayload = pb.ShipSegmentRequest.encode(
      pb.ShipSegmentRequest.fromPartial({ term: s.term, leaderRegion: s.id, payload: Buffer.from('not a frame') }),
    ).finish();
    const termZero = pb.ShipSegmentRequest.encode(
      pb.ShipSegmentRequest.fromPartial({
        term: 0,
        leaderRegion: s.id,
        payload: encodeSegmentFrame({ prevSeq: 0, prevTerm: 0, commitSeq: 0, entries: [] }),
      }),
    ).finish();
    const voteFromNobody = pb.VoteRequest.encode(
      pb.VoteRequest.fromPartial({ term: s.term + 1, candidateRegion: 0, prevote: true }),
    ).finish();
    const lagFlood = pb.HeartbeatRequest.encode(
      pb.HeartbeatRequest.fromPartial({
        term: s.term,
        leaderRegion: s.id,
        replicationLag: Object.fromEntries(Array.from({ length: 200 }, (_, i) => [i + 1, 1])),
      }),
    ).finish();
    const badCommand = storePb.ProposeRequest.encode({
      command: Buffer.from('{"v":1,"op":"drop-table"}'),
      requestId: '',
    }).finish();
    const huge = Buffer.alloc(9 * 1024 * 1024, 1);
    const ackedBefore = acknowledged;
    const codes: Array<[string, number]> = [];
    for (let round = 0; round < 3; round++) {
      for (const node of cluster.nodes.values()) {
        const probe = new Probe(node.grpcAddress, credentials, options);
        for (const method of RPC_METHODS) {
          const outcome =
            method === 'StreamSegments' || method === 'FetchSnapshot'
              ? await probe.stream(methodPath(method), garbage)
              : await probe.unary(methodPath(method), garbage);
          codes.push([`${node.config.name} ${method} garbage`, outcome.code]);
        }
        codes.push([
          `${node.config.name} unknown method`,
          (await probe.unary('/svc.replication.v1.WalShipping/DropEverything', garbage)).code,
        ]);
        codes.push([
          `${node.config.name} ShipSegment bad payload`,
          (await probe.unary(methodPath('ShipSegment'), Buffer.from(badPayload))).code,
        ]);
        codes.push([
          `${node.config.name} ShipSegment term 0`,
          (await probe.unary(methodPath('ShipSegment'), Buffer.from(termZero))).code,
        ]);
        codes.push([
          `${node.config.name} RequestVote candidate 0`,
          (await probe.unary(methodPath('RequestVote'), Buffer.from(voteFromNobody))).code,
        ]);
        codes.push([
          `${node.config.name} Heartbeat lag flood`,
          (await probe.unary(methodPath('Heartbeat'), Buffer.from(lagFlood))).code,
        ]);
        const storeProbe = new Probe(node.grpcAddress, member.credentials, member.options);
        codes.push([
          `${node.config.name} Store Propose garbage`,
          (await storeProbe.unary(storePb.StoreService.propose.path, garbage)).code,
        ]);
        codes.push([
          `${node.config.name} Store Propose bad command`,
          (await storeProbe.unary(storePb.StoreService.propose.path, Buffer.from(badCommand))).code,
        ]);
        codes.push([
          `${node.config.name} Store ReadIndex garbage`,
          (await storeProbe.unary(storePb.StoreService.readIndex.path, garbage)).code,
        ]);
        storeProbe.close();
        if (round === 0)
          codes.push([`${node.config.name} 9 MiB message`, (await probe.unary(methodPath('ShipSegment'), huge)).code]);
        probe.close();
      }
    }
    await waitFor(() => acknowledged >= ackedBefore + 20, 'writes to keep committing after the garbage');
    stop = true;
    await writing;
    for (const [what, code] of codes) assert.notEqual(code, grpc.status.OK, `${what} must fail`);
    const byWhat = new Map(codes);
    assert.equal(byWhat.get('n1 ShipSegment garbage'), grpc.status.INVALID_ARGUMENT);
    assert.equal(byWhat.get('n1 unknown method'), grpc.status.UNIMPLEMENTED);
    // The probe's certificate is not the leader's: ships claiming to come from the leader are refused at the edge.
    assert.equal(byWhat.get('n1 ShipSegment bad payload'), grpc.status.PERMISSION_DENIED);
    assert.equal(byWhat.get('n1 ShipSegment term 0'), grpc.status.PERMISSION_DENIED);
    assert.equal(byWhat.get('n1 RequestVote candidate 0'), grpc.status.INVALID_ARGUMENT);
    assert.equal(byWhat.get('n1 Heartbeat lag flood'), grpc.status.INVALID_ARGUMENT);
    assert.equal(byWhat.get('n2 Store Propose garbage'), grpc.status.INVALID_ARGUMENT);
    assert.equal(byWhat.get('n2 Store Propose bad command'), grpc.status.INVALID_ARGUMENT);
    assert.equal(byWhat.get('n3 Store ReadIndex garbage'), grpc.status.INVALID_ARGUMENT);
    assert.equal(byWhat.get('n1 9 MiB message'), grpc.status.RESOURCE_EXHAUSTED);
    // Nobody was disturbed: same leader, same term, everyone healthy, everyone converges.
    assert.equal(leader.status().role, 'leader');
    assert.equal(leader.status().term, termBefore);
    for (const node of cluster.nodes.values())
      assert.equal(await httpStatus(`${node.httpAddress}/health`), 200, node.config.name);
    const target = leader.status().commitSeq;
    await waitFor(
      () => [...cluster.nodes.values()].every((n) => n.stateMachine.appliedSeq >= target),
      'every node to apply the load',
    );
    assert.ok(acknowledged > 20, `${acknowledged} writes acknowledged`);
  });

  it('admits a 4th node through a non-leader seed on an idle, compacted cluster: snapshot install, then /health 503 → 200 with no writes', async function () {
    const leader = await cluster.waitLeader();
    await waitFor(() => leader.status().compactedSeq > 0, 'the leader to compact its log');
    const idle = leader.status();
    const commandsApplied = async (): Promise<number> =>
      metricValue((await httpGet(`${leader.metricsAddress}/metrics`)).text, 'svc_applied_events_total') ?? -1;
    const commandsBefore = await commandsApplied();
    const seed = cluster.followers()[0]!;
    const joiner = await cluster.join('n4', [seed.grpcAddress], { engineLimits: ENGINE_LIMITS });
    const first = await httpGet(`${joiner.httpAddress}/health`);
    assert.equal(first.status, 503, `a joiner starts not ready: ${first.text}`);
    await waitFor(
      async () => (await httpStatus(`${joiner.httpAddress}/health`)) === 200,
      "the joiner's /health to answer 200",
      20_000,
    );
    const metrics = (await httpGet(`${joiner.metricsAddress}/metrics`)).text;
    assert.ok(
      (metricValue(metrics, 'svc_snapshot_events_total', 'event="installed"') ?? 0) >= 1,
      'the joiner installed a snapshot',
    );
    const s = joiner.status();
    assert.ok(
      s.snapshotSeq >= idle.compactedSeq,
      `installed snapshot ${s.snapshotSeq} covers the compacted prefix ${idle.compactedSeq}`,
    );
    assert.equal(s.members.find((m) => m.name === 'n4')?.role, 'learner');
    assert.equal(joiner.stateMachine.size, leader.stateMachine.size, 'the joiner holds every document');
    assert.deepEqual(joiner.stateMachine.get('users/ada'), leader.stateMachine.get('users/ada'));
    // No writes at all: only the membership record was appended.
    assert.equal(await commandsApplied(), commandsBefore);
    assert.equal(leader.status().lastSeq, idle.lastSeq + 1, 'the join record is the only new entry');
  });

  it('a removed voter turns /health 503, knows it, and stops campaigning', async function () {
    const leader = await cluster.waitLeader();
    const victim = cluster.followers().find((n) => n.config.name !== 'n4')!;
    const victimId = victim.status().id;
    await adminUntilDone(leader, { op: 'remove', memberId: victimId });
    await waitFor(() => victim.status().removed, 'the removed node to learn of its removal');
    assert.equal(await httpStatus(`${victim.httpAddress}/health`), 503);
    assert.equal((await getStatus(victim.httpAddress)).role, 'removed');
    const votesSent = async (): Promise<number> =>
      metricValue(
        (await httpGet(`${victim.metricsAddress}/metrics`)).text,
        'svc_peer_requests_sent_total',
        'method="RequestVote"',
      ) ?? 0;
    const before = await votesSent();
    const termBefore = victim.status().term;
    // Unheard from, a voter would campaign within two election timeouts (< 2 x 10 ticks): let its
    // own engine step three times that, measured by its tick counter, not by a sleep.
    const ticks = async (): Promise<number> =>
      metricValue((await httpGet(`${victim.metricsAddress}/metrics`)).text, 'svc_engine_ticks_total') ?? 0;
    const ticksBefore = await ticks();
    await waitFor(async () => (await ticks()) >= ticksBefore + 60, 'sixty ticks on the removed node', 20_000);
    assert.equal(await votesSent(), before, 'no vote or pre-vote requests after removal');
    assert.equal(victim.status().term, termBefore);
    assert.equal(await httpStatus(`${victim.httpAddress}/health`), 503);
    // The cluster goes on without it, and its store refuses to serve.
    const writer = cluster.followers().find((n) => n !== victim)!;
    await writer.store.put('after/removal', { ok: true });
    await assert.rejects(victim.store.get('after/removal'), /removed/);
  });
});
