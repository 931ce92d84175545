// The edge half of issue 10 on a real three-node cluster in this process (real sockets, mutual TLS,
// certificates from cli/certs): which certificate may call which service, the cluster id every
// peer call carries, senders matched against their certificates, the refusals counted in
// svc_peer_calls_refused_total, and a node that will not start with the wrong certificate or data.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import * as adminPb from '../../proto/gen/svc/admin/v1/admin.js';
import * as pb from '../../proto/gen/svc/replication/v1/replication.js';
import * as storePb from '../../proto/gen/svc/store/v1/store.js';
import * as peerPb from '../../proto/gen/svc/peer/v1/peer.js';
import { AdminCallError, AdminClientPool } from '../../transports/admin/admin-client.js';
import { createAdminCert, createNodeCert } from '../../cli/certs/certs.js';
import { methodPath } from '../../transports/grpc/methods.js';
import { clientCredentials } from '../../transports/grpc/tls.js';
import { ConfigError, type NodeTls } from '../../cli/node/config.js';
import { Node } from '../../cli/node/node.js';
import { encodeCommand, resultFromMessage } from '../../store/command.js';
import { httpGet, metricValue, nodeConfig, planNodes, tempDir, removeDir } from './harness.js';
import { InProcessCluster } from './in-process-cluster.js';
import { Probe, probeCredentials, type ProbeOutcome } from './grpc-probe.js';

const NAME_OVERRIDE = { 'grpc.ssl_target_name_override': 'localhost', 'grpc.default_authority': 'localhost' };

describe('node: the peer gate on a real cluster', function () {
  this.timeout(60_000);
  const cluster = new InProcessCluster();
  let otherTls: NodeTls;

  before(async function () {
    await cluster.start(['n1', 'n2', 'n3'], ['n1', 'n2', 'n3', 'n4']);
    // A peer certificate from the same CA, of another cluster.
    await createNodeCert({
      dir: cluster.pki.dir,
      name: 'other',
      clusterId: 'another-cluster',
      peersService: 'peers',
      namespace: 'test',
    });
    otherTls = withCert(cluster.pki.tls('n1'), cluster.pki.dir, 'other');
  });

  after(async function () {
    await cluster.stop();
  });

  async function call(
    to: Node,
    tls: NodeTls,
    clusterId: string,
    path: string,
    bytes: Uint8Array,
  ): Promise<ProbeOutcome> {
    const { credentials, options } = probeCredentials(tls, clusterId);
    const probe = new Probe(to.grpcAddress, credentials, options);
    try {
      return await probe.unary(path, Buffer.from(bytes));
    } finally {
      probe.close();
    }
  }

  const refusedCount = async (node: Node, reason: string): Promise<number> =>
    metricValue(
      (await httpGet(`${node.metricsAddress}/metrics`)).text,
      'svc_peer_calls_refused_total',
      `reason="${reason}"`,
    ) ?? 0;

  function adminPool(tls: NodeTls): AdminClientPool {
    if (tls.mode !== 'mtls') throw new Error('mtls only');
    const material = { ca: readFileSync(tls.caFile), cert: readFileSync(tls.certFile), key: readFileSync(tls.keyFile) };
    return new AdminClientPool({ credentials: clientCredentials(material), channelOptions: NAME_OVERRIDE });
  }

  it('refuses calls of another cluster (certificate or metadata) and peer calls without a cluster id, and counts them', async function () {
    const leader = await cluster.waitLeader();
    const s = leader.status();
    const heartbeat = pb.HeartbeatRequest.encode(
      pb.HeartbeatRequest.fromPartial({ term: s.term + 1, leaderRegion: 99, regionId: 99, shardId: 99 }),
    ).finish();
    const before = {
      mismatch: await refusedCount(leader, 'cluster-mismatch'),
      missing: await refusedCount(leader, 'cluster-missing'),
    };
    const outcomes = {
      otherCert: await call(leader, otherTls, 'another-cluster', methodPath('Heartbeat'), heartbeat),
      otherCertOurMetadata: await call(leader, otherTls, cluster.pki.clusterId, methodPath('Heartbeat'), heartbeat),
      otherMetadata: await call(leader, cluster.pki.tls('n4'), 'another-cluster', methodPath('Heartbeat'), heartbeat),
      noMetadata: await call(leader, cluster.pki.tls('n4'), '', methodPath('Heartbeat'), heartbeat),
      otherCertStore: await call(
        leader,
        otherTls,
        'another-cluster',
        storePb.StoreService.readIndex.path,
        storePb.ReadIndexRequest.encode({ term: 0 }).finish(),
      ),
    };
    for (const [what, outcome] of Object.entries(outcomes))
      assert.equal(outcome.code, grpc.status.PERMISSION_DENIED, `${what}: ${outcome.details}`);
    assert.match(outcomes.otherCert.details, /certificate is of cluster another-cluster, this node's is /);
    assert.match(outcomes.otherMetadata.details, /names cluster "another-cluster"/);
    assert.match(outcomes.noMetadata.details, /carries no svc-cluster-id metadata/);
    assert.equal(await refusedCount(leader, 'cluster-mismatch'), before.mismatch + 4);
    assert.equal(await refusedCount(leader, 'cluster-missing'), before.missing + 1);
    assert.equal(leader.status().term, s.term, 'none of it reached the engine');
  });

  it('refuses a member\'s certificate sending as another member (TimeoutNow "from the leader" signed by a follower)', async function () {
    const leader = await cluster.waitLeader();
    const s = leader.status();
    const [follower, target] = cluster.followers();
    const timeoutNow = pb.TimeoutNowRequest.encode({ term: s.term, leaderRegion: s.id }).finish();
    const outcome = await call(
      target!,
      cluster.pki.tls(follower!.config.name),
      cluster.pki.clusterId,
      methodPath('TimeoutNow'),
      timeoutNow,
    );
    assert.equal(outcome.code, grpc.status.PERMISSION_DENIED);
    assert.match(
      outcome.details,
      new RegExp(`TimeoutNow leader_region ${s.id} is not the sender: the certificate is ${follower!.config.name}'s`),
    );
    assert.ok((await refusedCount(target!, 'claim-mismatch')) >= 1);
    assert.equal(cluster.leader(), leader);
    assert.equal(leader.status().term, s.term);
  });

  it('serves Admin to admin certificates only, and svc.store.v1 and WalShipping to peer certificates only', async function () {
    const leader = await cluster.waitLeader();
    const admin = adminPool(cluster.pki.adminTls());
    const asPeer = adminPool(cluster.pki.tls('n4'));
    try {
      const status = await admin.status(leader.grpcAddress, Date.now() + 3_000);
      assert.equal(status.role, 'leader');
      await assert.rejects(
        asPeer.status(leader.grpcAddress, Date.now() + 3_000),
        (err: unknown) =>
          err instanceof AdminCallError &&
          err.code === grpc.status.PERMISSION_DENIED &&
          /accepts admin certificates only/.test(err.details),
      );
    } finally {
      admin.close();
      asPeer.close();
    }
    const readIndexRequest = storePb.ReadIndexRequest.encode({ term: 0 }).finish();
    const readIndex = await call(
      leader,
      cluster.pki.adminTls(),
      '',
      storePb.StoreService.readIndex.path,
      readIndexRequest,
    );
    assert.equal(readIndex.code, grpc.status.PERMISSION_DENIED);
    assert.match(readIndex.details, /svc.store.v1.Store accepts peer certificates only/);
    // A peer certificate of this cluster whose name is no member's neither writes nor reads the store.
    const stranger = await call(
      leader,
      cluster.pki.tls('n4'),
      cluster.pki.clusterId,
      storePb.StoreService.readIndex.path,
      readIndexRequest,
    );
    assert.equal(stranger.code, grpc.status.PERMISSION_DENIED);
    assert.match(stranger.details, /svc.store.v1.Store serves members only; n4 is not in this node's roster/);
    const memberCall = await call(
      leader,
      cluster.pki.tls(cluster.followers()[0]!.config.name),
      cluster.pki.clusterId,
      storePb.StoreService.readIndex.path,
      readIndexRequest,
    );
    assert.equal(memberCall.code, grpc.status.OK, memberCall.details);
    const vote = pb.VoteRequest.encode(
      pb.VoteRequest.fromPartial({ term: leader.status().term + 1, candidateRegion: 2, prevote: true }),
    ).finish();
    const walShipping = await call(
      leader,
      cluster.pki.adminTls(),
      cluster.pki.clusterId,
      methodPath('RequestVote'),
      vote,
    );
    assert.equal(walShipping.code, grpc.status.PERMISSION_DENIED);
    assert.ok((await refusedCount(leader, 'wrong-role')) >= 3);
  });

  it("HeartbeatStream: refuses a stranger at the call's open, and a member's heartbeat sent as another member per message", async function () {
    const leader = await cluster.waitLeader();
    const s = leader.status();
    const [follower, target] = cluster.followers();
    // One message on a HeartbeatStream call; resolves with its answer or the call's error.
    const streamed = async (
      tls: NodeTls,
      bytes: Uint8Array,
    ): Promise<peerPb.HeartbeatStreamResponse | grpc.ServiceError> => {
      const { credentials, options } = probeCredentials(tls, cluster.pki.clusterId);
      const client = new grpc.Client(target!.grpcAddress, credentials, options);
      try {
        const call = client.makeBidiStreamRequest<Buffer, Buffer>(
          peerPb.PeerStreamsService.heartbeatStream.path,
          (b) => b,
          (b) => b,
          new grpc.Metadata(),
        );
        const outcome = new Promise<peerPb.HeartbeatStreamResponse | grpc.ServiceError>((resolve) => {
          call.on('data', (b: Buffer) => resolve(peerPb.HeartbeatStreamResponse.decode(b)));
          call.on('error', resolve);
        });
        call.write(Buffer.from(peerPb.HeartbeatStreamRequest.encode({ requestId: 7, heartbeat: bytes }).finish()));
        const result = await outcome;
        call.cancel();
        return result;
      } finally {
        client.close();
      }
    };
    // A heartbeat "from the leader" at a higher term, signed by a follower: it would depose nobody if obeyed
    // only because the gate refuses it first.
    const forged = pb.HeartbeatRequest.encode(
      pb.HeartbeatRequest.fromPartial({ term: s.term + 1, leaderRegion: s.id, regionId: s.id, shardId: s.id }),
    ).finish();
    const claimsBefore = await refusedCount(target!, 'claim-mismatch');
    const asOther = await streamed(cluster.pki.tls(follower!.config.name), forged);
    assert.ok('statusCode' in asOther, `answered per message, not by ending the call: ${JSON.stringify(asOther)}`);
    assert.equal(asOther.requestId, 7);
    assert.equal(asOther.statusCode, grpc.status.PERMISSION_DENIED);
    assert.match(asOther.details, /is not the sender: the certificate is/);
    assert.equal(await refusedCount(target!, 'claim-mismatch'), claimsBefore + 1);
    const stranger = await streamed(cluster.pki.tls('n4'), forged);
    assert.ok(!('statusCode' in stranger), 'the call itself is refused');
    assert.equal(stranger.code, grpc.status.PERMISSION_DENIED);
    assert.match(stranger.details, /svc.peer.v1.PeerStreams serves members only; n4 is not in this node's roster/);
    assert.equal(target!.status().term, s.term, 'neither reached the engine');
    assert.equal(cluster.leader(), leader);
  });

  it("ReportStream: refuses a stranger at the call's open, and a member's report naming another member per message", async function () {
    const leader = await cluster.waitLeader();
    const s = leader.status();
    const [follower, other] = cluster.followers();
    // One message on a ReportStream call to the leader; resolves with its answer or the call's error.
    const streamed = async (
      tls: NodeTls,
      bytes: Uint8Array,
    ): Promise<peerPb.ReportStreamResponse | grpc.ServiceError> => {
      const { credentials, options } = probeCredentials(tls, cluster.pki.clusterId);
      const client = new grpc.Client(leader.grpcAddress, credentials, options);
      try {
        const call = client.makeBidiStreamRequest<Buffer, Buffer>(
          peerPb.PeerStreamsService.reportStream.path,
          (b) => b,
          (b) => b,
          new grpc.Metadata(),
        );
        const outcome = new Promise<peerPb.ReportStreamResponse | grpc.ServiceError>((resolve) => {
          call.on('data', (b: Buffer) => resolve(peerPb.ReportStreamResponse.decode(b)));
          call.on('error', resolve);
        });
        call.write(Buffer.from(peerPb.ReportStreamRequest.encode({ requestId: 9, report: bytes }).finish()));
        const result = await outcome;
        call.cancel();
        return result;
      } finally {
        client.close();
      }
    };
    // A report "from" the other follower, far ahead of the log, signed by this follower: obeyed, it would move
    // the other's durable frontier (and so the commit) to where the other never wrote.
    const otherId = other!.status().id;
    const forged = pb.AppliedReport.encode(
      pb.AppliedReport.fromPartial({
        reporterShard: otherId,
        sourceShard: s.id,
        appliedSeqno: s.lastSeq + 1_000,
        reporterTerm: s.term,
        capabilities: 1,
      }),
    ).finish();
    const claimsBefore = await refusedCount(leader, 'claim-mismatch');
    const asOther = await streamed(cluster.pki.tls(follower!.config.name), forged);
    assert.ok('statusCode' in asOther, `answered per message, not by ending the call: ${JSON.stringify(asOther)}`);
    assert.equal(asOther.requestId, 9);
    assert.equal(asOther.statusCode, grpc.status.PERMISSION_DENIED);
    assert.match(asOther.details, /is not the sender: the certificate is/);
    assert.equal(await refusedCount(leader, 'claim-mismatch'), claimsBefore + 1);
    const stranger = await streamed(cluster.pki.tls('n4'), forged);
    assert.ok(!('statusCode' in stranger), 'the call itself is refused');
    assert.equal(stranger.code, grpc.status.PERMISSION_DENIED);
    assert.match(stranger.details, /svc.peer.v1.PeerStreams serves members only; n4 is not in this node's roster/);
    assert.ok(leader.status().commitSeq < s.lastSeq + 1_000, 'neither reached the engine: the commit did not move');
    assert.equal(cluster.leader(), leader);
  });

  it('Admin.Propose commits a store command through a follower; a follower names the leader for ChangeMember', async function () {
    const leader = await cluster.waitLeader();
    const follower = cluster.followers()[0]!;
    const admin = adminPool(cluster.pki.adminTls());
    try {
      const command = encodeCommand({
        op: 'put',
        key: 'admin/written',
        value: { by: 'admin' },
        requestId: 'peer-gate-test-1',
      });
      const { seq, result } = await admin.propose(follower.grpcAddress, command, Date.now() + 10_000);
      assert.equal(resultFromMessage(result).outcome, 'applied');
      assert.ok(seq > 0);
      assert.deepEqual((await leader.store.get('admin/written'))?.value, { by: 'admin' });
      const change = {
        change: adminPb.MemberChange.MEMBER_CHANGE_TRANSFER,
        name: follower.config.name,
        hops: 0,
        prefixes: [],
        tenants: [],
        clear: false,
      };
      await assert.rejects(
        admin.changeMember(follower.grpcAddress, change, Date.now() + 3_000),
        (err: unknown) =>
          err instanceof AdminCallError &&
          err.code === grpc.status.FAILED_PRECONDITION &&
          err.leaderHint === leader.grpcAddress,
      );
    } finally {
      admin.close();
    }
  });

  it("will not start with an admin certificate, another node's certificate, or a data directory of another cluster", async function () {
    const dir = await tempDir('gate-start');
    try {
      const [plan] = await planNodes(['n1']);
      const bootstrap = [plan!.member];
      const start = async (tls: NodeTls, dataDir: string, clusterId?: string): Promise<unknown> => {
        const node = new Node(
          nodeConfig(
            plan!,
            dataDir,
            tls,
            { bootstrap },
            { logLevel: 'silent', ...(clusterId === undefined ? {} : { clusterId }) },
          ),
        );
        try {
          await node.start();
          return null;
        } catch (err) {
          return err;
        } finally {
          await node.stop();
        }
      };
      await createAdminCert({ dir: cluster.pki.dir, name: 'n1-admin', clusterId: cluster.pki.clusterId });
      const adminAsNode = withCert(cluster.pki.tls('n1'), cluster.pki.dir, 'n1-admin');
      const refusals = [
        await start(adminAsNode, join(dir, 'a')),
        await start(cluster.pki.tls('n2'), join(dir, 'b')),
        await start(cluster.pki.tls('n1'), join(dir, 'c'), 'another-cluster'),
      ];
      assert.match(String(refusals[0]), /is an admin certificate; a node needs its peer certificate/);
      assert.match(String(refusals[1]), /is n2's peer certificate, but this node is n1/);
      assert.match(String(refusals[2]), /names cluster another-cluster but the node certificate names cluster /);
      for (const err of refusals) assert.ok(err instanceof ConfigError, String(err));
      // A data directory records its cluster: started again as a plaintext node of another cluster, it refuses.
      assert.equal(await start(cluster.pki.tls('n1'), join(dir, 'd')), null);
      assert.equal(readFileSync(join(dir, 'd', 'cluster-id'), 'utf8').trim(), cluster.pki.clusterId);
      const moved = await start({ mode: 'insecure' }, join(dir, 'd'), 'another-cluster');
      assert.ok(moved instanceof ConfigError, String(moved));
      assert.match(moved.message, /the data directory .* names cluster /);
    } finally {
      await removeDir(dir);
    }
  });
});

/** withCert is tls with another certificate and key from dir. */
function withCert(tls: NodeTls, dir: string, name: string): NodeTls {
  if (tls.mode !== 'mtls') throw new Error('mtls only');
  return { ...tls, certFile: join(dir, `${name}.crt`), keyFile: join(dir, `${name}.key`) };
}
