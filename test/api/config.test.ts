import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { configFromEnv } from '../../api/config.js';
import { startLocalRedis } from '../../api/redis/local-redis.js';
import { spawn } from 'node:child_process';
import { once } from 'node:events';

describe('api: configuration from the environment', () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'svc-api-config-'));
  });
  after(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  it('reads the secret key from SVC_SECRET_KEY_FILE in preference to SVC_SECRET_KEY', () => {
    const fromFile = Buffer.alloc(32, 1);
    const file = path.join(dir, 'secret');
    writeFileSync(file, `${fromFile.toString('base64')}\n`);
    const config = configFromEnv({ SVC_SECRET_KEY_FILE: file, SVC_SECRET_KEY: Buffer.alloc(32, 2).toString('hex') });
    assert.deepEqual(config.secretKey, fromFile);
    assert.deepEqual(
      configFromEnv({ SVC_SECRET_KEY: Buffer.alloc(32, 2).toString('hex') }).secretKey,
      Buffer.alloc(32, 2),
    );
    assert.equal(configFromEnv({}).secretKey, undefined);
  });

  it('reads trusted proxies and the workspace root', () => {
    const config = configFromEnv({ SVC_TRUSTED_PROXIES: '10.0.0.1, 192.168.0.0/16,', SVC_WORKSPACE_ROOT: '/srv' });
    assert.deepEqual(config.trustedProxies, ['10.0.0.1', '192.168.0.0/16']);
    assert.equal(config.workspaceRoot, '/srv');
  });

  it('fails loudly when redis-server is not on the PATH', async () => {
    const savedPath = process.env.PATH;
    process.env.PATH = path.join(dir, 'empty-bin');
    try {
      await assert.rejects(startLocalRedis(path.join(dir, 'redis')), /redis-server is not on the PATH/);
    } finally {
      process.env.PATH = savedPath;
    }
  });
});

/** processes lists every process's pid and command line (a redis-server's is its rewritten title). */
function processes(): Array<{ pid: number; title: string }> {
  return readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .map((pid) => {
      try {
        return { pid: Number(pid), title: readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ') };
      } catch {
        return { pid: Number(pid), title: '' };
      }
    });
}

const processTitles = (): string[] => processes().map((p) => p.title);

describe('api: a node-local redis-server', () => {
  it('dies with the process that started it, even one killed with SIGKILL', async function () {
    this.timeout(30_000);
    const dir = mkdtempSync(path.join(os.tmpdir(), 'svc-local-redis-'));
    const script =
      `import { startLocalRedis } from ${JSON.stringify(path.resolve('api/redis/local-redis.ts'))};` +
      `const redis = await startLocalRedis(${JSON.stringify(path.join(dir, 'redis'))});` +
      `console.log(redis.port); setInterval(() => undefined, 1000);`;
    const parent = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    try {
      const [chunk] = (await once(parent.stdout!, 'data')) as [Buffer];
      const port = Number(chunk.toString().trim());
      const running = () => processTitles().filter((t) => t.includes(`127.0.0.1:${port}`)).length;
      assert.equal(running(), 1, `the parent's redis-server on port ${port} runs`);
      parent.kill('SIGKILL');
      const deadline = Date.now() + 20_000;
      while (running() > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
      assert.equal(running(), 0, `the redis-server on port ${port} outlived its SIGKILLed parent`);
    } finally {
      parent.kill('SIGKILL');
      // Without the fix the orphan is still there: end it, so a failing run leaks nothing.
      for (const orphan of processes().filter((p) => p.title.includes(dir))) {
        try {
          process.kill(orphan.pid, 'SIGKILL');
        } catch {
          // already gone
        }
      }
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('names its own directory in its process title, so whose it is can be told (and a cleanup finds it)', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'svc-local-redis-'));
    const redis = await startLocalRedis(path.join(dir, 'redis'));
    try {
      const ours = processTitles().filter((t) => t.includes(`127.0.0.1:${redis.port}`));
      assert.equal(ours.length, 1, `one redis-server on port ${redis.port}: ${JSON.stringify(ours)}`);
      assert.ok(ours[0]!.includes(path.join(dir, 'redis')), ours[0]);
    } finally {
      await redis.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
