// Bad flags, bad config files and unknown commands: a clear message naming the problem on stderr
// and exit code 2, nothing started. Most run in process (runSvc); one runs bin/svc.js to see the
// real exit code. A good config file (YAML, relative paths) resolves as documented.
import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { runSvc } from '../../cli/main.js';
import type { Io } from '../../cli/io.js';
import { removeDir, runCli, tempDir } from './helpers.js';

function bufferIo(): Io & { outText(): string; errText(): string } {
  let out = '';
  let err = '';
  return {
    out: {
      write: (text: string) => {
        out += text;
      },
    },
    err: {
      write: (text: string) => {
        err += text;
      },
    },
    outText: () => out,
    errText: () => err,
  };
}

async function svc(args: string[]): Promise<{ code: number; out: string; err: string }> {
  const io = bufferIo();
  const code = await runSvc(args, io);
  return { code, out: io.outText(), err: io.errText() };
}

const MTLS = ['--tls-ca', 'ca.crt', '--tls-cert', 'n1.crt', '--tls-key', 'n1.key'];
const BASE = [
  '--name',
  'n1',
  '--data-dir',
  'd',
  '--grpc-listen',
  '127.0.0.1:0',
  '--http-listen',
  '127.0.0.1:0',
  '--founder',
  'n1,127.0.0.1:7001,http://127.0.0.1:8001',
];

describe('svc usage errors (exit 2)', function () {
  this.timeout(60_000);
  let dir: string;

  before(async function () {
    dir = await tempDir('usage');
  });

  after(async function () {
    if (dir) await removeDir(dir);
  });

  const cases: Array<{ args: string[]; message: RegExp }> = [
    { args: [], message: /usage: svc <command>/ },
    { args: ['frobnicate'], message: /unknown command "frobnicate"/ },
    { args: ['node', '--no-such-flag'], message: /Unknown option '--no-such-flag'/ },
    { args: ['node', ...BASE, ...MTLS, '--tick-ms', 'fast'], message: /--tick-ms must be a whole number, got "fast"/ },
    { args: ['node', ...BASE, ...MTLS, '--tick-ms', '0'], message: /--tick-ms must be from 1 to/ },
    { args: ['node', ...BASE], message: /say how peers talk: --tls-ca\/--tls-cert\/--tls-key .* or --insecure/ },
    { args: ['node', ...BASE, '--tls-ca', 'ca.crt'], message: /missing --tls-cert, --tls-key/ },
    { args: ['node', ...BASE, '--insecure', '--tls-ca', 'ca.crt'], message: /--insecure cannot be combined/ },
    {
      args: ['node', ...BASE, '--insecure', '--founder', 'n2'],
      message: /--founder takes NAME,GRPC_HOST:PORT,HTTP_URL/,
    },
    { args: ['debug', 'bundle'], message: /svc debug bundle needs --out FILE\.tar\.gz/ },
    {
      args: ['debug', 'bundle', '--out', 'b.tar.gz', '--window', '10'],
      message: /--window takes a duration such as 10m/,
    },
    {
      args: ['debug', 'bundle', '--out', 'b.tar.gz', '--window', '10m', '--since', '2026-11-27T10:00:00Z'],
      message: /--window and --since both set the start/,
    },
    { args: ['debug', 'bundle', '--out', 'b.tar.gz', '--until', 'soon'], message: /--until takes a time/ },
    {
      args: ['node', ...BASE, '--insecure', '--engine-limit', 'noSuchLimit=3'],
      message: /unknown limit "noSuchLimit"/,
    },
    {
      args: ['node', ...BASE, '--insecure', '--engine-limit', 'electionTimeoutTicks'],
      message: /--engine-limit takes NAME=N/,
    },
    { args: ['node', ...BASE, '--insecure', '--log-level', 'loud'], message: /--log-level must be one of/ },
    { args: ['node', '--insecure', '--name', 'n1'], message: /--data-dir is required/ },
    { args: ['node', ...BASE.slice(0, 8), '--insecure'], message: /give --founder .* or --seed/ },
    {
      args: ['node', ...BASE, '--insecure', '--grpc-listen', 'nowhere'],
      message: /grpcListen "nowhere" is not host:port/,
    },
    { args: ['node', ...BASE, '--insecure', '--name', 'bad name!'], message: /name "bad name!" must be/ },
    {
      args: ['node', '--config', '/nonexistent/svc-node.json'],
      message: /cannot read config file \/nonexistent\/svc-node.json/,
    },
    { args: ['members'], message: /members needs an action/ },
    { args: ['members', 'frob', 'n1'], message: /unknown members action "frob"/ },
    { args: ['members', 'promote'], message: /members promote needs a member NAME/ },
    { args: ['members', 'filter', 'n4'], message: /members filter NAME needs key PREFIXes/ },
    { args: ['members', 'filter', 'n4', 'acme/', '--clear'], message: /--clear takes no prefixes/ },
    { args: ['members', 'promote', 'n4', 'extra'], message: /members promote takes one NAME/ },
    {
      args: ['members', 'list', '--node', 'not-an-address', '--insecure'],
      message: /--node "not-an-address" is not host:port/,
    },
    { args: ['status', '--node', '127.0.0.1:1', '--tls-ca', 'x'], message: /needs --tls-ca, --tls-cert and --tls-key/ },
    { args: ['status', '--cluster-file', '/nonexistent/cluster.json'], message: /cannot read cluster file/ },
    { args: ['keys'], message: /keys needs an action: create/ },
    {
      args: ['keys', 'create', '--name', '', '--insecure', '--node', '127.0.0.1:1'],
      message: /--name must not be empty/,
    },
    { args: ['cluster', '--nodes', '99'], message: /--nodes must be from 1 to 7/ },
    { args: ['cluster', '--api', '--no-api'], message: /--api and --no-api contradict/ },
    { args: ['cluster', '--engine-limit', 'bogus=1'], message: /--engine-limit: unknown limit "bogus"/ },
    { args: ['cluster', '--node-option', 'rm -rf'], message: /--node-option takes one node flag/ },
    { args: ['openapi', 'extra'], message: /Unexpected argument 'extra'/ },
    { args: ['certs', 'node', '--out', 'x'], message: /node needs --name, --cluster-id, --peers-service, --namespace/ },
    { args: ['certs', 'admin', '--out', 'x', '--name', 'ops'], message: /admin needs --cluster-id/ },
    { args: ['node', ...BASE, '--insecure', '--cluster-id', 'X_Y'], message: /clusterId "X_Y" must be a DNS label/ },
    {
      args: ['node', ...BASE, ...MTLS, '--http-insecure', '--http-tls-cert', 'api.crt'],
      message: /--http-insecure cannot be combined with --http-tls-\* flags/,
    },
    {
      args: ['node', ...BASE, ...MTLS, '--http-tls-cert', 'api.crt'],
      message: /needs --http-tls-cert and --http-tls-key/,
    },
    {
      args: ['node', ...BASE, '--insecure', '--metrics-listen', 'nowhere'],
      message: /metricsListen "nowhere" is not host:port/,
    },
    { args: ['certs', 'api', '--out', 'x'], message: /api needs --dns NAME or --ip IP/ },
  ];
  for (const { args, message } of cases) {
    const shown = args
      .map((a) => (BASE.includes(a) || MTLS.includes(a) ? '' : a))
      .filter((a) => a !== '')
      .join(' ');
    it(`svc ${shown || '(nothing)'}${args.includes('--name') && args.includes('--founder') ? ' (with a complete base)' : ''}: ${message.source.slice(0, 50)}`, async function () {
      const result = await svc(args);
      assert.equal(result.code, 2, `exit ${result.code}; stderr: ${result.err}`);
      assert.match(result.err, message);
      assert.equal(result.out, '');
    });
  }

  it('a config file that is not valid YAML is named, with exit 2', async function () {
    const path = join(dir, 'broken.yaml');
    await writeFile(path, 'name: [unclosed\n');
    const result = await svc(['node', '--config', path]);
    assert.equal(result.code, 2);
    assert.match(result.err, /broken\.yaml is not valid YAML/);
  });

  it('bin/svc.js exits 2 with the message on stderr (a real process, another working directory)', async function () {
    const result = await runCli(['node', '--name', 'n1', '--bogus'], { cwd: dir });
    assert.equal(result.code, 2);
    assert.match(result.stderr, /svc node: Unknown option '--bogus'/);
    assert.equal(result.stdout, '');
  });

  it('a YAML config file resolves its paths against the file and flags override it (--print-config)', async function () {
    const path = join(dir, 'node.yaml');
    await writeFile(
      path,
      [
        'name: a1',
        'dataDir: data/a1',
        'grpcListen: 127.0.0.1:7001',
        'httpListen: 127.0.0.1:8001',
        'bootstrap:',
        '  - {name: a1, grpcAddr: "127.0.0.1:7001", httpAddr: "http://127.0.0.1:8001"}',
        'tls: {mode: mtls, caFile: certs/ca.crt, certFile: certs/a1.crt, keyFile: /abs/a1.key}',
        'httpTls: {mode: https, certFile: certs/api.crt, keyFile: certs/api.key}',
        'metricsListen: 127.0.0.1:9464',
        'tickMs: 50',
        '',
      ].join('\n'),
    );
    const result = await svc([
      'node',
      '--config',
      path,
      '--tick-ms',
      '70',
      '--election-timeout-ticks',
      '12',
      '--store-limit',
      'writeTimeoutMs=2000',
      '--no-recording',
      '--record-payloads',
      '--recording-bytes-max',
      '67108864',
      '--print-config',
    ]);
    assert.equal(result.code, 0, result.err);
    const printed = JSON.parse(result.out) as {
      config: Record<string, unknown> & { tls: Record<string, string> };
      settings: Record<string, { value: unknown; source: string; from?: string }>;
    };
    const config = printed.config;
    assert.deepEqual(printed.settings.tickMs, { value: 70, source: 'flag', from: '--tick-ms' }, 'the flag wins');
    assert.deepEqual(printed.settings.dataDir, { value: join(dir, 'data/a1'), source: 'file', from: path });
    assert.equal(config.dataDir, join(dir, 'data/a1'));
    assert.deepEqual(config.tls, {
      mode: 'mtls',
      caFile: join(dir, 'certs/ca.crt'),
      certFile: join(dir, 'certs/a1.crt'),
      keyFile: '/abs/a1.key',
    });
    assert.deepEqual(config.httpTls, {
      mode: 'https',
      certFile: join(dir, 'certs/api.crt'),
      keyFile: join(dir, 'certs/api.key'),
    });
    assert.equal(config.metricsListen, '127.0.0.1:9464');
    assert.equal(config.tickMs, 70);
    assert.deepEqual(config.engineLimits, { electionTimeoutTicks: 12 });
    assert.deepEqual(config.storeLimits, { writeTimeoutMs: 2000 });
    assert.deepEqual(config.recording, {
      enabled: false,
      payloads: 'full',
      limits: { recordingBytesMax: 67_108_864 },
    });
  });

  it("svc --version and svc version print package.json's version, in process and from bin/svc.js", async function () {
    this.timeout(120_000);
    const version = (
      JSON.parse(await readFile(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }
    ).version;
    assert.match(version, /^\d+\.\d+\.\d+$/);
    for (const args of [['--version'], ['version']]) {
      assert.deepEqual(await svc(args), { code: 0, out: `svc ${version}\n`, err: '' });
      const real = await runCli(args);
      assert.equal(real.code, 0, real.stderr);
      assert.equal(real.stdout, `svc ${version}\n`);
    }
    const extra = await svc(['version', 'extra']);
    assert.equal(extra.code, 2);
    assert.match(extra.err, /version takes no arguments/);
  });
});
