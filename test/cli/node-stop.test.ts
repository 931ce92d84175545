// `svc node` stops on SIGTERM even while its start still waits: the developer API's start waits for its Redis
// without bound, and a Kubernetes pod gets one SIGTERM, then SIGKILL after its termination grace. Before, the
// signal was acted on only once the start had finished, so such a node was always killed.
//
// And it exits once stopped while its peers' names do not resolve: process.exit joins libuv's threadpool, so a
// getaddrinfo still waiting there on a DNS that does not answer (a stopped podman container's alias: 25 s) kept a
// stopped node alive past its pod's grace (`make image-test`, exit 137). The node looks peer names up with
// c-ares (transports/node/peer-names.ts), which its stop cancels. The DNS that never answers is a UDP socket of
// this test, named by the node's /etc/resolv.conf in a mount namespace of its own (test/cli/black-hole-dns.ts).
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { freePorts } from '../../cli/free-ports.js';
import { NODE_STOP_TIMEOUT_MS } from '../../cli/limits.js';
import { httpStatus, LongRunning, removeDir, SVC_BIN, tempDir, waitFor } from './helpers.js';
import { useBlackHoleDns } from './black-hole-dns.js';

const READY_TIMEOUT_MS = 60_000;

describe('svc node: SIGTERM during a start that waits for Redis', function () {
  this.timeout(120_000);
  let dir: string;
  let node: LongRunning | undefined;

  before(async () => {
    dir = await tempDir('node-stop');
  });

  after(async () => {
    node?.kill();
    if (dir) await removeDir(dir);
  });

  it('stops cleanly and exits 0 within the stop bound', async () => {
    // Nothing listens on the Redis port: the API's start keeps waiting for it.
    const [grpc, http, redis] = await freePorts(3);
    const args = ['node', '--name', 'n1', '--data-dir', join(dir, 'n1'), '--insecure', '--log-level', 'warn'];
    args.push('--grpc-listen', `127.0.0.1:${grpc}`, '--http-listen', `127.0.0.1:${http}`);
    args.push('--founder', `n1,127.0.0.1:${grpc},http://127.0.0.1:${http}`, '--api', '--api-no-local-redis');
    const env = { ...process.env, REDIS_URL: `redis://:not-a-secret@127.0.0.1:${redis}`, SVC_RUN_WORKER: '0' };
    node = new LongRunning(
      spawn(process.execPath, [SVC_BIN, ...args], { cwd: dir, env, stdio: ['ignore', 'pipe', 'pipe'] }),
    );
    // The node itself runs (a one-node cluster elects itself) while its API's start waits.
    await waitFor(
      async () => (await httpStatus(`http://127.0.0.1:${http}/ready`)) === 200,
      'n1 ready',
      READY_TIMEOUT_MS,
    );
    assert.doesNotMatch(node.stderr, /: running/, 'the start is still waiting for Redis');
    node.proc.kill('SIGTERM');
    const exit = await node.exitWithin(NODE_STOP_TIMEOUT_MS + 5_000);
    assert.ok(exit, `still running after SIGTERM; stderr:\n${node.stderr}`);
    assert.deepEqual(exit, { code: 0, signal: null }, node.stderr);
    assert.match(node.stderr, /stopping before it finished starting \(SIGTERM\)/);
    assert.match(node.stderr, /svc node n1: stopped/);
  });
});

const STARTED_TIMEOUT_MS = 60_000;

describe("svc node: SIGTERM while its peers' names do not resolve", function () {
  this.timeout(120_000);
  const dns = useBlackHoleDns('node-stop-dns');

  /** startNode runs `svc node args` with /etc/resolv.conf naming the DNS that never answers. */
  function startNode(args: string[]): LongRunning {
    return dns.svc(['node', ...args]);
  }

  /** sentAtLeastOnce: the node's /metrics counts a peer call of `method` started (its peer's name is being looked up). */
  async function sentAtLeastOnce(node: LongRunning, metrics: number, method: string): Promise<void> {
    const line = new RegExp(`^svc_peer_requests_sent_total\\{[^}]*method="${method}"[^}]*\\} ([0-9.e+]+)$`, 'm');
    await waitFor(
      async () => {
        if (!node.running) throw new Error(`exited before a ${method} call: ${node.stderr}`);
        const response = await fetch(`http://127.0.0.1:${metrics}/metrics`, { signal: AbortSignal.timeout(3_000) });
        const found = line.exec(await response.text());
        return found !== null && Number(found[1]) >= 1;
      },
      `a ${method} call started`,
      STARTED_TIMEOUT_MS,
    );
  }

  async function stopsWithinBound(node: LongRunning, name: string): Promise<void> {
    node.proc.kill('SIGTERM');
    const exit = await node.exitWithin(NODE_STOP_TIMEOUT_MS + 5_000);
    assert.ok(exit, `still running after SIGTERM and its stop; stderr:\n${node.stderr}`);
    assert.deepEqual(exit, { code: 0, signal: null }, node.stderr);
    assert.match(node.stderr, new RegExp(`svc node ${name}: stopped`));
    // The stop closed what it opened: nothing keeps the loop alive at the exit (svc node names what would).
    assert.doesNotMatch(node.stderr, /still active/);
  }

  it('a founder campaigning to peers whose names the DNS does not answer exits 0 within the stop bound', async () => {
    const [grpc, http, metrics] = await freePorts(3);
    const args = ['--name', 'n1', '--data-dir', join(dns.dir, 'n1'), '--insecure', '--log-level', 'warn'];
    args.push('--grpc-listen', `127.0.0.1:${grpc}`, '--http-listen', `127.0.0.1:${http}`);
    args.push('--metrics-listen', `127.0.0.1:${metrics}`);
    args.push('--founder', `n1,127.0.0.1:${grpc},http://127.0.0.1:${http}`);
    args.push('--founder', 'n2,n2.peers.test:7000,http://n2.peers.test:8080');
    args.push('--founder', 'n3,n3.peers.test:7000,http://n3.peers.test:8080');
    const node = startNode(args);
    // Its pre-vote dials n2 and n3 (the lean client): their names are being looked up from here on.
    await sentAtLeastOnce(node, metrics, 'RequestVote');
    await stopsWithinBound(node, 'n1');
  });

  it('a joiner whose seeds the DNS does not answer exits 0 within the stop bound', async () => {
    const [grpc, http, metrics] = await freePorts(3);
    const args = ['--name', 'j1', '--data-dir', join(dns.dir, 'j1'), '--insecure', '--log-level', 'warn'];
    args.push('--grpc-listen', `127.0.0.1:${grpc}`, '--http-listen', `127.0.0.1:${http}`);
    args.push('--metrics-listen', `127.0.0.1:${metrics}`);
    args.push('--seed', 'n2.peers.test:7000', '--seed', 'n3.peers.test:7000');
    const node = startNode(args);
    // Its JoinCluster calls go over grpc-js channels to the seeds, whose names are being looked up from here on.
    await sentAtLeastOnce(node, metrics, 'JoinCluster');
    await stopsWithinBound(node, 'j1');
  });
});
