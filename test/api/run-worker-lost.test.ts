// A run whose worker is lost mid-run ends instead of staying `running` for ever (api/runs/agent-worker.ts,
// run-records.ts finishLostRun, run-sweep.ts sweepLostRuns), against a real redis-server and real BullMQ:
// - a worker "dies" (its BullMQ worker closed without finishing, its lock left to expire) while its sandboxed
//   command is blocked; a second, live worker's stalled check hands the job back and the run ends `failed` with a
//   WORKER_LOST notice and one `complete`; the abandoned command is stopped, and it is not run again;
// - the sweep finishes a `running` run whose job is gone, unless the record changed after it was read;
// - the sweep leaves a live slow run alone (its job active, its lock renewed) for several lock durations;
// - finishRun on a run already final appends no second `complete` and never one that contradicts the record.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { agentRunQueueName } from '../../api/config.js';
import { storeKeys } from '../../api/records.js';
import { startAgentWorker } from '../../api/runs/agent-worker.js';
import type { AgentWorker } from '../../api/runs/agent-worker.js';
import type { RunRecord } from '../../api/runs/run-records.js';
import { finishRun, readRun, runKeys } from '../../api/runs/run-records.js';
import { sweepLostRuns } from '../../api/runs/run-sweep.js';
import type { DocumentStore, JsonObject, ListOptions } from '../../store/document-store.js';
import { startTestApi, startTestRedis, waitFor } from './harness.js';
import type { TestApi, TestRedis } from './harness.js';
import { readSse } from './run-events.js';

/** lock: short BullMQ lock and stalled-check settings, so a dead worker's job comes back within about a second. */
const lock = { lockDurationMs: 800, stalledIntervalMs: 300 };

/** streamEvents reads a run's whole event stream from Redis: [event name, data]. */
async function streamEvents(redis: Redis, runId: string): Promise<Array<[string, Record<string, unknown>]>> {
  const entries = await redis.xrange(runKeys.events(runId), '-', '+');
  return entries.map(([, fields]) => [
    fields[fields.indexOf('event') + 1]!,
    JSON.parse(fields[fields.indexOf('data') + 1]!) as Record<string, unknown>,
  ]);
}

/** processesNamed lists the host's processes whose command line holds token (the sandbox's are visible here). */
function processesNamed(token: string): string[] {
  try {
    return execFileSync('pgrep', ['-f', token], { encoding: 'utf8' }).trim().split('\n').filter(Boolean);
  } catch {
    return [];
  }
}

describe('api: a run whose worker is lost ends failed (WORKER_LOST)', function () {
  this.timeout(60_000);
  let redis: TestRedis;
  let api: TestApi;
  let client: Redis;
  let queue: Queue;
  let workspace: string;
  let projectId: string;
  const workers: AgentWorker[] = [];

  const startRun = async (prompt: string): Promise<string> => {
    const accepted = await api.call('POST', `/projects/${projectId}/commands`, { body: { prompt } });
    assert.equal(accepted.status, 202, accepted.text);
    return accepted.json.runId as string;
  };
  const startWorker = async (): Promise<AgentWorker> => {
    const worker = await startAgentWorker({ redisUrl: redis.url, store: api.store, runTimeoutMs: 30_000, ...lock });
    workers.push(worker);
    return worker;
  };
  const closeWorker = async (worker: AgentWorker) => {
    workers.splice(workers.indexOf(worker), 1);
    await worker.close();
  };
  const runningWithOutput = (runId: string) =>
    waitFor(
      () => streamEvents(client, runId),
      (events) => events.some(([name]) => name === 'output'),
    );

  before(async () => {
    redis = await startTestRedis();
    api = await startTestApi({ redisUrl: redis.url, config: { sseKeepAliveMs: 150 } });
    client = new Redis(redis.url);
    queue = new Queue(agentRunQueueName, { connection: client });
    workspace = mkdtempSync(path.join(os.tmpdir(), 'svc-lost-ws-'));
    // The command says it started, then blocks (bounded: 60 s) until it is killed.
    writeFileSync(
      path.join(workspace, 'agent.sh'),
      ['#!/bin/sh', 'echo "started $1"', 'i=0; while [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done', 'echo done'].join(
        '\n',
      ),
    );
    chmodSync(path.join(workspace, 'agent.sh'), 0o755);
    const created = await api.call('POST', '/projects', {
      body: { name: 'lost', workspace, command: ['./agent.sh'], network: false },
    });
    assert.equal(created.status, 201, created.text);
    projectId = created.json.id as string;
  });
  after(async () => {
    for (const worker of workers) await worker.close();
    await queue?.close();
    client?.disconnect();
    await api?.close();
    await redis?.stop();
    if (workspace) rmSync(workspace, { recursive: true, force: true });
  });

  it('a worker dies mid-run: a live worker fails it WORKER_LOST with one complete, and its command is stopped', async () => {
    const first = await startWorker();
    const token = `blocked-${process.pid}-${Date.now()}`;
    const runId = await startRun(token);
    await runningWithOutput(runId);
    assert.equal((await readRun(api.store, runId))!.status, 'running');
    assert.equal(processesNamed(token).length > 0, true, 'the sandboxed command runs');
    await first.close(true);

    const second = await startWorker();
    const read = await readSse(api, `/runs/${runId}/events`);
    const names = read.events.map((event) => event.event);
    assert.deepEqual(
      names.filter((name) => name !== 'output'),
      ['queued', 'started', 'notice', 'complete'],
    );
    const notice = read.events.find((event) => event.event === 'notice')!.data as { code: string; message: string };
    assert.equal(notice.code, 'WORKER_LOST');
    assert.match(notice.message, /worker running this run stopped/);
    assert.deepEqual(read.events.at(-1)!.data, {
      status: 'failed',
      exitCode: null,
      durationMs: (await readRun(api.store, runId))!.duration_ms,
    });
    const record = (await api.call('GET', `/runs/${runId}`)).json;
    assert.equal(record.status, 'failed');
    assert.ok(record.finished_at);

    // The abandoned command is stopped (the dead worker's process here still heard the cancel), and its end
    // changes nothing: the record stays failed, the stream ends with the one complete, nothing ran again.
    await waitFor(
      async () => processesNamed(token),
      (pids) => pids.length === 0,
    );
    await closeWorker(first);
    await closeWorker(second);
    const events = await streamEvents(client, runId);
    assert.equal(events.filter(([name]) => name === 'complete').length, 1, JSON.stringify(events));
    assert.equal(events.filter(([name]) => name === 'started').length, 1, 'it is not run again');
    assert.equal((await readRun(api.store, runId))!.status, 'failed');
  });

  it('the sweep finishes a running run whose job is gone, unless its record changed after it was read', async () => {
    const runId = await startRun('never-taken');
    // No worker takes it: its job is removed and its record says `running`, as after a worker lost it.
    await queue.remove(runId);
    assert.equal(await queue.getJobState(runId), 'unknown');
    const queued = (await readRun(api.store, runId))!;
    const running: RunRecord = { ...queued, status: 'running', started_at: new Date(Date.now() - 5000).toISOString() };
    await api.store.put(storeKeys.run(runId), running);

    // A store whose listing is followed by a write to the record (a worker finishing it meanwhile): that wins.
    const racing: DocumentStore = Object.create(api.store) as DocumentStore;
    racing.list = async <T extends JsonObject = JsonObject>(prefix: string, options?: ListOptions) => {
      const page = await api.store.list<T>(prefix, options);
      const entry = page.entries.find((found) => found.key === storeKeys.run(runId));
      if (entry) await api.store.put(entry.key, { ...entry.value });
      return page;
    };
    const jobStateOf = (id: string) => queue.getJobState(id);
    assert.deepEqual(await sweepLostRuns(racing, client, jobStateOf), { running: 1, finished: 0 });
    assert.equal((await readRun(api.store, runId))!.status, 'running');

    assert.deepEqual(await sweepLostRuns(api.store, client, jobStateOf), { running: 1, finished: 1 });
    const record = (await readRun(api.store, runId))!;
    assert.equal(record.status, 'failed');
    assert.ok(record.duration_ms! >= 5000, `duration from started_at: ${record.duration_ms}`);
    const events = await streamEvents(client, runId);
    assert.deepEqual(
      events.map(([name]) => name),
      ['queued', 'notice', 'complete'],
    );
    assert.equal(events[1]![1].code, 'WORKER_LOST');
    assert.deepEqual(events[2]![1], { status: 'failed', exitCode: null, durationMs: record.duration_ms });
    assert.ok((await client.ttl(runKeys.events(runId))) > 0, 'the stream retention started');
    assert.deepEqual(await sweepLostRuns(api.store, client, jobStateOf), { running: 0, finished: 0 });
  });

  it('the sweep leaves a live slow run alone while its worker holds the lock', async () => {
    const worker = await startWorker();
    const runId = await startRun('slow');
    await runningWithOutput(runId);
    const before = await api.store.get(storeKeys.run(runId));
    const jobStateOf = (id: string) => queue.getJobState(id);
    // Sweep again and again across several lock durations: the worker renews its lock, the job stays active.
    const startedMs = Date.now();
    const sweeps = await waitFor(
      async () => {
        const outcome = await sweepLostRuns(api.store, client, jobStateOf);
        assert.deepEqual(outcome, { running: 1, finished: 0 });
        return Date.now() - startedMs;
      },
      (elapsedMs) => elapsedMs > 4 * lock.lockDurationMs,
      20_000,
      100,
    );
    assert.ok(sweeps > 0);
    assert.equal(await queue.getJobState(runId), 'active');
    assert.deepEqual(await api.store.get(storeKeys.run(runId)), before, 'the record is untouched');
    assert.equal((await api.call('POST', `/runs/${runId}/cancel`)).status, 202);
    await waitFor(
      async () => (await readRun(api.store, runId))!.status,
      (status) => status === 'cancelled',
    );
    await closeWorker(worker);
  });

  it('finishRun on a run already final neither repeats complete nor contradicts the record', async () => {
    const runId = await startRun('finished-twice');
    await queue.remove(runId);
    await finishRun(api.store, client, runId, 'failed', 3, 10);
    await finishRun(api.store, client, runId, 'cancelled', null, 20);
    assert.equal((await readRun(api.store, runId))!.status, 'failed');
    const completes = (await streamEvents(client, runId)).filter(([name]) => name === 'complete');
    assert.deepEqual(completes, [['complete', { status: 'failed', exitCode: 3, durationMs: 10 }]]);
    // A run finished in the store by a party that could not append its complete gets the record's own.
    const other = await startRun('finished-without-event');
    await queue.remove(other);
    const record = (await readRun(api.store, other))!;
    await api.store.put(storeKeys.run(other), { ...record, status: 'timed_out', exit_code: null, duration_ms: 7 });
    await finishRun(api.store, client, other, 'succeeded', 0, 99);
    assert.deepEqual(
      (await streamEvents(client, other)).filter(([name]) => name === 'complete'),
      [['complete', { status: 'timed_out', exitCode: null, durationMs: 7 }]],
    );
  });
});
