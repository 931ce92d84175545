import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { runCompleteRepairGraceMs } from '../../api/limits.js';
import { startAgentWorker } from '../../api/runs/agent-worker.js';
import { runKeys, type RunRecord } from '../../api/runs/run-records.js';
import type { AgentWorker } from '../../api/runs/agent-worker.js';
import { startTestApi, startTestRedis, waitFor } from './harness.js';
import type { TestApi, TestRedis } from './harness.js';
import { outputText, readSse } from './run-events.js';

/**
 * RUN_TIMEOUT_MS is the worker's time limit in these tests: short, for the time-limit test, yet well above what a
 * networked run's start (a namespace, slirp4netns) takes on a loaded machine (1.5 s was not, once).
 */
const RUN_TIMEOUT_MS = 5_000;

describe('api: agent command runs (BullMQ + bubblewrap + SSE)', function () {
  this.timeout(60_000);
  let redis: TestRedis;
  let api: TestApi;
  let worker: AgentWorker;
  let workspace: string;

  const createProject = async (command: string[], network = false): Promise<string> => {
    const created = await api.call('POST', '/projects', { body: { name: 'agent', workspace, command, network } });
    assert.equal(created.status, 201, created.text);
    return created.json.id as string;
  };
  const run = async (projectId: string, prompt: string, key?: string) => {
    const accepted = await api.call('POST', `/projects/${projectId}/commands`, { body: { prompt }, key });
    assert.equal(accepted.status, 202, accepted.text);
    assert.equal(accepted.json.streamUrl, `/runs/${accepted.json.runId}/events`);
    return accepted.json as { runId: string; streamUrl: string };
  };

  before(async () => {
    redis = await startTestRedis();
    api = await startTestApi({ redisUrl: redis.url, config: { sseKeepAliveMs: 150 } });
    worker = await startAgentWorker({
      redisUrl: redis.url,
      store: api.store,
      concurrency: 2,
      runTimeoutMs: RUN_TIMEOUT_MS,
    });
    workspace = mkdtempSync(path.join(os.tmpdir(), 'svc-agent-ws-'));
    writeFileSync(
      path.join(workspace, 'agent.sh'),
      [
        '#!/bin/sh',
        'echo "prompt: $1"',
        'echo "to stderr" >&2',
        'echo "$1" > answer.txt',
        'case "$1" in',
        '  sleep*) i=0; while [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done ;;',
        '  pause*) sleep 0.5; echo "after pause" ;;',
        '  net*) cut -d: -f1 /proc/net/dev | tail -n +3 | tr -d " " | sort | tr "\\n" " "; echo ;;',
        '  env*) env | sort; ls /etc | tr "\\n" " "; echo ;;',
        '  fail*) exit 3 ;;',
        'esac',
        'echo done',
      ].join('\n'),
    );
    chmodSync(path.join(workspace, 'agent.sh'), 0o755);
  });
  after(async () => {
    await worker?.close();
    await api?.close();
    await redis?.stop();
    if (workspace) rmSync(workspace, { recursive: true, force: true });
  });

  it('runs the agent script in its workspace and streams progress, ending with complete', async () => {
    const projectId = await createProject(['./agent.sh']);
    const { streamUrl, runId } = await run(projectId, 'hello world');
    const read = await readSse(api, streamUrl);
    assert.equal(read.status, 200);
    assert.match(read.headers.get('content-type')!, /^text\/event-stream/);
    assert.equal(read.headers.get('cache-control'), 'no-cache');
    assert.equal(read.headers.get('x-accel-buffering'), 'no');
    assert.deepEqual(
      read.events.map((event) => event.event).filter((name) => name !== 'output'),
      ['queued', 'started', 'complete'],
    );
    assert.equal(outputText(read.events, 'stdout'), 'prompt: hello world\ndone\n');
    assert.equal(outputText(read.events, 'stderr'), 'to stderr\n');
    const complete = read.events.at(-1)!.data as { status: string; exitCode: number; durationMs: number };
    assert.equal(complete.status, 'succeeded');
    assert.equal(complete.exitCode, 0);
    assert.ok(Number.isInteger(complete.durationMs) && complete.durationMs >= 0);
    assert.equal(
      readFileSync(path.join(workspace, 'answer.txt'), 'utf8'),
      'hello world\n',
      'the workspace is writable',
    );
    const status = await api.call('GET', `/runs/${runId}`);
    assert.equal(status.json.status, 'succeeded');
    const ids = read.events.map((event) => event.id.split('-').map(BigInt) as [bigint, bigint]);
    assert.ok(
      ids.every(
        ([ms, seq], index) =>
          index === 0 || ms > ids[index - 1]![0] || (ms === ids[index - 1]![0] && seq > ids[index - 1]![1]),
      ),
      'event ids increase',
    );
  });

  it('runs two commands of one workspace one after the other, the second told it waits', async () => {
    // Each run is handed the workspace (its own uid); two at once would take it from each other. The worker
    // runs two jobs at a time, so without the workspace lease these two would overlap.
    const projectId = await createProject(['./agent.sh']);
    const first = await run(projectId, 'pause one');
    const second = await run(projectId, 'pause two');
    const [a, b] = await Promise.all([readSse(api, first.streamUrl), readSse(api, second.streamUrl)]);
    for (const read of [a, b]) assert.equal((read.events.at(-1)!.data as { status: string }).status, 'succeeded');
    for (const read of [a, b]) assert.match(outputText(read.events, 'stdout'), /after pause\ndone\n$/);
    const records = await Promise.all(
      [first, second].map(
        async ({ runId }) => (await api.call('GET', `/runs/${runId}`)).json as Record<string, string>,
      ),
    );
    const [earlier, later] = records.sort((x, y) => Date.parse(x.started_at!) - Date.parse(y.started_at!));
    assert.ok(
      Date.parse(later!.started_at!) >= Date.parse(earlier!.finished_at!),
      `the runs do not overlap: ${JSON.stringify(records)}`,
    );
    const waited = (earlier!.id === first.runId ? b : a).events.filter((event) => event.event === 'notice');
    assert.deepEqual(
      waited.map((event) => (event.data as { code: string }).code),
      ['WORKSPACE_BUSY'],
    );
  });

  it('ends a stream whose complete event Redis lost (a failed-over primary) from the run record', async () => {
    const projectId = await createProject(['./agent.sh']);
    const { runId, streamUrl } = await run(projectId, 'hello');
    const whole = await readSse(api, streamUrl);
    const complete = whole.events.at(-1)!;
    assert.equal(complete.event, 'complete');
    // As a failover to a replica that had not received the last entry would leave it: no `complete`, and the
    // record (in the replicated store) final for longer than the finisher's grace.
    const redisClient = new Redis(redis.url, { lazyConnect: true });
    try {
      await redisClient.connect();
      assert.equal(await redisClient.xdel(runKeys.events(runId), complete.id), 1);
    } finally {
      redisClient.disconnect();
    }
    const stored = (await api.store.get<RunRecord>(`runs/${runId}`))!;
    const longAgo = new Date(Date.now() - runCompleteRepairGraceMs - 1_000).toISOString();
    await api.store.put(
      `runs/${runId}`,
      { ...stored.value, finished_at: longAgo },
      { expectedVersion: stored.version },
    );
    const resumed = await readSse(api, streamUrl, { lastEventId: whole.events.at(-2)!.id });
    assert.deepEqual(
      resumed.events.map((event) => [event.event, (event.data as { status?: string }).status]),
      [['complete', 'succeeded']],
    );
  });

  it('reports a failing agent with its exit code', async () => {
    const projectId = await createProject(['./agent.sh']);
    const read = await readSse(api, (await run(projectId, 'fail please')).streamUrl);
    assert.deepEqual(read.events.at(-1)!.data, {
      ...(read.events.at(-1)!.data as object),
      status: 'failed',
      exitCode: 3,
    });
  });

  it('gives a late client the whole stream, and resumes after Last-Event-ID', async () => {
    const projectId = await createProject(['./agent.sh']);
    const { streamUrl } = await run(projectId, 'late');
    const first = await readSse(api, streamUrl);
    const late = await readSse(api, streamUrl);
    assert.deepEqual(late.events, first.events, 'after completion the whole stream is replayed');
    const resumeAfter = first.events[1]!;
    const resumed = await readSse(api, streamUrl, { lastEventId: resumeAfter.id });
    assert.deepEqual(resumed.events, first.events.slice(2));
    const bad = await api.call('GET', streamUrl, { headers: { 'last-event-id': 'nonsense' } });
    assert.equal(bad.status, 400);
  });

  it('sends keep-alive comments while the agent is quiet', async () => {
    const projectId = await createProject(['./agent.sh']);
    const read = await readSse(api, (await run(projectId, 'pause')).streamUrl);
    assert.ok(
      read.comments.some((comment) => comment === ': keep-alive'),
      JSON.stringify(read),
    );
    assert.match(outputText(read.events, 'stdout'), /after pause/);
  });

  it('isolates the network unless the project allows it, and clears the environment', async () => {
    const isolated = await readSse(api, (await run(await createProject(['./agent.sh'], false), 'net')).streamUrl);
    assert.match(outputText(isolated.events, 'stdout'), /^prompt: net\nlo \n/);
    // With network the run still has a namespace of its own: loopback and slirp4netns's tap0, never the host's.
    const networked = await readSse(api, (await run(await createProject(['./agent.sh'], true), 'net')).streamUrl);
    assert.match(
      outputText(networked.events, 'stdout'),
      /^prompt: net\nlo tap0 \n/,
      JSON.stringify(networked.events.filter((event) => event.event !== 'output')),
    );
    const env = outputText(
      (await readSse(api, (await run(await createProject(['./agent.sh']), 'env')).streamUrl)).events,
      'stdout',
    );
    assert.ok(!env.includes('REDIS') && !env.includes('SVC_'), 'no host environment leaks in');
    assert.ok(!/\bshadow\b/.test(env), 'host /etc/shadow is not visible');
  });

  it('cancels a running run', async () => {
    const projectId = await createProject(['./agent.sh']);
    const { runId, streamUrl } = await run(projectId, 'sleep');
    await waitFor(
      () => api.call('GET', `/runs/${runId}`).then((result) => result.json.status),
      (status) => status === 'running',
    );
    const cancel = await api.call('POST', `/runs/${runId}/cancel`);
    assert.equal(cancel.status, 202);
    const read = await readSse(api, streamUrl);
    assert.equal((read.events.at(-1)!.data as { status: string }).status, 'cancelled');
  });

  it('kills a run at its time limit', async () => {
    const projectId = await createProject(['./agent.sh']);
    const read = await readSse(api, (await run(projectId, 'sleep long')).streamUrl);
    const complete = read.events.at(-1)!.data as { status: string; durationMs: number };
    assert.equal(complete.status, 'timed_out');
    assert.ok(complete.durationMs >= RUN_TIMEOUT_MS && complete.durationMs < 15_000, String(complete.durationMs));
  });

  it('keeps runs private to their user (and admins), and counts them in /work/stats', async () => {
    const projectId = await createProject(['./agent.sh']);
    const user = await api.call('POST', '/users', { body: { name: 'runner' } });
    const developer = (await api.call('POST', '/keys', { body: { name: 'dev', user_id: user.json.id } })).json
      .key as string;
    const mine = await run(projectId, 'mine', developer);
    assert.equal((await readSse(api, mine.streamUrl, { key: developer })).status, 200);
    assert.equal((await api.call('GET', `/runs/${mine.runId}`)).status, 200, 'admins see every run');
    const stranger = await api.call('POST', '/users', { body: { name: 'stranger' } });
    const strangerKey = (await api.call('POST', '/keys', { body: { name: 's', user_id: stranger.json.id } })).json
      .key as string;
    assert.equal((await api.call('GET', mine.streamUrl, { key: strangerKey })).status, 404);
    assert.equal((await api.call('POST', `/runs/${mine.runId}/cancel`, { key: strangerKey })).status, 404);
    const stats = await api.call('GET', '/work/stats');
    const queue = stats.json.queues.find((item: { name: string }) => item.name === 'agent-runs');
    assert.ok(queue.completed >= 1 && queue.failed >= 1 && queue.workers === 1, JSON.stringify(queue));
  });

  it('answers 404 for an unknown project and 400 for a bad prompt', async () => {
    assert.equal(
      (await api.call('POST', '/projects/prj_000000000aaaaaaaaaaaaaaaa/commands', { body: { prompt: 'x' } })).status,
      404,
    );
    const projectId = await createProject(['./agent.sh']);
    assert.equal((await api.call('POST', `/projects/${projectId}/commands`, { body: { prompt: '' } })).status, 400);
    assert.equal((await api.call('POST', `/projects/${projectId}/commands`, { body: {} })).status, 400);
  });
});

describe('api: cancelling a run no worker has taken', () => {
  it('removes the job and completes the stream as cancelled', async () => {
    const redis = await startTestRedis();
    const api = await startTestApi({ redisUrl: redis.url });
    try {
      const project = await api.call('POST', '/projects', {
        body: { name: 'p', workspace: '/tmp', command: ['true'] },
      });
      const accepted = await api.call('POST', `/projects/${project.json.id}/commands`, { body: { prompt: 'x' } });
      assert.equal((await api.call('POST', `/runs/${accepted.json.runId}/cancel`)).status, 202);
      const read = await readSse(api, accepted.json.streamUrl);
      assert.deepEqual(
        read.events.map((event) => event.event),
        ['queued', 'complete'],
      );
      assert.equal((read.events[1]!.data as { status: string }).status, 'cancelled');
      const stats = await api.call('GET', '/work/stats');
      assert.equal(stats.json.queues[0].waiting, 0, 'the job left the queue');
    } finally {
      await api.close();
      await redis.stop();
    }
  });
});

describe('api: agent runs without Redis', () => {
  it('answers 503 QUEUE_UNAVAILABLE', async () => {
    const api = await startTestApi();
    try {
      const project = await api.call('POST', '/projects', {
        body: { name: 'p', workspace: '/tmp', command: ['true'] },
      });
      const result = await api.call('POST', `/projects/${project.json.id}/commands`, { body: { prompt: 'x' } });
      assert.equal(result.status, 503);
      assert.equal(result.json.code, 'QUEUE_UNAVAILABLE');
    } finally {
      await api.close();
    }
  });
});
