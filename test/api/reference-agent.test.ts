// The reference agent end to end, through the SDK: a project whose command is `svc-agent`, with a model key and
// a gitea token stored as credentials; the agent talks to a STAND-IN chat completions server (which enforces the
// documented request schema and answers with scripted tool calls) with the official `openai` client, edits the
// workspace (a git checkout), runs the project's checks, commits, and pushes to a bare repository served by a
// STAND-IN for gitea (git http-backend behind basic auth). Both stand-ins listen on 127.0.0.1; the run reaches
// them over its egress-filtered network as 10.0.2.2 (each one allowed by port; everything else on the host's
// loopback stays refused).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startAgentWorker } from '../../api/runs/agent-worker.js';
import type { AgentWorker } from '../../api/runs/agent-worker.js';
import { SvcClient } from '../../sdk/src/index.js';
import type { RunEvent } from '../../sdk/src/index.js';
import { startTestApi, startTestRedis, testSecretKey } from './harness.js';
import type { TestApi, TestRedis } from './harness.js';
import { startStandInChatServer } from './stand-in-chat-server.js';
import type { StandInChatServer } from './stand-in-chat-server.js';
import { startStandInGitServer } from './stand-in-git-server.js';
import type { StandInGitServer } from './stand-in-git-server.js';

const modelKey = 'sk-standin-model-key-7f3a9c2e1b';
const giteaToken = 'gitea-pat-0d9e8f7a6b5c4d3e2f1a';
const buggy = 'export const add = (a, b) => a - b;\n';
const fixed = 'export const add = (a, b) => a + b;\n';

const git = (cwd: string, ...args: string[]) => execFileSync('git', args, { cwd, encoding: 'utf8' }).trim();

describe('api: the reference agent (svc-agent) end to end through the SDK', function () {
  this.timeout(120_000);
  let redis: TestRedis;
  let api: TestApi;
  let worker: AgentWorker;
  let chat: StandInChatServer;
  let gitServer: StandInGitServer;
  let root: string;
  const responses: string[] = [];

  before(async function () {
    root = mkdtempSync(path.join(os.tmpdir(), 'svc-reference-agent-'));
    chmodSync(root, 0o711); // the run's own uid must be able to reach the workspace inside it
    // The "gitea" repository, and the project's workspace: a clone whose origin is the stand-in as the run sees it.
    const seed = path.join(root, 'seed');
    git(root, 'init', '-q', '-b', 'main', seed);
    writeFileSync(path.join(seed, 'calc.js'), buggy);
    writeFileSync(
      path.join(seed, 'calc.test.mjs'),
      "import { test } from 'node:test';\nimport assert from 'node:assert/strict';\n" +
        "import { add } from './calc.js';\ntest('adds', () => assert.equal(add(2, 3), 5));\n",
    );
    writeFileSync(path.join(seed, 'package.json'), '{"type":"module"}\n');
    git(seed, 'add', '-A');
    git(seed, '-c', 'user.name=seed', '-c', 'user.email=seed@svc.invalid', 'commit', '-q', '-m', 'a buggy add');
    git(root, 'clone', '-q', '--bare', seed, path.join(root, 'repos', 'calc.git'));
    git(path.join(root, 'repos', 'calc.git'), 'config', 'http.receivepack', 'true');
    gitServer = await startStandInGitServer(path.join(root, 'repos'), giteaToken);
    git(root, 'clone', '-q', path.join(root, 'repos', 'calc.git'), 'workspace');
    git(path.join(root, 'workspace'), 'remote', 'set-url', 'origin', `http://10.0.2.2:${gitServer.port}/calc.git`);

    chat = await startStandInChatServer({
      apiKey: modelKey,
      script: [
        { toolCalls: [{ name: 'read_file', arguments: { path: 'calc.js' } }] },
        {
          content: 'add subtracts; fixing it.',
          toolCalls: [{ name: 'write_file', arguments: { path: 'calc.js', content: fixed } }],
        },
        { toolCalls: [{ name: 'finish', arguments: { commit_message: 'Fix add: it subtracted' } }] },
      ],
    });
    redis = await startTestRedis();
    api = await startTestApi({ redisUrl: redis.url });
    worker = await startAgentWorker({
      redisUrl: redis.url,
      store: api.store,
      secretKey: testSecretKey,
      log: api.service.config.log,
      runTimeoutMs: Number(process.env.DEBUG_RUN_MS ?? 90_000),
      isolation: { egressAllow: [`127.0.0.1:${chat.port}`, `127.0.0.1:${gitServer.port}`] },
    });
    if (!worker.isolation.egress)
      throw new Error(`this test needs egress-filtered network runs: ${worker.isolation.egressProblem}`);
  });
  after(async () => {
    await worker?.close();
    await api?.close();
    await redis?.stop();
    await chat?.close();
    await gitServer?.close();
    if (root) rmSync(root, { recursive: true, force: true });
  });

  it('edits, checks, commits and pushes; the credentials appear in no log line, event or response', async () => {
    // Every response the SDK receives is kept (a copy of the body) to look for the secrets in; the event
    // stream's content is the events themselves (kept below).
    const bodies: Array<Promise<void>> = [];
    const recording: typeof fetch = async (input, init) => {
      const response = await fetch(input, init);
      if (!response.headers.get('content-type')?.startsWith('text/event-stream')) {
        bodies.push(
          response
            .clone()
            .text()
            .then(
              (text) => {
                responses.push(text);
              },
              () => undefined,
            ),
        );
      }
      return response;
    };
    const svc = new SvcClient({ baseUrl: api.baseUrl, apiKey: api.adminKey, env: {}, fetch: recording });
    await svc.createCredential({ body: { category: 'model', name: 'stand-in', value: modelKey } });
    await svc.createCredential({ body: { category: 'gitea', name: 'agent-bot', value: giteaToken } });
    const project = await svc.createProject({
      body: {
        name: 'calc',
        workspace: path.join(root, 'workspace'),
        network: true,
        command: [
          'svc-agent',
          '--base-url',
          `http://10.0.2.2:${chat.port}/v1`,
          '--model',
          'stand-in-model',
          '--check',
          'node --test',
          '--push',
          'origin',
          '--branch',
          'main',
        ],
        credentials: [
          { category: 'model', name: 'stand-in', as: 'env', target: 'OPENAI_API_KEY' },
          { category: 'gitea', name: 'agent-bot', as: 'env', target: 'GITEA_TOKEN' },
        ],
      },
    });
    const { streamUrl, runId } = await svc.runCommand({
      path: { id: project.id },
      body: { prompt: 'The test fails: fix add in calc.js.' },
    });
    const events: RunEvent[] = [];
    const complete = await svc.streamRun(streamUrl, (event) => {
      events.push(event);
      if (process.env.DEBUG_RUN) console.log(JSON.stringify(event));
    });
    const output = events.flatMap((event) => (event.event === 'output' ? [event.data.text] : [])).join('');
    assert.equal(complete.status, 'succeeded', output);
    assert.equal(complete.exitCode, 0);
    assert.deepEqual(chat.refusals, [], "the agent's requests all met the chat completions schema");
    assert.equal(chat.requests.length, 3);
    // The second request answers the first tool call with the file's content, by its id.
    const toolMessage = (chat.requests[1]!.messages as Array<Record<string, unknown>>).find(
      (message) => message.role === 'tool',
    )!;
    assert.equal(toolMessage.tool_call_id, 'call_1');
    assert.equal(toolMessage.content, buggy);
    assert.match(output, /check `node --test` passed/, JSON.stringify(output));

    // The commit is in the stand-in gitea's repository, pushed with the token.
    const bare = path.join(root, 'repos', 'calc.git');
    assert.equal(git(bare, 'log', '-1', '--format=%s', 'main'), 'Fix add: it subtracted');
    assert.equal(git(bare, 'show', 'main:calc.js') + '\n', fixed);
    assert.ok(gitServer.authorized >= 2, 'the push authenticated with the injected token');
    assert.equal(readFileSync(path.join(root, 'workspace', 'calc.js'), 'utf8'), fixed);

    const audit = events.find((event) => event.event === 'credentials');
    assert.deepEqual(audit?.data, {
      injected: [
        { category: 'model', name: 'stand-in', as: 'env', target: 'OPENAI_API_KEY' },
        { category: 'gitea', name: 'agent-bot', as: 'env', target: 'GITEA_TOKEN' },
      ],
    });
    await svc.getRun({ path: { id: runId } });
    await Promise.all(bodies);
    assert.equal(responses.length, 5, 'two credentials, the project, the run, its status');
    const seen = [JSON.stringify(events), JSON.stringify(api.logs), ...responses].join('\n');
    for (const secret of [modelKey, giteaToken]) {
      assert.ok(!seen.includes(secret), 'a credential value appeared in a log line, an event or a response');
      assert.ok(!seen.includes(Buffer.from(secret).toString('base64')));
    }
  });
});
