// What an agent run cannot do (issue 13's escape and limits), each through the real API, worker, bubblewrap,
// slirp4netns, iptables and Redis: reach the host's Redis or loopback over its network, change what a queued
// job runs by rewriting it in Redis, write outside its workspace, fork without bound, grow the workspace past
// its quota, reach a cluster member it knows only by name; and what it can: Node's fetch under the memory limit, egress to an allowed destination, its
// credentials (masked in output, audited by name).
import assert from 'node:assert/strict';
import dns from 'node:dns/promises';
import { chmodSync, existsSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { startAgentWorker } from '../../api/runs/agent-worker.js';
import type { AgentWorker, AgentWorkerOptions } from '../../api/runs/agent-worker.js';
import type { EgressStatement } from '../../api/runs/run-isolation.js';
import { defaultSandboxLimits } from '../../api/runs/sandbox.js';
import { runUidCount, runUidFirst } from '../../api/limits.js';
import { startTestApi, startTestRedis, testSecretKey } from './harness.js';
import type { TestApi, TestRedis } from './harness.js';
import { outputText, readSse } from './run-events.js';
import type { SseEvent } from './run-events.js';
import { startForeignHost } from './foreign-host.js';
import type { ForeignHost } from './foreign-host.js';

const processesMax = 64;
const workspaceBytesMax = 64 * 1024 * 1024;

/** loopbackServer accepts TCP connections on 127.0.0.1 and answers each with a line. */
async function loopbackServer(): Promise<{ port: number; close(): Promise<void> }> {
  const server = net.createServer((socket) => socket.end('hello from the host\n'));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

// Tries each host:port of its prompt (JSON) and prints `host:port connected` or `host:port <error code>`.
const probeScript = `
const net = require('node:net');
const targets = JSON.parse(process.argv[2]);
(async () => {
  for (const [host, port] of targets) {
    const outcome = await new Promise((resolve) => {
      const socket = net.connect({ host, port });
      const timer = setTimeout(() => { socket.destroy(); resolve('TIMEOUT'); }, 3000);
      socket.once('connect', () => { clearTimeout(timer); socket.destroy(); resolve('connected'); });
      socket.once('error', (error) => { clearTimeout(timer); resolve(error.code || error.message); });
    });
    console.log(host + ':' + port + ' ' + outcome);
  }
})();
`;

const scripts: Record<string, string> = {
  'probe.cjs': probeScript,
  // Forks up to 1,000 sleepers (a bounded loop: on a host without limits it stops there), then counts the
  // processes of its PID namespace with shell builtins only (at the limit, nothing more can be forked).
  'forks.sh': [
    '#!/bin/sh',
    'i=0; while [ $i -lt 1000 ]; do (sleep 20 &) 2>/dev/null; i=$((i+1)); done',
    'set -- /proc/[0-9]*; echo "processes=$#"',
  ].join('\n'),
  // Tries to write outside the workspace; prints `<place> written` or `<place> refused` for each.
  'escape.sh': [
    '#!/bin/sh',
    'ln -sf /etc/svc-escape-target link-out',
    'for target in "$(dirname "$PWD")/svc-escape" /svc-escape /etc/svc-escape /usr/svc-escape /etc/passwd link-out /dev/svc-escape /proc/svc-escape; do',
    '  if (echo escaped >> "$target") 2>/dev/null; then echo "$target written"; else echo "$target refused"; fi',
    'done',
    'if head -c 20000000 /dev/zero > /tmp/big 2>/dev/null; then echo "tmp unbounded"; else echo "tmp capped"; fi',
    'echo "uid=$(id -u)"',
  ].join('\n'),
  'grow.sh': [
    '#!/bin/sh',
    'i=0; while [ $i -lt 40 ]; do head -c 4000000 /dev/zero > "fill-$i"; i=$((i+1)); sleep 0.1; done',
    'echo grown',
  ].join('\n'),
  // One write bigger than the workspace quota (64 MiB), in one go: faster than any poll of the workspace.
  'big.sh': ['#!/bin/sh', 'head -c 70000000 /dev/zero > big', 'echo "head exited $?"'].join('\n'),
  'secrets.sh': [
    '#!/bin/sh',
    'echo "token=$GITEA_TOKEN"',
    'echo "file=$(cat /run/secrets/model-key)"',
    'printf %s "$GITEA_TOKEN" | base64',
    'printf "split: %s" "$GITEA_TOKEN" | fold -w 7',
    'echo',
  ].join('\n'),
};

describe('api: agent run isolation (uid, namespaces, cgroups, egress filter, ids-only jobs)', function () {
  this.timeout(120_000);
  let redis: TestRedis;
  let api: TestApi;
  let worker: AgentWorker;
  let workspace: string;
  let allowed: { port: number; close(): Promise<void> };
  let other: { port: number; close(): Promise<void> };
  let foreign: ForeignHost;
  // The cluster's members as the worker hears of them (a node's roster: names), and the names' addresses as the
  // test's resolver answers them (dns.lookup for any other name); a name in `unresolvable` fails to resolve.
  const members: string[] = [];
  const names = new Map<string, string[]>();
  const unresolvable = new Set<string>();
  const resolveHost = async (name: string): Promise<string[]> => {
    if (unresolvable.has(name)) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${name}`), { code: 'ENOTFOUND' });
    return names.get(name) ?? (await dns.lookup(name, { all: true })).map((found) => found.address);
  };
  const outside = mkdtempSync(path.join(os.tmpdir(), 'svc-outside-'));

  const workerOptions = (): AgentWorkerOptions => ({
    redisUrl: redis.url,
    store: api.store,
    secretKey: testSecretKey,
    log: api.service.config.log,
    concurrency: 2,
    runTimeoutMs: 30_000,
    limits: {
      ...defaultSandboxLimits,
      processesMax,
      memoryBytesMax: 2 * 1024 * 1024 * 1024,
      tmpBytesMax: 8 * 1024 * 1024,
    },
    isolation: {
      // The second entry opens member-a's advertised port: a member's ports stay denied all the same.
      egressAllow: [`127.0.0.1:${allowed.port}`, `${foreign.addresses[0]}:${foreign.port}`],
      workspaceBytesMax,
      workspacePollMs: 200,
      clusterAddresses: () => members,
      resolveHost,
    },
  });
  const createProject = async (command: string[], extra: Record<string, unknown> = {}): Promise<string> => {
    const created = await api.call('POST', '/projects', { body: { name: 'isolated', workspace, command, ...extra } });
    assert.equal(created.status, 201, created.text);
    return created.json.id as string;
  };
  const runToEnd = async (projectId: string, prompt: string) => {
    const accepted = await api.call('POST', `/projects/${projectId}/commands`, { body: { prompt } });
    assert.equal(accepted.status, 202, accepted.text);
    const read = await readSse(api, accepted.json.streamUrl as string, {}, 60_000);
    return {
      ...read,
      runId: accepted.json.runId as string,
      complete: read.events.at(-1)!.data as { status: string; exitCode: number | null },
    };
  };
  const notices = (events: SseEvent[]) =>
    events.filter((event) => event.event === 'notice').map((event) => event.data as { code?: string; message: string });

  before(async () => {
    redis = await startTestRedis();
    api = await startTestApi({ redisUrl: redis.url });
    allowed = await loopbackServer();
    other = await loopbackServer();
    foreign = await startForeignHost();
    members.push(`member-a.svc.test:${foreign.port}`, 'http://member-a.svc.test:8080');
    names.set('member-a.svc.test', [foreign.addresses[0], 'fd00:5c::a']);
    names.set('member-c.svc.test', [foreign.addresses[1]]);
    worker = await startAgentWorker(workerOptions());
    workspace = mkdtempSync(path.join(os.tmpdir(), 'svc-isolated-ws-'));
    for (const [name, text] of Object.entries(scripts)) {
      writeFileSync(path.join(workspace, name), text);
      chmodSync(path.join(workspace, name), 0o755);
    }
  });
  after(async () => {
    await worker?.close();
    await api?.close();
    await redis?.stop();
    await allowed?.close();
    await other?.close();
    await foreign?.close();
    rmSync(workspace, { recursive: true, force: true });
    rmSync(outside, { recursive: true, force: true });
  });

  it('Redis refuses a client without its password', async () => {
    const reply = await new Promise<string>((resolve, reject) => {
      const socket = net.connect({ host: '127.0.0.1', port: redis.port });
      socket.once('error', reject);
      socket.once('connect', () => socket.write('SET svc:probe 1\r\n'));
      socket.once('data', (chunk) => {
        socket.destroy();
        resolve(chunk.toString());
      });
    });
    assert.match(reply, /^-NOAUTH/);
  });

  it("a run with network reaches an allowed destination but not Redis, the host's loopback or link-local addresses", async () => {
    const projectId = await createProject(['node', './probe.cjs'], { network: true });
    const targets = [
      ['127.0.0.1', redis.port], // the run's own loopback: nothing listens there
      ['10.0.2.2', redis.port], // slirp4netns's way to the host's loopback: the egress filter refuses it
      ['10.0.2.2', other.port], // another loopback service of the host, not allowed
      ['169.254.169.254', 80], // link-local (cloud metadata)
      ['10.0.2.2', allowed.port], // the one allowed loopback destination
    ];
    const result = await runToEnd(projectId, JSON.stringify(targets));
    const lines = new Map(
      outputText(result.events, 'stdout')
        .trim()
        .split('\n')
        .map((line) => {
          const [target, outcome] = line.split(' ');
          return [target!, outcome!] as const;
        }),
    );
    assert.equal(lines.size, targets.length, outputText(result.events, 'stdout') + outputText(result.events, 'stderr'));
    for (const [host, port] of targets.slice(0, 4)) {
      assert.notEqual(lines.get(`${host}:${port}`), 'connected', `${host}:${port} must be unreachable`);
    }
    assert.equal(lines.get(`10.0.2.2:${allowed.port}`), 'connected', 'egress to an allowed destination works');
    const started = result.events.find((event) => event.event === 'started')!.data as { sandbox: { network: string } };
    assert.equal(started.sandbox.network, 'egress-filtered');
  });

  /** probe runs probe.cjs over targets in a networked run and answers each `host:port`'s outcome. */
  const probe = async (targets: Array<[string, number]>) => {
    const result = await runToEnd(
      await createProject(['node', './probe.cjs'], { network: true }),
      JSON.stringify(targets),
    );
    const text = outputText(result.events, 'stdout');
    const lines = new Map(
      text
        .trim()
        .split('\n')
        .filter(Boolean)
        .map((line) => line.split(' ') as [string, string]),
    );
    const started = result.events.find((event) => event.event === 'started')?.data as
      { sandbox: { egress?: EgressStatement } } | undefined;
    return { result, lines, text: text + outputText(result.events, 'stderr'), egress: started?.sandbox.egress };
  };

  it('a run with network cannot reach a cluster member known to the worker only by name, nor one that joins later', async () => {
    const [memberAddress, otherAddress] = foreign.addresses;
    const first = await probe([
      [memberAddress, foreign.port], // member-a.svc.test's advertised port: a member, by name only (and allowed)
      [otherAddress, foreign.port], // the same machine's other address: no member (yet), reachable
      ['2001:db8::1', 80], // runs have no IPv6 route
    ]);
    assert.equal(first.lines.size, 3, first.text);
    assert.notEqual(first.lines.get(`${memberAddress}:${foreign.port}`), 'connected', 'a member is unreachable');
    assert.equal(first.lines.get(`${otherAddress}:${foreign.port}`), 'connected', 'another host is reachable');
    assert.equal(first.lines.get('2001:db8::1:80'), 'ENETUNREACH', 'no IPv6 route');
    assert.ok(first.egress, 'a networked run states its egress');
    assert.ok(first.egress.denied.includes(`${memberAddress}/32`), JSON.stringify(first.egress));
    // Its advertised port is refused before the allow entries, so the allow entry naming it opens nothing.
    assert.ok(first.egress.deniedServices.includes(`${memberAddress}/32:${foreign.port}`));
    assert.ok(first.egress.allowed.includes(`${memberAddress}/32:${foreign.port}`));
    assert.ok(first.egress.denied.includes('127.0.0.0/8'));
    assert.deepEqual(first.egress.resolved, [{ name: 'member-a.svc.test', addresses: [memberAddress, 'fd00:5c::a'] }]);
    assert.match(first.egress.ipv6, /^none/);

    // The roster changes (a member joins, advertised by name): the next run is denied it too.
    members.push('http://member-c.svc.test:8080');
    try {
      const second = await probe([[otherAddress, foreign.port]]);
      assert.equal(second.lines.size, 1, second.text);
      assert.notEqual(
        second.lines.get(`${otherAddress}:${foreign.port}`),
        'connected',
        'the new member is unreachable',
      );
    } finally {
      members.pop();
    }
  });

  it('a name to deny that never resolved refuses networked runs (EGRESS_DENY_UNRESOLVED); one that stops resolving keeps its addresses', async () => {
    members.push('member-b.svc.test:7000');
    unresolvable.add('member-b.svc.test');
    try {
      const refused = await runToEnd(await createProject(['node', './probe.cjs'], { network: true }), '[]');
      assert.equal(refused.complete.status, 'failed');
      assert.deepEqual(
        notices(refused.events).map((notice) => notice.code),
        ['EGRESS_DENY_UNRESOLVED'],
      );
      assert.match(notices(refused.events)[0]!.message, /member-b\.svc\.test \(ENOTFOUND\)/);
      assert.equal(
        refused.events.some((event) => event.event === 'output' || event.event === 'started'),
        false,
        'nothing ran',
      );
      const offline = await runToEnd(await createProject(['sh', '-c', 'echo offline']), 'x');
      assert.equal(offline.complete.status, 'succeeded', 'runs without network are not affected');
    } finally {
      members.pop();
      unresolvable.delete('member-b.svc.test');
    }
    // member-a resolved before (when the worker started and at earlier runs): its addresses are kept.
    unresolvable.add('member-a.svc.test');
    try {
      const [memberAddress] = foreign.addresses;
      const kept = await probe([[memberAddress, foreign.port]]);
      assert.equal(kept.result.complete.status, 'succeeded', kept.text);
      assert.notEqual(kept.lines.get(`${memberAddress}:${foreign.port}`), 'connected');
      assert.deepEqual(kept.egress?.resolved, [
        { name: 'member-a.svc.test', addresses: [memberAddress, 'fd00:5c::a'], stale: true },
      ]);
    } finally {
      unresolvable.delete('member-a.svc.test');
    }
  });

  it('a queued job rewritten in Redis does not change what runs: the run fails JOB_MISMATCH and nothing runs', async () => {
    // The API queues (it runs no worker itself); with the worker stopped, the job is rewritten as an attacker
    // with Redis access would: in the shape jobs had before (a project snapshot the worker trusted), and
    // naming another project.
    await worker.close();
    const projectId = await createProject(['./escape.sh']);
    const otherProject = await createProject(['sh', '-c', `touch ${outside}/other-project-ran`]);
    const forged = [
      {
        runId: '',
        projectId,
        prompt: 'x',
        project: { id: projectId, workspace: outside, command: ['sh', '-c', `touch ${outside}/pwned`], network: true },
      },
      { runId: '', projectId: otherProject },
    ];
    const client = new Redis(redis.url);
    const runIds: string[] = [];
    try {
      for (const payload of forged) {
        const accepted = await api.call('POST', `/projects/${projectId}/commands`, { body: { prompt: 'harmless' } });
        assert.equal(accepted.status, 202);
        const runId = accepted.json.runId as string;
        runIds.push(runId);
        payload.runId = runId;
        assert.equal(
          await client.hset(`bull:agent-runs:${runId}`, 'data', JSON.stringify(payload)),
          0,
          'the job existed',
        );
      }
    } finally {
      client.disconnect();
      worker = await startAgentWorker(workerOptions());
    }
    for (const runId of runIds) {
      const read = await readSse(api, `/runs/${runId}/events`, {}, 60_000);
      assert.equal((read.events.at(-1)!.data as { status: string }).status, 'failed');
      assert.deepEqual(
        notices(read.events).map((notice) => notice.code),
        ['JOB_MISMATCH'],
      );
      assert.equal(
        read.events.some((event) => event.event === 'output'),
        false,
        'no command ran',
      );
    }
    assert.equal(existsSync(path.join(outside, 'pwned')), false, 'the forged command did not run');
    assert.equal(existsSync(path.join(outside, 'other-project-ran')), false, 'nor the other project');
  });

  it('a run cannot write outside its workspace, and runs as an unprivileged uid of its own', async () => {
    const result = await runToEnd(await createProject(['./escape.sh']), 'escape');
    const stdout = outputText(result.events, 'stdout');
    // Every place backed by the host refuses; the workspace's parent here is under /tmp, which in the sandbox is
    // its own tmpfs (a write there stays in the sandbox: checked on the host below).
    const sandboxTmp = `${path.dirname(workspace)}/svc-escape`;
    assert.deepEqual(
      stdout.split('\n').filter((line) => line.endsWith(' written') && line !== `${sandboxTmp} written`),
      [],
      stdout,
    );
    assert.match(stdout, /^tmp capped$/m, '/tmp is size-capped');
    assert.equal(existsSync(path.join(path.dirname(workspace), 'svc-escape')), false);
    assert.equal(existsSync('/etc/svc-escape-target'), false);
    const uid = Number(/^uid=(\d+)$/m.exec(stdout)?.[1]);
    assert.ok(uid !== 0, 'never root');
    if (worker.isolation.root) {
      assert.ok(uid >= runUidFirst && uid < runUidFirst + runUidCount, `a run uid, got ${uid}`);
      assert.equal(statSync(workspace).uid, 0, 'the workspace is given back to its owner after the run');
    }
  });

  it('a fork loop is bounded, and the API keeps answering meanwhile', async () => {
    const projectId = await createProject(['./forks.sh']);
    const accepted = await api.call('POST', `/projects/${projectId}/commands`, { body: { prompt: 'fork' } });
    const reading = readSse(api, accepted.json.streamUrl as string, {}, 60_000);
    let answered = 0;
    let done = false;
    void reading.finally(() => {
      done = true;
    });
    while (!done) {
      const started = Date.now();
      const health = await fetch(`${api.baseUrl}/health`, { signal: AbortSignal.timeout(5000) });
      assert.equal(health.status, 200);
      assert.ok(Date.now() - started < 5000);
      answered++;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const read = await reading;
    const processes = Number(/processes=(\d+)/.exec(outputText(read.events, 'stdout'))?.[1]);
    assert.ok(
      processes > 0 && processes <= processesMax,
      `processes seen: ${processes} (limit ${processesMax}): ${JSON.stringify(read.events)}`,
    );
    assert.ok(answered >= 1);
    const started = read.events.find((event) => event.event === 'started')!.data as {
      sandbox: { limits: { processes: number }; enforcement: { processes: string } };
    };
    assert.equal(started.sandbox.limits.processes, processesMax);
    assert.match(started.sandbox.enforcement.processes, /cgroup|RLIMIT_NPROC/);
  });

  it("Node's fetch and WebAssembly work under the memory limit", async () => {
    const script =
      "fetch('data:text/plain,fetched').then((r) => r.text()).then((t) => { new WebAssembly.Memory({ initial: 1 }); console.log(t); })";
    const result = await runToEnd(await createProject(['node', '-e', script]), 'go');
    assert.equal(result.complete.status, 'succeeded', outputText(result.events, 'stderr'));
    assert.equal(outputText(result.events, 'stdout'), 'fetched\n');
  });

  it('a workspace grown past its quota ends the run (WORKSPACE_QUOTA_EXCEEDED)', async () => {
    const result = await runToEnd(await createProject(['./grow.sh']), 'grow');
    assert.equal(result.complete.status, 'failed');
    assert.deepEqual(
      notices(result.events).map((notice) => notice.code),
      ['WORKSPACE_QUOTA_EXCEEDED'],
    );
    assert.doesNotMatch(outputText(result.events, 'stdout'), /grown/);
    for (let index = 0; index < 40; index++) rmSync(path.join(workspace, `fill-${index}`), { force: true });
  });

  it('no single file outgrows the workspace quota (RLIMIT_FSIZE at the quota), however fast it is written', async () => {
    const big = path.join(workspace, 'big');
    try {
      const result = await runToEnd(await createProject(['./big.sh']), 'big');
      const started = result.events.find((event) => event.event === 'started')!.data as {
        sandbox: { limits: { fileBytes: number; workspaceBytes: number } };
      };
      assert.equal(statSync(big).size, workspaceBytesMax, 'the write stopped at the quota');
      assert.equal(started.sandbox.limits.fileBytes, workspaceBytesMax);
      assert.equal(started.sandbox.limits.workspaceBytes, workspaceBytesMax);
    } finally {
      rmSync(big, { force: true });
    }
  });

  it('injects credentials as env and files, masks them in output, and records their names only', async () => {
    const token = 'gitea-token-s3cr3t-0123456789';
    const modelKey = 'sk-model-key-abcdefghijklmnop';
    for (const [category, name, value] of [
      ['gitea', 'bot', token],
      ['model', 'stand-in', modelKey],
    ] as const) {
      assert.equal((await api.call('POST', '/credentials', { body: { category, name, value } })).status, 201);
    }
    const projectId = await createProject(['./secrets.sh'], {
      credentials: [
        { category: 'gitea', name: 'bot', as: 'env', target: 'GITEA_TOKEN' },
        { category: 'model', name: 'stand-in', as: 'file', target: 'model-key' },
      ],
    });
    const project = await api.call('GET', `/projects/${projectId}`);
    assert.equal(project.json.credentials.length, 2);
    const result = await runToEnd(projectId, 'print them');
    assert.equal(result.complete.status, 'succeeded', outputText(result.events, 'stderr'));
    const stdout = outputText(result.events, 'stdout');
    assert.match(stdout, /^token=••••••$/m);
    assert.match(stdout, /^file=••••••$/m);
    const everything = JSON.stringify(result.events) + JSON.stringify(api.logs) + project.text;
    for (const secret of [token, modelKey, Buffer.from(token).toString('base64')]) {
      assert.ok(!everything.includes(secret), 'no value in any event, log line or response');
    }
    assert.ok(!everything.includes(token.slice(0, 14)), 'nor a fragment of it');
    const audit = result.events.find((event) => event.event === 'credentials')!.data;
    assert.deepEqual(audit, {
      injected: [
        { category: 'gitea', name: 'bot', as: 'env', target: 'GITEA_TOKEN' },
        { category: 'model', name: 'stand-in', as: 'file', target: '/run/secrets/model-key' },
      ],
    });
    assert.ok(api.logs.some((line) => line.event === 'run.credentials_injected' && line.fields.runId === result.runId));
    // A project naming a credential that does not exist fails its runs with a code, before anything runs.
    const missing = await createProject(['./secrets.sh'], {
      credentials: [{ category: 'gitea', name: 'nobody', as: 'env', target: 'X' }],
    });
    const refused = await runToEnd(missing, 'x');
    assert.deepEqual(
      notices(refused.events).map((notice) => notice.code),
      ['CREDENTIAL_MISSING'],
    );
  });

  it('refuses project credentials with a reserved or malformed target', async () => {
    for (const credentials of [
      [{ category: 'gitea', name: 'bot', as: 'env', target: 'PATH' }],
      [{ category: 'gitea', name: 'bot', as: 'env', target: 'LD_PRELOAD' }],
      [{ category: 'gitea', name: 'bot', as: 'file', target: '../etc/passwd' }],
      [
        { category: 'gitea', name: 'bot', as: 'env', target: 'A' },
        { category: 'model', name: 'x', as: 'env', target: 'A' },
      ],
    ]) {
      const created = await api.call('POST', '/projects', {
        body: { name: 'p', workspace, command: ['true'], credentials },
      });
      assert.equal(created.status, 400, JSON.stringify(credentials));
    }
    const unknownCategory = await api.call('POST', '/projects', {
      body: {
        name: 'p',
        workspace,
        command: ['true'],
        credentials: [{ category: 'aws', name: 'bot', as: 'env', target: 'A' }],
      },
    });
    assert.equal(unknownCategory.status, 422);
  });
});
