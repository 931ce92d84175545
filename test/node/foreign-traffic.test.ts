// Issue 10's four reproductions, each against a real three-node cluster in child processes over mutual
// TLS, sent the way an attacker on one machine would: with a certificate the cluster's CA signed (a peer
// certificate of this cluster for a name that is no member, "intruder"; or the admin CLI's certificate).
// After each, the cluster still has its leader (no election was forced: the term is unchanged), commits
// writes, and every acknowledged write is readable from every member.
//
// On the main branch before issue 10 each of them broke the cluster: (1) every node adopted term 2^53-1
// and no leader was ever elected again; (2) every node wiped its committed log; (3) a learner that never
// reports its capabilities joined for good; (4) each message forced an election.
//
// (1), (3) and (4a) are refused at the edge (transports/grpc/peer-gate.ts). (2) and (4b) come from a
// certificate the edge lets through (a peer of this cluster, claiming an id no member holds): that a
// non-member changes nothing is the engine's rule (marked "engine half").
import assert from 'node:assert/strict';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import type { JsonObject } from '../../store/document-store.js';
import * as pb from '../../proto/gen/svc/replication/v1/replication.js';
import { methodPath } from '../../transports/grpc/methods.js';
import type { NodeConfig, NodeTls } from '../../cli/node/config.js';
import { ChildNode } from './child-node.js';
import { Probe, probeCredentials, type ProbeOutcome } from './grpc-probe.js';
import {
  getStatus,
  httpGet,
  makePki,
  metricValue,
  nodeConfig,
  planNodes,
  removeDir,
  tempDir,
  waitFor,
  type Pki,
  type StatusDoc,
} from './harness.js';

/** TICK_MS: a 1-2 s election timeout, so a loaded machine does not elect by itself while the test watches the term. */
const TICK_MS = 100;
const NAMES = ['t1', 't2', 't3'];
const INTRUDER = 'intruder';
const NON_MEMBER_ID = 99;
const WRITER_PUTS_MAX = 5_000;
const WRITES_DURING_ATTACK = 10;
/** REPORT_COUNT reports at REPORT_INTERVAL_MS: the 5/s flood that starved writes. */
const REPORT_COUNT = 10;
const REPORT_INTERVAL_MS = 200;

describe('node: foreign traffic against a real cluster (issue 10)', function () {
  this.timeout(180_000);
  let dir: string;
  let pki: Pki;
  const configs = new Map<string, NodeConfig>();
  const children = new Map<string, ChildNode>();
  const acknowledged = new Map<string, { value: JsonObject; version: number }>();

  const httpOf = (name: string): string => `http://${configs.get(name)!.httpListen}`;
  const grpcOf = (name: string): string => configs.get(name)!.grpcListen;
  const metricsOf = (name: string): string => `http://${configs.get(name)!.metricsListen}`;
  const statuses = async (): Promise<StatusDoc[]> => Promise.all(NAMES.map((name) => getStatus(httpOf(name))));

  async function leader(): Promise<StatusDoc> {
    let found: StatusDoc | null = null;
    await waitFor(
      async () => {
        found = (await statuses()).filter((s) => s.role === 'leader').sort((a, b) => b.term - a.term)[0] ?? null;
        return found !== null;
      },
      'a leader',
      20_000,
    );
    return found!;
  }

  /** send makes one raw call to a node with a certificate; every call names this cluster's id. */
  async function send(
    to: string,
    tls: NodeTls,
    method: 'Heartbeat' | 'ReportApplied' | 'TimeoutNow' | 'JoinCluster' | 'RequestVote' | 'StreamSegments',
    bytes: Uint8Array,
  ): Promise<ProbeOutcome> {
    const { credentials, options } = probeCredentials(tls, pki.clusterId);
    const probe = new Probe(grpcOf(to), credentials, options);
    try {
      return method === 'StreamSegments'
        ? await probe.stream(methodPath(method), Buffer.from(bytes))
        : await probe.unary(methodPath(method), Buffer.from(bytes));
    } finally {
      probe.close();
    }
  }

  /** writing puts keys through a follower until stopped; only answered puts count as acknowledged. */
  function writing(through: string, prefix: string): { stop(): Promise<void>; count(): number } {
    let stopped = false;
    let count = 0;
    const done = (async () => {
      for (let i = 0; i < WRITER_PUTS_MAX && !stopped; i++) {
        const key = `${prefix}/${String(i).padStart(5, '0')}`;
        const value = { i };
        try {
          const { version } = await children.get(through)!.put(key, value);
          acknowledged.set(key, { value, version });
          count++;
        } catch {
          // not acknowledged: it may or may not have committed
        }
      }
    })();
    return {
      stop: async () => {
        stopped = true;
        await done;
      },
      count: () => count,
    };
  }

  /**
   * stillSound: the same leader in the same term on every node (no election was forced), new writes
   * commit, and every acknowledged write is on every member at the version it was acknowledged with.
   */
  async function stillSound(before: StatusDoc, what: string): Promise<void> {
    const now = await leader();
    assert.equal(now.name, before.name, `${what}: the leader is kept`);
    for (const s of await statuses()) {
      assert.equal(s.term, before.term, `${what}: ${s.name} is still in term ${before.term}`);
      assert.equal(s.leaderId, before.id, `${what}: ${s.name} still follows ${before.name}`);
      assert.ok(s.commitSeq >= 1, `${what}: ${s.name} keeps its commit seqno`);
    }
    const follower = NAMES.find((n) => n !== before.name)!;
    for (let i = 0; i < 3; i++) {
      const { version } = await children.get(follower)!.put(`after/${what}/${i}`, { i });
      acknowledged.set(`after/${what}/${i}`, { value: { i }, version });
    }
    const commit = (await getStatus(httpOf(before.name))).commitSeq;
    for (const [name, child] of children) {
      await waitFor(
        async () => (await getStatus(httpOf(name))).appliedSeq >= commit,
        `${name} to apply through ${commit}`,
        20_000,
      );
      const byKey = new Map((await child.dump()).entries.map((e) => [e.key, e]));
      for (const [key, { value, version }] of acknowledged) {
        assert.deepEqual(
          byKey.get(key) && { value: byKey.get(key)!.value, version: byKey.get(key)!.version },
          { value, version },
          `${what}: ${name} holds ${key}`,
        );
      }
    }
  }

  before(async function () {
    dir = await tempDir('foreign');
    pki = await makePki(dir, [...NAMES, INTRUDER]);
    const plans = await planNodes(NAMES);
    const bootstrap = plans.map((p) => p.member);
    for (const plan of plans)
      configs.set(
        plan.name,
        nodeConfig(plan, join(dir, plan.name), pki.tls(plan.name), { bootstrap }, { tickMs: TICK_MS }),
      );
    const started = await Promise.all(NAMES.map((name) => ChildNode.start(configs.get(name)!)));
    for (const child of started) children.set(child.config.name, child);
    const first = await leader();
    const writer = writing(
      NAMES.find((n) => n !== first.name)!,
      'warmup',
    );
    await waitFor(() => writer.count() >= 20, 'twenty acknowledged writes', 30_000);
    await writer.stop();
  });

  after(async function () {
    await Promise.all([...children.values()].map((c) => c.stop().catch(() => undefined)));
    if (dir) await removeDir(dir);
  });

  it('(1) a Heartbeat with term 2^53-1 from non-member region 99 is refused everywhere: no node adopts the term', async function () {
    const before = await leader();
    const absurd = Number.MAX_SAFE_INTEGER;
    const heartbeat = pb.HeartbeatRequest.encode(
      pb.HeartbeatRequest.fromPartial({
        shardId: NON_MEMBER_ID,
        regionId: NON_MEMBER_ID,
        leaderRegion: NON_MEMBER_ID,
        term: absurd,
        leaderLastSeq: 1,
      }),
    ).finish();
    // The same term in every message that carries one.
    const vote = pb.VoteRequest.encode(
      pb.VoteRequest.fromPartial({
        term: absurd,
        candidateRegion: NON_MEMBER_ID,
        lastLogTerm: absurd,
        lastLogSeq: absurd,
      }),
    ).finish();
    const report = pb.AppliedReport.encode(
      pb.AppliedReport.fromPartial({
        reporterShard: NON_MEMBER_ID,
        sourceShard: before.id,
        appliedSeqno: 1,
        reporterTerm: absurd,
        capabilities: 1,
      }),
    ).finish();
    for (const name of NAMES) {
      for (const [method, bytes] of [
        ['Heartbeat', heartbeat],
        ['RequestVote', vote],
        ['ReportApplied', report],
      ] as const) {
        const outcome = await send(name, pki.tls(INTRUDER), method, bytes);
        assert.equal(outcome.code, grpc.status.INVALID_ARGUMENT, `${name} ${method}: ${outcome.details}`);
        assert.match(outcome.details, /[tT]erm = 9007199254740991 is beyond/);
      }
    }
    const metrics = (await httpGet(`${metricsOf(before.name)}/metrics`)).text;
    assert.ok(
      (metricValue(metrics, 'svc_peer_calls_refused_total', 'reason="bad-value"') ?? 0) >= 3,
      'refusals are counted',
    );
    await stillSound(before, 'absurd term');
    for (const s of await statuses()) assert.ok(s.term < absurd - 1, `${s.name} term ${s.term}`);
  });

  it('(2) a Heartbeat from a non-member at term+1 with prev_log 0/0, sent to all three nodes, deletes nothing [engine half]', async function () {
    const before = await leader();
    const commits = new Map((await statuses()).map((s) => [s.name, s.commitSeq]));
    const heartbeat = pb.HeartbeatRequest.encode(
      pb.HeartbeatRequest.fromPartial({
        shardId: NON_MEMBER_ID,
        regionId: NON_MEMBER_ID,
        leaderRegion: NON_MEMBER_ID,
        term: before.term + 1,
        prevLogTerm: 0,
        prevLogSeq: 0,
      }),
    ).finish();
    for (const name of NAMES) await send(name, pki.tls(INTRUDER), 'Heartbeat', heartbeat);
    for (const s of await statuses())
      assert.ok(
        s.commitSeq >= commits.get(s.name)!,
        `${s.name} commit ${s.commitSeq} fell below ${commits.get(s.name)}`,
      );
    await stillSound(before, 'zero prev from a non-member');
  });

  it('(3) a JoinCluster with grpc_addr "not a host:port" is refused with a refusal_reason: the roster is unchanged', async function () {
    const before = await leader();
    const join = pb.JoinRequest.encode({
      name: INTRUDER,
      grpcAddr: 'not a host:port',
      httpAddr: 'http://127.0.0.1:9',
      capabilities: 1,
    }).finish();
    for (const name of NAMES) {
      const outcome = await send(name, pki.tls(INTRUDER), 'JoinCluster', join);
      assert.equal(outcome.code, grpc.status.OK, outcome.details);
      const response = pb.JoinResponse.decode(outcome.bytes!);
      assert.equal(response.accepted, false, `${name} accepted the join`);
      assert.match(response.refusalReason, /^invalid: grpc_addr "not a host:port": /);
    }
    // A well-formed JoinCluster may not name someone else than the certificate's holder.
    const impostor = pb.JoinRequest.encode({
      name: 'n9',
      grpcAddr: '127.0.0.1:9',
      httpAddr: 'http://127.0.0.1:9',
      capabilities: 1,
    }).finish();
    assert.equal(
      (await send(before.name, pki.tls(INTRUDER), 'JoinCluster', impostor)).code,
      grpc.status.PERMISSION_DENIED,
    );
    for (const s of await statuses()) {
      assert.deepEqual(s.members.map((m) => m.name).sort(), [...NAMES].sort(), `${s.name}'s roster`);
    }
    const metrics = (await httpGet(`${metricsOf(before.name)}/metrics`)).text;
    assert.ok((metricValue(metrics, 'svc_peer_calls_refused_total', 'reason="bad-join"') ?? 0) >= 1);
    await stillSound(before, 'bad join');
  });

  it('(4a) StreamSegments at term+5 from a non-member and TimeoutNow signed by the admin certificate force no election', async function () {
    const before = await leader();
    const followers = NAMES.filter((n) => n !== before.name);
    const writer = writing(followers[0]!, 'attack4a');
    try {
      const startCount = writer.count();
      const stream = pb.StreamRequest.encode({ shardId: before.id, fromSeqno: 1, term: before.term + 5 }).finish();
      const pulled = await send(before.name, pki.tls(INTRUDER), 'StreamSegments', stream);
      assert.equal(pulled.code, grpc.status.PERMISSION_DENIED, `StreamSegments from a non-member: ${pulled.details}`);
      assert.match(pulled.details, /serves members only/);
      const timeoutNow = pb.TimeoutNowRequest.encode({ term: before.term, leaderRegion: before.id }).finish();
      for (const name of followers) {
        const outcome = await send(name, pki.adminTls(), 'TimeoutNow', timeoutNow);
        assert.equal(
          outcome.code,
          grpc.status.PERMISSION_DENIED,
          `TimeoutNow with the admin certificate: ${outcome.details}`,
        );
        assert.match(outcome.details, /accepts peer certificates only/);
      }
      await waitFor(
        () => writer.count() >= startCount + WRITES_DURING_ATTACK,
        'writes to go on during the attack',
        30_000,
      );
    } finally {
      await writer.stop();
    }
    const metrics = (await httpGet(`${metricsOf(followers[0]!)}/metrics`)).text;
    assert.ok((metricValue(metrics, 'svc_peer_calls_refused_total', 'reason="wrong-role"') ?? 0) >= 1);
    await stillSound(before, 'stream and admin TimeoutNow');
  });

  it('(4b) ReportApplied at term+1000 (5/s) and Heartbeat at term+1 from non-member region 99 force no election [engine half]', async function () {
    const before = await leader();
    const followers = NAMES.filter((n) => n !== before.name);
    const writer = writing(followers[0]!, 'attack4b');
    try {
      const startCount = writer.count();
      const report = pb.AppliedReport.encode(
        pb.AppliedReport.fromPartial({
          reporterShard: NON_MEMBER_ID,
          sourceShard: before.id,
          appliedSeqno: 1,
          reporterTerm: before.term + 1000,
          capabilities: 1,
        }),
      ).finish();
      for (let i = 0; i < REPORT_COUNT; i++) {
        await send(before.name, pki.tls(INTRUDER), 'ReportApplied', report);
        await new Promise((resolve) => setTimeout(resolve, REPORT_INTERVAL_MS));
      }
      const heartbeat = pb.HeartbeatRequest.encode(
        pb.HeartbeatRequest.fromPartial({
          shardId: NON_MEMBER_ID,
          regionId: NON_MEMBER_ID,
          leaderRegion: NON_MEMBER_ID,
          term: before.term + 1,
          prevLogTerm: before.term,
          prevLogSeq: 1,
        }),
      ).finish();
      for (const name of followers) await send(name, pki.tls(INTRUDER), 'Heartbeat', heartbeat);
      await waitFor(
        () => writer.count() >= startCount + WRITES_DURING_ATTACK,
        'writes to go on during the attack',
        30_000,
      );
    } finally {
      await writer.stop();
    }
    await stillSound(before, 'forced elections');
  });
});
