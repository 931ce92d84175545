// The supervisor's stop: SIGTERM first; a child that ignores it is SIGKILLed once the grace is
// over. Children are plain node scripts that say "ready" in their log once their handlers are set.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { SupervisedNode } from '../../cli/supervisor.js';
import { alive, removeDir, tempDir, waitFor } from './helpers.js';

const GRACE_MS = 300;
const KILL_WAIT_MS = 5_000;
const READY_TIMEOUT_MS = 20_000;

describe('svc cluster supervisor: SIGTERM, then SIGKILL after a bound', function () {
  this.timeout(60_000);
  let dir: string;
  const started: SupervisedNode[] = [];

  before(async function () {
    dir = await tempDir('supervisor');
  });

  after(async function () {
    for (const child of started) child.signal('SIGKILL');
    if (dir) await removeDir(dir);
  });

  async function startChild(name: string, script: string): Promise<SupervisedNode> {
    const log = join(dir, `${name}.log`);
    const child = SupervisedNode.spawn(
      name,
      ['-e', `${script}; console.log('ready'); setInterval(() => {}, 1000);`],
      log,
    );
    started.push(child);
    await waitFor(
      async () => (await readFile(log, 'utf8').catch(() => '')).includes('ready'),
      `${name} to be ready`,
      READY_TIMEOUT_MS,
    );
    return child;
  }

  it('a child that stops on SIGTERM is not killed', async function () {
    const child = await startChild('polite', "process.on('SIGTERM', () => process.exit(0))");
    const exit = await child.stop(GRACE_MS * 10, KILL_WAIT_MS);
    assert.deepEqual(exit, { name: 'polite', code: 0, signal: null });
  });

  it('a child that ignores SIGTERM is killed after the grace', async function () {
    const child = await startChild('stubborn', "process.on('SIGTERM', () => {})");
    const startedAt = Date.now();
    const exit = await child.stop(GRACE_MS, KILL_WAIT_MS);
    assert.deepEqual(exit, { name: 'stubborn', code: null, signal: 'SIGKILL' });
    assert.ok(Date.now() - startedAt >= GRACE_MS);
    assert.equal(alive(child.pid), false);
  });
});
