import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { configFromEnv } from '../../api/config.js';
import { startLocalRedis } from '../../api/redis/local-redis.js';

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
