import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startAgentWorker } from '../../api/runs/agent-worker.js';
import type { AgentWorker } from '../../api/runs/agent-worker.js';
import { startTestApi, startTestRedis, waitFor } from '../api/harness.js';
import type { TestApi, TestRedis } from '../api/harness.js';
import { SvcApiError, SvcClient, SvcStreamError } from '../../sdk/src/index.js';
import type { ReconnectInfo, RunEvent } from '../../sdk/src/index.js';
import { startTcpProxy } from './tcp-proxy.js';
import type { TcpProxy } from './tcp-proxy.js';

/** gateWaitRoundsMax bounds the agent's wait for the test to open its gate (50 ms each). */
const gateWaitRoundsMax = 300;

const stdoutOf = (events: RunEvent[]) =>
  events
    .flatMap((event) => (event.event === 'output' && event.data.stream === 'stdout' ? [event.data.text] : []))
    .join('');

/** recordingFetch remembers the Last-Event-ID of every request it sends. */
function recordingFetch(): { fetch: typeof fetch; lastEventIds: (string | null)[] } {
  const lastEventIds: (string | null)[] = [];
  return {
    lastEventIds,
    fetch: (input, init) => {
      lastEventIds.push(new Headers(init?.headers).get('last-event-id'));
      return fetch(input, init);
    },
  };
}

describe('sdk: run event streams against a real API server, Redis and agent worker', function () {
  this.timeout(60_000);
  let redis: TestRedis;
  let api: TestApi;
  let worker: AgentWorker;
  let workspace: string;
  let proxy: TcpProxy;
  let admin: SvcClient;
  let projectId: string;

  const gatePath = () => path.join(workspace, 'gate');
  const start = async (prompt: string, client = admin) => {
    const accepted = await client.runCommand({ path: { id: projectId }, body: { prompt } });
    assert.equal(accepted.streamUrl, `/runs/${accepted.runId}/events`);
    return accepted;
  };

  before(async () => {
    redis = await startTestRedis();
    api = await startTestApi({ redisUrl: redis.url });
    worker = await startAgentWorker({ redisUrl: redis.url, store: api.store, concurrency: 2, runTimeoutMs: 30_000 });
    proxy = await startTcpProxy(api.baseUrl);
    workspace = mkdtempSync(path.join(os.tmpdir(), 'svc-sdk-ws-'));
    writeFileSync(
      path.join(workspace, 'agent.sh'),
      [
        '#!/bin/sh',
        'echo "prompt: $1"',
        'case "$1" in',
        `  gate*) echo "waiting at gate"; i=0; while [ ! -f gate ] && [ $i -lt ${gateWaitRoundsMax} ]; do sleep 0.05; i=$((i+1)); done; echo "through gate" ;;`,
        '  fail*) exit 3 ;;',
        'esac',
        'echo done',
      ].join('\n'),
    );
    chmodSync(path.join(workspace, 'agent.sh'), 0o755);
    admin = new SvcClient({ baseUrl: api.baseUrl, apiKey: api.adminKey, env: {} });
    projectId = (await admin.createProject({ body: { name: 'agent', workspace, command: ['./agent.sh'] } })).id;
  });
  beforeEach(() => rmSync(gatePath(), { force: true }));
  after(async () => {
    if (workspace) writeFileSync(gatePath(), '');
    await proxy?.close();
    await worker?.close();
    await api?.close();
    await redis?.stop();
    if (workspace) rmSync(workspace, { recursive: true, force: true });
  });

  it('streamRun delivers every event in order and resolves with the complete event', async () => {
    const { streamUrl } = await start('hello sdk');
    const events: RunEvent[] = [];
    const complete = await admin.streamRun(streamUrl, (event) => {
      events.push(event);
    });
    assert.deepEqual(complete, { ...complete, status: 'succeeded', exitCode: 0 });
    assert.ok(Number.isInteger(complete.durationMs));
    assert.deepEqual(
      events.map((event) => event.event).filter((name) => name !== 'output'),
      ['queued', 'started', 'complete'],
    );
    assert.equal(stdoutOf(events), 'prompt: hello sdk\ndone\n');
    assert.deepEqual(events.at(-1), { id: events.at(-1)!.id, event: 'complete', data: complete });
    const failed = await admin.streamRun((await start('fail now')).streamUrl, () => undefined);
    assert.deepEqual(failed, { ...failed, status: 'failed', exitCode: 3 });
  });

  it('reconnects after a dropped connection with Last-Event-ID, repeating and losing nothing', async () => {
    const { streamUrl } = await start('gate');
    const recorder = recordingFetch();
    const viaProxy = new SvcClient({ baseUrl: proxy.url, apiKey: api.adminKey, fetch: recorder.fetch, env: {} });
    const events: RunEvent[] = [];
    const reconnects: ReconnectInfo[] = [];
    let dropped = false;
    const complete = await viaProxy.streamRun(
      streamUrl,
      (event) => {
        events.push(event);
        if (!dropped && event.event === 'output' && event.data.text.includes('waiting at gate')) {
          dropped = true;
          proxy.dropAll();
        }
      },
      {
        reconnectDelayMs: 50,
        onReconnect: (info) => {
          reconnects.push(info);
          // The agent finishes only after the drop, so the rest of the stream must come over the new connection.
          writeFileSync(gatePath(), '');
        },
      },
    );
    assert.equal(complete.status, 'succeeded');
    assert.ok(dropped, 'the connection was dropped mid-run');
    assert.equal(reconnects.length, 1, JSON.stringify(reconnects.map((info) => info.reason.message)));
    const lastBeforeDrop = events.find(
      (event) => event.event === 'output' && event.data.text.includes('waiting at gate'),
    )!;
    const deliveredBeforeReconnect = events.slice(0, events.indexOf(lastBeforeDrop) + 1);
    assert.equal(reconnects[0]!.lastEventId, lastBeforeDrop.id);
    assert.equal(reconnects[0]!.reason.code, 'CONNECTION_FAILED');
    assert.deepEqual(
      recorder.lastEventIds,
      [null, lastBeforeDrop.id],
      'the second request resumes after the last event',
    );
    assert.ok(events.length > deliveredBeforeReconnect.length, 'events arrived after the reconnect');

    const ids = events.map((event) => event.id);
    assert.equal(new Set(ids).size, ids.length, 'no event is repeated');
    const replay: RunEvent[] = [];
    for await (const event of admin.runEvents(streamUrl)) replay.push(event);
    assert.deepEqual(events, replay, 'nothing was lost: the same events as one clean read');
    assert.equal(stdoutOf(events), 'prompt: gate\nwaiting at gate\nthrough gate\ndone\n');
  });

  it('resumes after a given event id, and stops cleanly when the caller breaks out', async () => {
    const { streamUrl } = await start('resume');
    const all: RunEvent[] = [];
    await admin.streamRun(streamUrl, (event) => {
      all.push(event);
    });
    const resumed: RunEvent[] = [];
    for await (const event of admin.runEvents(streamUrl, { lastEventId: all[1]!.id })) resumed.push(event);
    assert.deepEqual(resumed, all.slice(2));

    const gated = await start('gate held');
    const viaProxy = new SvcClient({ baseUrl: proxy.url, apiKey: api.adminKey, env: {} });
    const seen: string[] = [];
    for await (const event of viaProxy.runEvents(gated.streamUrl)) {
      seen.push(event.event);
      if (event.event === 'started') break;
    }
    assert.deepEqual(seen, ['queued', 'started']);
    await waitFor(
      async () => proxy.busyConnectionCount(),
      (count) => count === 0,
      2_000,
    );
    writeFileSync(gatePath(), '');
    await admin.streamRun(gated.streamUrl, () => undefined);
  });

  it('stops with SvcStreamError ABORTED when the signal fires', async () => {
    const { streamUrl } = await start('gate aborted');
    const controller = new AbortController();
    const seen: string[] = [];
    await assert.rejects(
      admin.streamRun(
        streamUrl,
        (event) => {
          seen.push(event.event);
          if (event.event === 'started') controller.abort();
        },
        { signal: controller.signal },
      ),
      (error: unknown) => error instanceof SvcStreamError && error.code === 'ABORTED',
    );
    assert.deepEqual(seen, ['queued', 'started']);
    writeFileSync(gatePath(), '');
    await admin.streamRun(streamUrl, () => undefined);
  });

  it('surfaces authentication and lookup failures on a stream as typed errors, without retrying', async () => {
    const { streamUrl } = await start('auth');
    const issued = await admin.createKey({ body: { name: 'stream-revoked' } });
    await admin.revokeKey({ path: { id: issued.record.id } });
    const recorder = recordingFetch();
    const revoked = new SvcClient({ baseUrl: api.baseUrl, apiKey: issued.key, fetch: recorder.fetch, env: {} });
    await assert.rejects(
      revoked.streamRun(streamUrl, () => undefined),
      (error: unknown) => error instanceof SvcApiError && error.code === 'KEY_REVOKED' && error.status === 401,
    );
    assert.equal(recorder.lastEventIds.length, 1, 'an auth failure is not retried');
    const keyless = new SvcClient({ baseUrl: api.baseUrl, env: {} });
    await assert.rejects(
      keyless.streamRun(streamUrl, () => undefined),
      (error: unknown) => error instanceof SvcApiError && error.code === 'UNAUTHORIZED',
    );
    await assert.rejects(
      admin.streamRun('/runs/run_000000000aaaaaaaaaaaaaaaa/events', () => undefined),
      (error: unknown) => error instanceof SvcApiError && error.code === 'NOT_FOUND',
    );
    assert.throws(
      () => admin.runEvents('https://elsewhere.example/runs/x/events'),
      (error: unknown) => error instanceof SvcStreamError && error.code === 'FOREIGN_STREAM_URL',
    );
    await admin.streamRun(streamUrl, () => undefined);
  });
});
