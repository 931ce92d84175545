// A checkout in a private directory (a home of mode 0700): runs of their own uid still run the agent bound from
// it, because the worker binds a copy the run's uid can read (api/runs/agent-stage.ts), never the checkout.
import assert from 'node:assert/strict';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { AgentStageError } from '../../api/runs/agent-stage.js';
import { startAgentWorker } from '../../api/runs/agent-worker.js';
import type { AgentWorker } from '../../api/runs/agent-worker.js';
import { agentMountPoint } from '../../api/runs/sandbox.js';
import { startTestApi, startTestRedis } from './harness.js';
import type { TestApi, TestRedis } from './harness.js';
import { outputText, readSse } from './run-events.js';

describe('api: the agent of a checkout under a private (0700) directory', function () {
  this.timeout(60_000);
  let redis: TestRedis;
  let api: TestApi;
  let worker: AgentWorker | undefined;
  let privateDir: string;
  let workspace: string;
  let stageRoot: string;

  before(async function () {
    // Only a root worker gives runs a uid of their own (the case this is about).
    if (process.getuid?.() !== 0) this.skip();
    redis = await startTestRedis();
    api = await startTestApi({ redisUrl: redis.url });
    privateDir = mkdtempSync(path.join(os.tmpdir(), 'svc-private-home-'));
    chmodSync(privateDir, 0o700);
    // An agent as agent/ is laid out (bin/svc-agent runs svc-agent.mjs), importing a package bound beside it as
    // the reference agent imports `openai`; its files are owner-only, as a umask of 077 makes them.
    const agent = path.join(privateDir, 'checkout', 'agent');
    mkdirSync(path.join(agent, 'bin'), { recursive: true });
    writeFileSync(
      path.join(agent, 'bin', 'svc-agent'),
      '#!/bin/sh\nexec node "$(dirname "$0")/../svc-agent.mjs" "$@"\n',
      { mode: 0o700 },
    );
    writeFileSync(
      path.join(agent, 'svc-agent.mjs'),
      "import { greet } from 'greeting';\nconsole.log(greet(process.argv[2]));\n",
      { mode: 0o600 },
    );
    const greeting = path.join(privateDir, 'checkout', 'node_modules', 'greeting');
    mkdirSync(greeting, { recursive: true });
    writeFileSync(path.join(greeting, 'package.json'), '{"name":"greeting","type":"module","exports":"./index.js"}', {
      mode: 0o600,
    });
    writeFileSync(path.join(greeting, 'index.js'), 'export const greet = (name) => `hello ${name}`;\n', {
      mode: 0o600,
    });
    writeFileSync(path.join(greeting, 'index.d.ts'), 'export declare const greet: (name: string) => string;\n');
    writeFileSync(path.join(greeting, 'index.js.map'), '{}');
    workspace = mkdtempSync(path.join(os.tmpdir(), 'svc-agent-ws-'));
    stageRoot = mkdtempSync(path.join(os.tmpdir(), 'svc-agent-stage-'));
    chmodSync(stageRoot, 0o755);
    worker = await startAgentWorker({
      redisUrl: redis.url,
      store: api.store,
      runTimeoutMs: 20_000,
      agentStageRoot: stageRoot,
      agentMounts: [
        { source: agent, target: `${agentMountPoint}/app` },
        { source: greeting, target: `${agentMountPoint}/node_modules/greeting` },
      ],
    });
  });
  after(async () => {
    await worker?.close();
    await api?.close();
    await redis?.stop();
    for (const dir of [privateDir, workspace, stageRoot]) if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const runCommand = async (command: string[], prompt: string) => {
    const created = await api.call('POST', '/projects', { body: { name: 'private', workspace, command } });
    assert.equal(created.status, 201, created.text);
    const accepted = await api.call('POST', `/projects/${created.json.id}/commands`, { body: { prompt } });
    assert.equal(accepted.status, 202, accepted.text);
    return readSse(api, accepted.json.streamUrl as string);
  };

  it('runs the agent (and the package it imports) as the run uid, from a copy outside the private directory', async () => {
    const read = await runCommand(['svc-agent'], 'world');
    const complete = read.events.at(-1)!;
    assert.equal(outputText(read.events, 'stderr'), '', 'bubblewrap found every source');
    assert.equal(outputText(read.events, 'stdout'), 'hello world\n');
    assert.deepEqual(complete.data, { ...(complete.data as object), status: 'succeeded', exitCode: 0 });
    const started = read.events.find((event) => event.event === 'started')!.data as { sandbox: { uid: number } };
    assert.ok(started.sandbox.uid > 0, 'the run had a uid of its own');
  });

  it('binds no type declarations or source maps', async () => {
    const read = await runCommand(['/bin/sh', '-c', `ls ${agentMountPoint}/node_modules/greeting`], 'ls');
    assert.equal(outputText(read.events, 'stdout'), 'index.js\npackage.json\n');
  });

  it('removes its copy when it closes', async () => {
    const copies = readdirSync(stageRoot);
    assert.equal(copies.length, 1);
    assert.match(copies[0]!, new RegExp(`^${process.pid}-`));
    await worker!.close();
    worker = undefined;
    assert.ok(!existsSync(path.join(stageRoot, copies[0]!)));
  });

  it('fails runs with AGENT_STAGE_FAILED, not a crash, when the agent could not be copied', async () => {
    worker = await startAgentWorker({
      redisUrl: redis.url,
      store: api.store,
      agentStageRoot: stageRoot,
      agentMounts: [{ source: path.join(privateDir, 'gone'), target: `${agentMountPoint}/app` }],
    });
    const read = await runCommand(['true'], 'x');
    const notice = read.events.find((event) => event.event === 'notice')?.data as { code: string; message: string };
    assert.equal(notice.code, 'AGENT_STAGE_FAILED');
    assert.match(notice.message, /could not copy the agent/);
    assert.equal((read.events.at(-1)!.data as { status: string }).status, 'failed');
    await worker.close();
    worker = undefined;
    assert.deepEqual(readdirSync(stageRoot), [], 'a failed copy leaves nothing');
  });

  it('does not start, and says what to change, when a run uid could not reach the stage', async () => {
    const closedRoot = path.join(privateDir, 'stage');
    await assert.rejects(
      startAgentWorker({ redisUrl: redis.url, store: api.store, agentStageRoot: closedRoot }),
      (error: Error) =>
        error instanceof AgentStageError &&
        error.message.includes(`${privateDir} is not searchable by others (chmod o+x ${privateDir}`),
    );
  });
});
