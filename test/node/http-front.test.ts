// The node's HTTP port (transports/node/http-server.ts) in front of the developer API: every answer carries
// exactly the headers helmet itself sets with the node's options (they are recorded from helmet once, not set by
// it per request), an API path reaches the API, the node's own paths do not, and an API that throws
// synchronously is answered 500 rather than leaving the request hanging.
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import helmet from 'helmet';
import { HSTS_MAX_AGE_SECONDS, securityHeaders, startHttpServer } from '../../transports/node/http-server.js';
import type { NodeStatusDocument } from '../../transports/node/node-status.js';

type Middleware = (req: IncomingMessage, res: ServerResponse, next: (err?: unknown) => void) => void;

/** helmetHeaders: the headers helmet's own middleware puts on a real response, with the node's options. */
async function helmetHeaders(https: boolean): Promise<Record<string, string>> {
  const middleware = helmet({
    strictTransportSecurity: https ? { maxAge: HSTS_MAX_AGE_SECONDS, includeSubDomains: false } : false,
    contentSecurityPolicy: { useDefaults: false, directives: { defaultSrc: ["'none'"], frameAncestors: ["'none'"] } },
  }) as unknown as Middleware;
  const server = createServer((req, res) => middleware(req, res, () => res.end()));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const answer = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`);
    await answer.arrayBuffer();
    return withoutTransport(answer.headers);
  } finally {
    server.close();
  }
}

/** withoutTransport: a response's headers but those node:http adds itself. */
function withoutTransport(headers: Headers): Record<string, string> {
  const own: Record<string, string> = {};
  for (const [name, value] of headers)
    if (!['date', 'connection', 'keep-alive', 'content-length', 'transfer-encoding'].includes(name)) own[name] = value;
  return own;
}

describe('node HTTP port in front of the API', () => {
  it('records the same headers helmet sets, with and without HSTS', async () => {
    for (const https of [false, true]) {
      const recorded = Object.fromEntries(securityHeaders(https).map(([name, value]) => [name.toLowerCase(), value]));
      assert.deepEqual(recorded, await helmetHeaders(https));
      assert.equal('strict-transport-security' in recorded, https);
    }
  });

  it('puts them on API answers and on its own, sends API paths to the API and answers a throwing API 500', async () => {
    let apiCalls = 0;
    let apiThrows = false;
    const errors: Error[] = [];
    const server = await startHttpServer({
      host: '127.0.0.1',
      port: 0,
      role: 'api',
      requestTimeoutMs: 5_000,
      onError: (err) => errors.push(err),
      surface: {
        health: () => null,
        ready: () => null,
        status: () => ({ role: 'leader' }) as unknown as NodeStatusDocument,
        metrics: async () => null,
        api: () => (req, res) => {
          apiCalls++;
          if (apiThrows) throw new Error('api broke');
          res.setHeader('content-type', 'application/json');
          res.end(JSON.stringify({ url: req.url }));
        },
      },
    });
    try {
      const base = `http://127.0.0.1:${server.port}`;
      const expected = await helmetHeaders(false);
      const api = await fetch(`${base}/projects?limit=2`);
      assert.deepEqual(await api.json(), { url: '/projects?limit=2' });
      const apiHeaders = withoutTransport(api.headers);
      for (const [name, value] of Object.entries(expected)) assert.equal(apiHeaders[name], value, name);
      const health = await fetch(`${base}/health?x=1`);
      assert.deepEqual(await health.json(), { status: 'ok' });
      assert.equal(health.headers.get('x-frame-options'), expected['x-frame-options']);
      const metrics = await fetch(`${base}/metrics`);
      assert.equal(metrics.status, 404);
      await metrics.arrayBuffer();
      assert.equal(apiCalls, 1, 'only the API path reached the API');
      apiThrows = true;
      const broken = await fetch(`${base}/projects`);
      assert.equal(broken.status, 500);
      assert.deepEqual(await broken.json(), { status: 'error', reason: 'internal error' });
      assert.deepEqual(
        errors.map((err) => err.message),
        ['api broke'],
      );
    } finally {
      await server.close();
    }
  });
});
