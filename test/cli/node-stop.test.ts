// `svc node` stops on SIGTERM even while its start still waits: the developer API's start waits for its Redis
// without bound, and a Kubernetes pod gets one SIGTERM, then SIGKILL after its termination grace. Before, the
// signal was acted on only once the start had finished, so such a node was always killed.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { freePorts } from '../../cli/free-ports.js';
import { NODE_STOP_TIMEOUT_MS } from '../../cli/limits.js';
import { httpStatus, LongRunning, removeDir, SVC_BIN, tempDir, waitFor } from './helpers.js';

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
