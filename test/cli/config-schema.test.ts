// The node's configuration schema (cli/node/config-schema.ts), through `svc node` itself: every setting fed a value
// of the wrong kind from the file, from its flag and from its variable is refused naming it, with exit code 2;
// unknown keys, flags and SVC_* variables likewise; --print-config shows each value's source. Most cases run in
// process (runSvc with its own environment); two run bin/svc.js for the real exit code.
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { runSvc } from '../../cli/main.js';
import type { Io } from '../../cli/io.js';
import { NODE_SETTINGS, type NodeSetting } from '../../cli/node/config-schema.js';
import { removeDir, runCli, tempDir } from './helpers.js';

async function svc(args: string[], env: NodeJS.ProcessEnv = {}): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const io: Io = {
    out: { write: (text: string) => (out += text) },
    err: { write: (text: string) => (err += text) },
    env,
  };
  const code = await runSvc(args, io);
  return { code, out, err };
}

/** BASE is a config a node accepts; each case spoils one setting of it. */
const BASE = {
  name: 'n1',
  dataDir: 'data',
  grpcListen: '127.0.0.1:7001',
  httpListen: '127.0.0.1:8001',
  bootstrap: [{ name: 'n1', grpcAddr: '127.0.0.1:7001', httpAddr: 'http://127.0.0.1:8001' }],
  tls: { mode: 'insecure' },
  api: {},
};

/** WRONG_VALUES are tried in turn: the first one a setting's kind refuses is its wrong value. */
const WRONG_VALUES: unknown[] = [{ wrong: 'kind' }, 'fast', 12345, true];
/** WRONG_TEXTS likewise for flags and variables (text). Every kind refuses at least one of them. */
const WRONG_TEXTS = ['fast', '-1', ' ', 'n1'];

function refused(setting: NodeSetting, candidates: readonly unknown[], read: (c: unknown) => unknown): unknown {
  const wrong = candidates.find((c) => !setting.kind.schema.safeParse(read(c)).success);
  assert.ok(wrong !== undefined, `${setting.key}: no wrong value found among ${JSON.stringify(candidates)}`);
  return wrong;
}

function withValue(key: string, value: unknown): Record<string, unknown> {
  const config = structuredClone(BASE) as Record<string, unknown>;
  const parts = key.split('.');
  let node = config;
  for (const part of parts.slice(0, -1)) {
    node[part] ??= {};
    node = node[part] as Record<string, unknown>;
  }
  node[parts.at(-1)!] = value;
  return config;
}

const escaped = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

describe('svc node: one configuration schema', function () {
  this.timeout(120_000);
  let dir: string;
  let n = 0;
  const configFile = async (config: unknown): Promise<string> => {
    const path = join(dir, `config-${++n}.json`);
    await writeFile(path, JSON.stringify(config));
    return path;
  };

  before(async function () {
    dir = await tempDir('config-schema');
  });
  after(async function () {
    if (dir) await removeDir(dir);
  });

  it('the base config is accepted (so each refusal below is its one spoilt setting)', async function () {
    const result = await svc(['node', '--config', await configFile(BASE), '--print-config']);
    assert.equal(result.code, 0, result.err);
  });

  it(`refuses a wrong value of each of the ${NODE_SETTINGS.length} file keys, naming the key (exit 2)`, async function () {
    for (const setting of NODE_SETTINGS) {
      const wrong = refused(setting, WRONG_VALUES, (c) => c);
      const path = await configFile(withValue(setting.key, wrong));
      const result = await svc(['node', '--config', path, '--print-config']);
      assert.equal(result.code, 2, `${setting.key}=${JSON.stringify(wrong)}: exit ${result.code} ${result.err}`);
      assert.match(result.err, new RegExp(`config file .*: ${escaped(setting.key)}\\b.* must`), setting.key);
      assert.equal(result.out, '');
      if (setting.secret) assert.doesNotMatch(result.err, /fast|12345/, `${setting.key}: a secret is not echoed`);
    }
  });

  it('refuses a wrong value of every flag that takes one, naming the flag (exit 2)', async function () {
    const path = await configFile(BASE);
    let flags = 0;
    for (const setting of NODE_SETTINGS) {
      for (const use of setting.flags ?? []) {
        if ('sets' in use) continue;
        flags += 1;
        const read = (c: unknown): unknown =>
          use.repeat ? [use.item ? safe(() => use.item!(c as string)) : c] : setting.kind.fromText(c as string);
        const wrong = refused(setting, WRONG_TEXTS, read) as string;
        const result = await svc(['node', '--config', path, `--${use.flag}`, wrong, '--print-config']);
        assert.equal(result.code, 2, `--${use.flag} ${JSON.stringify(wrong)}: exit ${result.code} ${result.err}`);
        assert.match(result.err, new RegExp(`--${use.flag}\\b`), `--${use.flag}: ${result.err}`);
      }
    }
    assert.ok(flags >= 25, `${flags} flags with values`);
    // The section flags check each limit by its kind too.
    const limit = await svc(['node', '--config', path, '--grpc-limit', 'unaryDeadlineMs=0', '--print-config']);
    assert.equal(limit.code, 2);
    assert.match(limit.err, /--grpc-limit unaryDeadlineMs must be from 1/);
  });

  it('refuses a wrong value of every variable, naming it, even when the API is off (exit 2)', async function () {
    const path = await configFile({ ...BASE, api: undefined });
    const variables = NODE_SETTINGS.filter((s) => s.env !== undefined);
    assert.ok(variables.length >= 30, `${variables.length} variables`);
    for (const setting of variables) {
      const wrong = refused(setting, WRONG_TEXTS, (c) => setting.kind.fromText(c as string)) as string;
      const result = await svc(['node', '--config', path, '--print-config'], { [setting.env!]: wrong });
      assert.equal(result.code, 2, `${setting.env}=${JSON.stringify(wrong)}: exit ${result.code} ${result.err}`);
      assert.match(result.err, new RegExp(`${setting.env} must`), result.err);
      if (setting.secret) assert.ok(!result.err.includes(`"${wrong}"`), `${setting.env}: a secret is not echoed`);
    }
  });

  it('refuses unknown keys at every level of the file, an unknown flag and an unknown SVC_* variable', async function () {
    for (const key of ['bogus', 'tls.bogus', 'api.images.bogus', 'engineLimits.noSuchLimit', 'recording.limits.x']) {
      const result = await svc(['node', '--config', await configFile(withValue(key, 1)), '--print-config']);
      assert.equal(result.code, 2, `${key}: ${result.err}`);
      assert.match(result.err, new RegExp(`unknown key "${escaped(key)}"`), result.err);
    }
    const path = await configFile(BASE);
    const flag = await svc(['node', '--config', path, '--tick-size', '3']);
    assert.equal(flag.code, 2);
    assert.match(flag.err, /Unknown option '--tick-size'/);
    const variable = await svc(['node', '--config', path, '--print-config'], { SVC_RATE_LIMIT: '7' });
    assert.equal(variable.code, 2);
    assert.match(variable.err, /unknown environment variable SVC_RATE_LIMIT/);
    // Other programs' variables (the SDK's, the tests') pass.
    const other = await svc(['node', '--config', path, '--print-config'], { SVC_API_KEY: 'k', SVC_URL: 'u' });
    assert.equal(other.code, 0, other.err);
    // Neither do the kubelet's service links for Services named svc or svc-peers (enableServiceLinks on).
    const links = await svc(['node', '--config', path, '--print-config'], {
      SVC_SERVICE_HOST: '10.0.0.7',
      SVC_SERVICE_PORT: '8443',
      SVC_SERVICE_PORT_HTTPS: '8443',
      SVC_PORT: 'tcp://10.0.0.7:8443',
      SVC_PEERS_PORT_7443_TCP_ADDR: '10.0.0.8',
    });
    assert.equal(links.code, 0, links.err);
  });

  it('--print-config prints the validated config and the source of each value: default, file, env or flag', async function () {
    const path = await configFile({ ...BASE, tickMs: 50, logLevel: 'warn', api: { rateLimitPerSecond: 9 } });
    const keyFile = join(dir, 'secret.key');
    const env = {
      SVC_RATE_LIMIT_RPS: '11',
      SVC_TRUSTED_PROXIES: '10.0.0.1, 10.0.0.0/8',
      REDIS_URL: 'redis://:hunter2@127.0.0.1:6390',
      SVC_SECRET_KEY: 'ab'.repeat(32),
    };
    const result = await svc(
      ['node', '--config', path, '--tick-ms', '70', '--api-secret-key-file', keyFile, '--print-config'],
      env,
    );
    assert.equal(result.code, 0, result.err);
    const printed = JSON.parse(result.out) as {
      config: Record<string, unknown> & { api: Record<string, unknown> };
      settings: Record<string, { value: unknown; source: string; from?: string }>;
    };
    const s = printed.settings;
    assert.deepEqual(s.name, { value: 'n1', source: 'file', from: path });
    assert.deepEqual(s.logLevel, { value: 'warn', source: 'file', from: path });
    assert.deepEqual(s.tickMs, { value: 70, source: 'flag', from: '--tick-ms' }, 'a flag wins over the file');
    assert.deepEqual(s['api.rateLimitPerSecond'], { value: 11, source: 'env', from: 'SVC_RATE_LIMIT_RPS' });
    assert.deepEqual(s['api.trustedProxies'], {
      value: ['10.0.0.1', '10.0.0.0/8'],
      source: 'env',
      from: 'SVC_TRUSTED_PROXIES',
    });
    assert.deepEqual(s['api.secretKeyFile'], { value: keyFile, source: 'flag', from: '--api-secret-key-file' });
    assert.deepEqual(s.metricsListen, { value: '127.0.0.1:0', source: 'default' });
    assert.deepEqual(s['engineLimits.autopilotEnabled'], { value: 1, source: 'default' }, "the node's engine defaults");
    assert.deepEqual(s['api.accessLog'], { value: false, source: 'default' });
    // The file's api section turns the API on, and so does an --api-* flag, which ranks above it.
    assert.deepEqual(s.api, { value: true, source: 'flag', from: '--api-secret-key-file' });
    // What the node is given: the values set, checked; secrets masked in the print.
    assert.equal(printed.config.tickMs, 70);
    assert.equal(printed.config.dataDir, join(dir, 'data'), 'a path in the file is relative to the file');
    assert.equal(printed.config.api.rateLimitPerSecond, 11);
    assert.equal(printed.config.api.redisUrl, 'redis://***@127.0.0.1:6390');
    assert.equal(printed.config.api.secretKey, '***');
    assert.ok(!result.out.includes('hunter2') && !result.out.includes('abab'), 'no secret printed');
    // Every setting is listed, each with one of the four sources.
    for (const setting of NODE_SETTINGS) {
      assert.ok(setting.key in s, `${setting.key} listed`);
      assert.ok(['default', 'file', 'env', 'flag'].includes(s[setting.key]!.source));
    }
  });

  it('--print-config refuses what the node would refuse (a config the schema passes but the node does not)', async function () {
    const result = await svc([
      'node',
      '--config',
      await configFile({ ...BASE, grpcListen: 'nowhere' }),
      '--print-config',
    ]);
    assert.equal(result.code, 2);
    assert.match(result.err, /grpcListen "nowhere" is not host:port/);
    assert.equal(result.out, '');
  });

  it('bin/svc.js exits 2 on a bad file value and on a bad variable (real processes)', async function () {
    const path = await configFile({ ...BASE, tickMs: 'fast', bogus: true });
    const file = await runCli(['node', '--config', path, '--print-config'], { cwd: dir });
    assert.equal(file.code, 2, file.stderr);
    assert.match(file.stderr, /tickMs must be a whole number, got "fast"/);
    assert.match(file.stderr, /unknown key "bogus"/);
    assert.equal(file.stdout, '');
    const good = await configFile(BASE);
    const variable = await runCli(['node', '--config', good, '--print-config'], {
      cwd: dir,
      env: { ...process.env, SVC_ACCESS_LOG: 'yes' },
    });
    assert.equal(variable.code, 2, variable.stderr);
    assert.match(variable.stderr, /SVC_ACCESS_LOG must be true or false/);
  });
});

function safe(read: () => unknown): unknown {
  try {
    return read();
  } catch {
    return undefined;
  }
}
