// `svc cluster` from a clean directory, and the admin commands against it, all through bin/svc.js
// in their own processes: three nodes turn /health 200 and cluster.json names them; `svc status`
// shows every member's heartbeat fields; `svc keys create` writes a working admin key; a fourth
// `svc node` joins as a learner, is promoted through a follower (which names the leader: the CLI retries
// there), then removed (503), and stops on
// SIGINT; leadership moves on `svc members transfer`; SIGINT to the supervisor leaves no process.
// The nodes' HTTP ports serve HTTPS with the cluster's CA (undici's fetch and `curl --cacert`), refuse plain
// HTTP with 400, carry the security headers, and keep /metrics on the metrics listener.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { readCertIdentity } from '../../cli/certs/certs.js';
import type { ClusterFile } from '../../cli/cluster-file.js';
import type { MemberStatus } from '../../cli/status-format.js';
import { CLUSTER_ID } from '../../transports/grpc/peer-identity.js';
import { promisify } from 'node:util';
import { Agent, fetch as undiciFetch } from 'undici';
import {
  alive,
  httpStatus as httpStatusOf,
  LongRunning,
  processesMentioning,
  removeDir,
  runCli,
  tempDir,
  waitFor,
} from './helpers.js';

const run = promisify(execFile);

/** PACKAGE_VERSION is what a release writes to package.json: the nodes report it as build_version. */
const PACKAGE_VERSION = (
  JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }
).version;

/** CLUSTER_TICK_MS shortens elections; HEALTHY_TIMEOUT_MS bounds three tsx processes starting on two shared cores. */
const CLUSTER_TICK_MS = 50;
const HEALTHY_TIMEOUT_MS = 120_000;
const CONDITION_TIMEOUT_MS = 30_000;
const STOP_TIMEOUT_MS = 40_000;

interface StatusDoc {
  id: number;
  name: string;
  role: string;
  leaderId: number;
  members: Array<{ id: number; name: string; grpcAddr: string; httpAddr: string; role: string }>;
}

/** clusterCa trusts the cluster's CA (cluster.json's tls.caFile) once the cluster is made. */
let clusterCa: Agent | undefined;
const httpStatus = (url: string, headers: Record<string, string> = {}): Promise<number> =>
  httpStatusOf(url, headers, clusterCa);

async function statusOf(httpAddr: string): Promise<StatusDoc | null> {
  try {
    const response = await undiciFetch(`${httpAddr}/status`, {
      signal: AbortSignal.timeout(3_000),
      ...(clusterCa ? { dispatcher: clusterCa } : {}),
    });
    return response.ok ? ((await response.json()) as StatusDoc) : null;
  } catch {
    return null;
  }
}

describe('svc cluster and the admin commands against it', function () {
  this.timeout(240_000);
  let dir: string;
  let supervisor: LongRunning | null = null;
  let joiner: LongRunning | null = null;
  let cluster: ClusterFile;

  const readCluster = async (): Promise<ClusterFile> =>
    JSON.parse(await readFile(join(dir, '.cluster', 'cluster.json'), 'utf8')) as ClusterFile;
  const leader = async (): Promise<StatusDoc> => {
    for (const m of cluster.members) {
      const s = await statusOf(m.httpAddr);
      if (s?.role === 'leader') return s;
    }
    throw new Error('no leader');
  };

  before(async function () {
    dir = await tempDir('cluster');
  });

  after(async function () {
    await clusterCa?.close();
    joiner?.kill();
    supervisor?.kill();
    // Whatever is left that this test started (its command lines name the temp dir) is ended by id.
    for (const { pid } of processesMentioning(dir)) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    if (dir) await removeDir(dir);
  });

  it('brings up three nodes from a clean tree: every /health answers 200 and cluster.json names them', async function () {
    // Autopilot off: the fourth node is promoted by `svc members promote` here (autopilot-scale.test.ts covers autopilot).
    supervisor = LongRunning.start(
      ['cluster', '--tick-ms', String(CLUSTER_TICK_MS), '--log-level', 'warn', '--engine-limit', 'autopilotEnabled=0'],
      dir,
    );
    await supervisor.waitOutput(/all 3 nodes answer \/health 200/, 'the cluster to turn healthy', HEALTHY_TIMEOUT_MS);
    assert.match(supervisor.stdout, /made certificates \(ca, n1, n2, n3, admin, api\)/);
    cluster = await readCluster();
    assert.equal(cluster.tls.mode, 'mtls');
    if (cluster.tls.mode === 'mtls') clusterCa = new Agent({ connect: { ca: await readFile(cluster.tls.caFile) } });
    assert.deepEqual(
      cluster.members.map((m) => [m.name, m.id]),
      [
        ['n1', 1],
        ['n2', 2],
        ['n3', 3],
      ],
    );
    for (const m of cluster.members) {
      assert.match(m.grpcAddr, /^127\.0\.0\.1:\d+$/);
      assert.match(m.httpAddr, /^https:\/\/127\.0\.0\.1:\d+$/);
      assert.match(m.metricsAddr ?? '', /^http:\/\/127\.0\.0\.1:\d+$/);
      assert.ok(m.pid > 0 && alive(m.pid), `${m.name} pid ${m.pid}`);
      assert.equal(await httpStatus(`${m.httpAddr}/health`), 200);
    }
    assert.equal(cluster.tls.mode, 'mtls');
    assert.match(cluster.clusterId ?? '', CLUSTER_ID, 'a cluster id is made at creation');
    // Certificates of two kinds: the nodes' peer certificates, the CLI's admin certificate, all of this cluster.
    for (const m of cluster.members)
      assert.deepEqual(await readCertIdentity(join(dir, '.cluster', 'certs', `${m.name}.crt`)), {
        role: 'peer',
        clusterId: cluster.clusterId,
        name: m.name,
      });
    assert.deepEqual(await readCertIdentity(join(dir, '.cluster', 'certs', 'admin.crt')), {
      role: 'admin',
      clusterId: cluster.clusterId,
      name: 'admin',
    });
    assert.match(cluster.adminKey ?? '', /^svc_/);
    // The developer API answers on every node's HTTP port with the key the cluster bootstrapped.
    for (const m of cluster.members)
      assert.equal(await httpStatus(`${m.httpAddr}/projects`, { 'x-api-key': cluster.adminKey! }), 200);
  });

  it("every member answers 200 over HTTPS with cluster.json's CA (fetch and curl --cacert), refuses plain HTTP, sends the security headers", async function () {
    assert.equal(cluster.tls.mode, 'mtls');
    const caFile = cluster.tls.mode === 'mtls' ? cluster.tls.caFile : '';
    for (const m of cluster.members) {
      const response = await undiciFetch(`${m.httpAddr}/health`, { dispatcher: clusterCa! });
      assert.equal(response.status, 200);
      assert.deepEqual(await response.json(), { status: 'ok' });
      // The usual headers, on the node's own paths and on the API's.
      for (const answer of [response, await undiciFetch(`${m.httpAddr}/projects`, { dispatcher: clusterCa! })]) {
        assert.equal(answer.headers.get('strict-transport-security'), 'max-age=31536000');
        assert.equal(answer.headers.get('x-content-type-options'), 'nosniff');
        assert.equal(answer.headers.get('x-frame-options'), 'SAMEORIGIN');
        assert.equal(answer.headers.get('referrer-policy'), 'no-referrer');
        assert.match(answer.headers.get('content-security-policy') ?? '', /default-src 'none'/);
        if (!answer.bodyUsed) await answer.body?.cancel();
      }
      const curl = await run('curl', [
        '-sS',
        '--cacert',
        caFile,
        '-o',
        '/dev/null',
        '-w',
        '%{http_code}',
        `${m.httpAddr}/health`,
      ]);
      assert.equal(curl.stdout, '200');
      // Without the cluster's CA the certificate is not trusted: the CA is what makes it work.
      await assert.rejects(undiciFetch(`${m.httpAddr}/health`, { signal: AbortSignal.timeout(5_000) }));
      // Plain HTTP to the HTTPS port: a clear 400, at once (no hang, no empty reply).
      const plainUrl = m.httpAddr.replace(/^https:/, 'http:');
      const plain = await undiciFetch(`${plainUrl}/health`, { signal: AbortSignal.timeout(5_000) });
      assert.equal(plain.status, 400);
      assert.equal(((await plain.json()) as { code: string }).code, 'HTTPS_REQUIRED');
      const plainCurl = await run('curl', [
        '-sS',
        '-m',
        '5',
        '-o',
        '/dev/null',
        '-w',
        '%{http_code}',
        `${plainUrl}/health`,
      ]);
      assert.equal(plainCurl.stdout, '400');
      // /metrics is on the metrics listener (plaintext, loopback), not on the HTTP port.
      const metrics = await undiciFetch(`${m.metricsAddr!}/metrics`);
      assert.equal(metrics.status, 200);
      assert.match(await metrics.text(), /^svc_term \d+$/m);
      assert.equal(await httpStatus(`${m.httpAddr}/metrics`), 404);
    }
  });

  it('svc status shows term, role, leader, seqnos, readiness, versions and every heartbeat field of each member', async function () {
    const result = await runCli(['status', '--json'], { cwd: dir });
    assert.equal(result.code, 0, result.stderr);
    const { nodes } = JSON.parse(result.stdout) as { nodes: MemberStatus[] };
    assert.deepEqual(
      nodes.map((n) => n.name),
      ['n1', 'n2', 'n3'],
    );
    const statuses = nodes.map((n) => n.status!);
    const leaders = statuses.filter((s) => s.role === 'leader');
    assert.equal(leaders.length, 1);
    for (const s of statuses) {
      assert.equal(s.leaderId, leaders[0]!.id);
      assert.equal(s.term, leaders[0]!.term);
      assert.ok(s.ready && s.healthy);
      assert.ok(s.commitSeq >= 1 && s.appliedSeq >= 1);
      assert.equal(s.buildVersion, PACKAGE_VERSION);
      assert.equal(s.versionMajorSpread, 0);
      const hb = s.lastHeartbeat!;
      assert.equal(hb.direction, s.role === 'leader' ? 'sent' : 'received');
      assert.equal(hb.buildVersion, PACKAGE_VERSION);
      assert.match(hb.lastHeartbeatNs, /^\d{19}$/);
      assert.ok(hb.diskBytes > 0, 'disk_bytes measured');
      assert.ok(hb.entityCount >= 2, 'entity_count counts the admin user and key');
      assert.ok(Number.isFinite(hb.signalThroughputEps));
      assert.deepEqual(
        Object.keys(hb.replicationLag).map(Number).sort(),
        statuses
          .filter((o) => o.role !== 'leader')
          .map((o) => o.id)
          .sort(),
      );
    }
    const text = await runCli(['status'], { cwd: dir });
    assert.equal(text.code, 0, text.stderr);
    for (const field of [
      'entity_count',
      'signal_throughput_eps',
      'disk_bytes',
      'replication_lag',
      'last_heartbeat_ns',
      'build_version',
      'version spread',
      'commit',
      'applied',
      'ready=true',
    ]) {
      assert.ok(text.stdout.includes(field), `${field} missing from:\n${text.stdout}`);
    }
  });

  it('svc keys create writes another admin key into the store that every node accepts', async function () {
    const result = await runCli(['keys', 'create', '--name', 'second-admin', '--json'], { cwd: dir });
    assert.equal(result.code, 0, result.stderr);
    const { key } = JSON.parse(result.stdout) as { key: string };
    assert.match(key, /^svc_/);
    assert.notEqual(key, cluster.adminKey);
    for (const m of cluster.members)
      assert.equal(await httpStatus(`${m.httpAddr}/projects`, { 'x-api-key': key }), 200);
    assert.equal(
      await httpStatus(`${cluster.members[0]!.httpAddr}/projects`, { 'x-api-key': `${key.slice(0, -2)}xx` }),
      401,
    );
  });

  it('a fourth svc node joins as a learner; members promote (through a follower) and remove change its role; SIGINT stops it', async function () {
    const certs = join(dir, '.cluster', 'certs');
    const issued = await runCli(
      [
        'certs',
        'node',
        '--out',
        certs,
        '--name',
        'n4',
        '--cluster-id',
        cluster.clusterId!,
        '--peers-service',
        'peers',
        '--namespace',
        'local',
      ],
      { cwd: dir },
    );
    assert.equal(issued.code, 0, issued.stderr);
    joiner = LongRunning.start(
      [
        'node',
        '--name',
        'n4',
        '--data-dir',
        join(dir, 'n4-data'),
        '--grpc-listen',
        '127.0.0.1:0',
        '--http-listen',
        '127.0.0.1:0',
        '--seed',
        cluster.members[1]!.grpcAddr,
        '--tls-ca',
        join(certs, 'ca.crt'),
        '--tls-cert',
        join(certs, 'n4.crt'),
        '--tls-key',
        join(certs, 'n4.key'),
        '--tls-server-name',
        'localhost',
        '--tick-ms',
        String(CLUSTER_TICK_MS),
        '--log-level',
        'warn',
      ],
      dir,
    );
    await joiner.waitOutput(/svc node n4: running/, 'n4 to start', HEALTHY_TIMEOUT_MS);
    const roleOfN4 = async (): Promise<string> => (await leader()).members.find((m) => m.name === 'n4')?.role ?? '';
    await waitFor(async () => (await roleOfN4()) === 'learner', 'n4 to join as a learner', CONDITION_TIMEOUT_MS);

    const listed = await runCli(['members', 'list', '--json'], { cwd: dir });
    assert.equal(listed.code, 0, listed.stderr);
    const n4 = (
      JSON.parse(listed.stdout) as { members: Array<{ name: string; role: string; httpAddr: string }> }
    ).members.find((m) => m.name === 'n4')!;
    assert.equal(n4.role, 'learner');
    await waitFor(
      async () => (await httpStatus(`${n4.httpAddr}/health`)) === 200,
      'n4 /health 200',
      CONDITION_TIMEOUT_MS,
    );

    const currentLeader = await leader();
    const followerAddr = cluster.members.find((m) => m.id !== currentLeader.id)!.grpcAddr;
    const promoted = await runCli(['members', 'promote', 'n4', '--node', followerAddr], { cwd: dir });
    assert.equal(promoted.code, 0, promoted.stderr);
    assert.match(promoted.stdout, /promote n4 \(id 4\): done by leader n\d/);
    assert.equal(await roleOfN4(), 'voter');

    const removed = await runCli(['members', 'remove', 'n4'], { cwd: dir });
    assert.equal(removed.code, 0, removed.stderr);
    await waitFor(async () => (await roleOfN4()) === 'removed', 'n4 to be removed', CONDITION_TIMEOUT_MS);
    await waitFor(
      async () => (await httpStatus(`${n4.httpAddr}/health`)) === 503,
      'n4 /health 503 once removed',
      CONDITION_TIMEOUT_MS,
    );
    const again = await runCli(['members', 'remove', 'n4'], { cwd: dir });
    assert.equal(again.code, 1);
    assert.match(again.stderr, /member n4 \(id 4\) was removed/);
    const unknown = await runCli(['members', 'promote', 'nobody'], { cwd: dir });
    assert.equal(unknown.code, 1);
    assert.match(unknown.stderr, /NOT_FOUND: no member named "nobody"/);

    joiner.proc.kill('SIGINT');
    const exit = await joiner.exitWithin(STOP_TIMEOUT_MS);
    assert.deepEqual(exit, { code: 0, signal: null }, joiner.stderr);
    assert.match(joiner.stderr, /svc node n4: stopping \(SIGINT\)[\s\S]*svc node n4: stopped/);
  });

  it('svc members transfer hands leadership to the named voter', async function () {
    const before = await leader();
    const target = cluster.members.find((m) => m.id !== before.id)!;
    const result = await runCli(['members', 'transfer', target.name], { cwd: dir });
    assert.equal(result.code, 0, result.stderr);
    await waitFor(async () => (await leader()).name === target.name, `${target.name} to lead`, CONDITION_TIMEOUT_MS);
  });

  it('SIGINT stops the supervisor and every child it started: no process is left', async function () {
    const running = await readCluster();
    const pids = running.members.map((m) => m.pid);
    assert.ok(pids.every((pid) => pid > 0 && alive(pid)));
    supervisor!.proc.kill('SIGINT');
    const exit = await supervisor!.exitWithin(STOP_TIMEOUT_MS);
    assert.deepEqual(exit, { code: 0, signal: null }, supervisor!.stderr);
    assert.match(supervisor!.stdout, /stopped: n1 exited with code 0; n2 exited with code 0; n3 exited with code 0/);
    for (const pid of pids) assert.equal(alive(pid), false, `pid ${pid} outlived the supervisor`);
    assert.deepEqual(processesMentioning(dir), []);
    assert.deepEqual(
      (await readCluster()).members.map((m) => m.pid),
      [0, 0, 0],
    );
  });
});
