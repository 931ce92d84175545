// The stream helper against a scripted event-stream server, for what the real API does rarely or never: a
// response that ends early, a silent connection, a retry field, an endless 503, bodies that are not events.
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { SvcApiError, SvcClient, SvcStreamError } from '../../sdk/src/index.js';
import type { ReconnectInfo, RunEvent } from '../../sdk/src/index.js';

type Handler = (req: http.IncomingMessage, res: http.ServerResponse) => void;

interface ScriptedServer {
  client: SvcClient;
  /** lastEventIds holds the Last-Event-ID of each request, in order (null when absent). */
  lastEventIds: (string | null)[];
  close(): Promise<void>;
}

const sse = (res: http.ServerResponse) => res.writeHead(200, { 'content-type': 'text/event-stream' });
const event = (id: string, name: string, data: unknown) =>
  `id: ${id}\nevent: ${name}\ndata: ${JSON.stringify(data)}\n\n`;
const complete = (id: string) => event(id, 'complete', { status: 'succeeded', exitCode: 0, durationMs: 5 });
const output = (id: string, text: string) => event(id, 'output', { stream: 'stdout', text });

/** startScripted answers the n-th request with handlers[n] (the last one repeats). */
async function startScripted(handlers: Handler[]): Promise<ScriptedServer> {
  const lastEventIds: (string | null)[] = [];
  const open = new Set<http.ServerResponse>();
  const server = http.createServer((req, res) => {
    lastEventIds.push((req.headers['last-event-id'] as string | undefined) ?? null);
    open.add(res);
    res.on('close', () => open.delete(res));
    handlers[Math.min(lastEventIds.length - 1, handlers.length - 1)]!(req, res);
  });
  server.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    client: new SvcClient({ baseUrl, apiKey: 'svc_test', env: {} }),
    lastEventIds,
    async close() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

async function collect(
  server: ScriptedServer,
  options: Parameters<SvcClient['runEvents']>[1] = {},
): Promise<{ events: RunEvent[]; reconnects: ReconnectInfo[] }> {
  const events: RunEvent[] = [];
  const reconnects: ReconnectInfo[] = [];
  for await (const item of server.client.runEvents('/runs/x/events', {
    reconnectDelayMs: 10,
    ...options,
    onReconnect: (info) => reconnects.push(info),
  }))
    events.push(item);
  return { events, reconnects };
}

describe('sdk: event stream faults (scripted server)', function () {
  this.timeout(20_000);
  const servers: ScriptedServer[] = [];
  const scripted = async (handlers: Handler[]) => {
    const server = await startScripted(handlers);
    servers.push(server);
    return server;
  };
  afterEach(async () => {
    await Promise.all(servers.splice(0).map((server) => server.close()));
  });

  it('reconnects after a response that ends before complete, resuming after the last event', async () => {
    const server = await scripted([
      (_req, res) => {
        sse(res);
        res.end(output('1-0', 'a') + output('1-1', 'b'));
      },
      (_req, res) => {
        sse(res);
        res.end(': hello\n\n' + output('2-0', 'c') + complete('2-1'));
      },
    ]);
    const { events, reconnects } = await collect(server);
    assert.deepEqual(
      events.map((item) => item.id),
      ['1-0', '1-1', '2-0', '2-1'],
    );
    assert.deepEqual(server.lastEventIds, [null, '1-1']);
    assert.equal(reconnects.length, 1);
    assert.equal(reconnects[0]!.reason.code, 'ENDED_EARLY');
    assert.equal(events.at(-1)!.event, 'complete');
  });

  it('drops a silent connection after idleTimeoutMs and resumes', async () => {
    const server = await scripted([
      (_req, res) => {
        sse(res);
        res.write(output('1-0', 'a'));
      },
      (_req, res) => {
        sse(res);
        res.end(complete('1-1'));
      },
    ]);
    const started = Date.now();
    const { events, reconnects } = await collect(server, { idleTimeoutMs: 200 });
    assert.deepEqual(
      events.map((item) => item.id),
      ['1-0', '1-1'],
    );
    assert.equal(reconnects[0]!.reason.code, 'IDLE_TIMEOUT');
    assert.deepEqual(server.lastEventIds, [null, '1-0']);
    assert.ok(Date.now() - started < 5_000);
  });

  it("waits the server's retry: delay before reconnecting", async () => {
    const server = await scripted([
      (_req, res) => {
        sse(res);
        res.end(`retry: 30\n${output('1-0', 'a')}`);
      },
      (_req, res) => {
        sse(res);
        res.end(complete('1-1'));
      },
    ]);
    const { reconnects } = await collect(server);
    assert.equal(reconnects[0]!.delayMs, 30);
  });

  it('gives up with RECONNECT_LIMIT after reconnectAttemptsMax failures in a row, keeping the last cause', async () => {
    const unavailable: Handler = (_req, res) => {
      res.writeHead(503, { 'content-type': 'application/json', 'x-request-id': 'r1' });
      res.end(JSON.stringify({ code: 'QUEUE_UNAVAILABLE', message: 'no redis', requestId: 'r1' }));
    };
    const server = await scripted([unavailable]);
    const error = await collect(server, { reconnectAttemptsMax: 2 }).then(
      () => assert.fail('expected a failure'),
      (caught: unknown) => caught,
    );
    assert.ok(error instanceof SvcStreamError && error.code === 'RECONNECT_LIMIT', String(error));
    assert.ok(error.cause instanceof SvcApiError && error.cause.code === 'QUEUE_UNAVAILABLE');
    assert.equal(server.lastEventIds.length, 3, 'the first try and two reconnects');
  });

  it('resets the failure count whenever an event arrives', async () => {
    const handlers: Handler[] = [];
    for (let index = 0; index < 5; index += 1) {
      handlers.push((_req, res) => {
        sse(res);
        res.end(output(`${index}-0`, 'x'));
      });
    }
    handlers.push((_req, res) => {
      sse(res);
      res.end(complete('9-0'));
    });
    const server = await scripted(handlers);
    const { events } = await collect(server, { reconnectAttemptsMax: 1 });
    assert.equal(events.length, 6, 'five drops, each after progress, never hit the limit of 1');
  });

  it('refuses a body that is not an event stream, and malformed known events, without retrying', async () => {
    const json = await scripted([
      (_req, res) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end('{}');
      },
    ]);
    await assert.rejects(
      collect(json),
      (error: unknown) => error instanceof SvcStreamError && error.code === 'NOT_AN_EVENT_STREAM',
    );
    assert.equal(json.lastEventIds.length, 1);

    const malformed = await scripted([
      (_req, res) => {
        sse(res);
        res.end(event('1-0', 'complete', { status: 'weird' }));
      },
    ]);
    await assert.rejects(
      collect(malformed),
      (error: unknown) => error instanceof SvcStreamError && error.code === 'MALFORMED_EVENT',
    );
    assert.equal(malformed.lastEventIds.length, 1);

    const huge = await scripted([
      (_req, res) => {
        sse(res);
        res.end(`data: ${'x'.repeat(200)}\n\n`);
      },
    ]);
    await assert.rejects(
      collect(huge, { sseLimits: { lineLengthMax: 100 } }),
      (error: unknown) => error instanceof SvcStreamError && error.code === 'EVENT_TOO_LARGE',
    );
  });

  it('passes events it does not know through as unrecognized', async () => {
    const server = await scripted([
      (_req, res) => {
        sse(res);
        res.end(
          event('1-0', 'progress', { percent: 5 }) + 'id: 1-1\nevent: hint\ndata: plain text\n\n' + complete('1-2'),
        );
      },
    ]);
    const { events } = await collect(server);
    assert.deepEqual(events.slice(0, 2), [
      { id: '1-0', event: 'unrecognized', name: 'progress', data: { percent: 5 } },
      { id: '1-1', event: 'unrecognized', name: 'hint', data: 'plain text' },
    ]);
  });

  it('reports an answer that is not the API error shape as UNEXPECTED_RESPONSE', async () => {
    const server = await scripted([
      (_req, res) => {
        res.writeHead(502, { 'content-type': 'text/html' });
        res.end('<html>bad gateway</html>');
      },
    ]);
    await assert.rejects(
      server.client.getHealth(),
      (error: unknown) =>
        error instanceof SvcApiError &&
        error.code === 'UNEXPECTED_RESPONSE' &&
        error.status === 502 &&
        error.message.includes('bad gateway'),
    );
    const streamError = await collect(server, { reconnectAttemptsMax: 0 }).then(
      () => assert.fail('expected a failure'),
      (caught: unknown) => caught,
    );
    assert.ok(streamError instanceof SvcStreamError && streamError.code === 'RECONNECT_LIMIT');
    assert.ok(streamError.cause instanceof SvcApiError && streamError.cause.code === 'UNEXPECTED_RESPONSE');
  });

  it('userEvents follows the open-ended user channel across reconnects until the caller stops', async () => {
    const server = await scripted([
      (req, res) => {
        assert.equal(req.url, '/events');
        sse(res);
        res.end(event('1-0', 'album.shot', { albumId: 'alb_1', index: 0, status: 'generating' }));
      },
      (_req, res) => {
        sse(res);
        res.write(event('1-1', 'album.shot', { albumId: 'alb_1', index: 0, status: 'complete' }));
      },
    ]);
    const seen: unknown[] = [];
    for await (const item of server.client.userEvents({ lastEventId: '0', reconnectDelayMs: 10 })) {
      seen.push(item);
      if (seen.length === 2) break;
    }
    assert.deepEqual(seen, [
      { id: '1-0', event: 'album.shot', data: { albumId: 'alb_1', index: 0, status: 'generating' } },
      { id: '1-1', event: 'album.shot', data: { albumId: 'alb_1', index: 0, status: 'complete' } },
    ]);
    assert.deepEqual(server.lastEventIds, ['0', '1-0']);
  });
});
