// The fields the API adds to a request (request id, auth, read session, start time, the validator's match) live in
// one holder behind accessors on the app's own request prototype (app.ts holdRequestFieldsTogether): a request
// gets one new property instead of six (each added property grows the IncomingMessage's property store by copying).
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { Registry } from 'prom-client';
import { createApp } from '../../api/app.js';
import { bootstrapAdminKey } from '../../api/auth/api-keys.js';
import { silentApiLogger } from '../../api/log.js';
import { ApiIncomingMessage, requestFieldsSlot } from '../../api/request-class.js';
import { startHttpServer } from '../../transports/node/http-server.js';
import { MemoryDocumentStore } from '../../store/memory-store.js';

const apiFields = ['requestId', 'auth', 'readStore', 'log', 'startedMs', 'openapi'];

async function serve(
  handler: http.RequestListener,
  options: http.ServerOptions = {},
): Promise<{ url: string; server: http.Server }> {
  const server = http.createServer(options, handler);
  server.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

describe('request fields held together', () => {
  it('a keyed request carries its fields without adding them as own properties, and reads them back', async () => {
    const store = new MemoryDocumentStore();
    const admin = await bootstrapAdminKey(store, 'fields');
    const service = createApp({
      store,
      config: { log: silentApiLogger(), metricsRegistry: new Registry(), rateLimitPerSecond: 1_000 },
    });
    const seen: http.IncomingMessage[] = [];
    const { url, server } = await serve((req, res) => {
      seen.push(req);
      service.app(req, res);
    });
    try {
      const response = await fetch(`${url}/projects`, { headers: { 'x-api-key': admin.key, 'x-request-id': 'rf-1' } });
      assert.equal(response.status, 200);
      assert.equal(response.headers.get('x-request-id'), 'rf-1');
      const req = seen[0]! as express.Request & { openapi?: { expressRoute?: string } };
      const own = Object.getOwnPropertyNames(req);
      for (const field of apiFields) assert.ok(!own.includes(field), `${field} is not an own property of the request`);
      assert.equal(req.requestId, 'rf-1');
      assert.equal(req.auth?.keyId, admin.keyId);
      assert.equal(req.auth?.role, 'admin');
      assert.ok(req.readStore, 'the read session is readable');
      assert.equal(typeof req.startedMs, 'number');
      assert.equal(req.openapi?.expressRoute, '/projects');
      // A refused request reads its fields the same way (its error body carries the request id).
      const refused = await fetch(`${url}/projects`, { headers: { 'x-api-key': 'svc_' + 'x'.repeat(43) } });
      assert.equal(refused.status, 401);
      assert.equal(((await refused.json()) as { requestId: string }).requestId, refused.headers.get('x-request-id'));
      assert.equal((seen[1] as express.Request).auth, undefined);
    } finally {
      server.closeAllConnections();
      server.close();
      await service.close();
    }
  });

  it("on a server made with the API's request class the holder's slot is there from the constructor on", async () => {
    const store = new MemoryDocumentStore();
    const admin = await bootstrapAdminKey(store, 'slot');
    const service = createApp({ store, config: { log: silentApiLogger(), rateLimitPerSecond: 1_000 } });
    const seen: Array<{ req: http.IncomingMessage; made: boolean; slotAtArrival: boolean }> = [];
    const { url, server } = await serve(
      (req, res) => {
        // Express then moves the request onto its own prototype (the slot, an own property, stays).
        seen.push({
          req,
          made: req instanceof ApiIncomingMessage,
          slotAtArrival: Object.getOwnPropertySymbols(req).includes(requestFieldsSlot),
        });
        service.app(req, res);
      },
      { IncomingMessage: ApiIncomingMessage },
    );
    try {
      const response = await fetch(`${url}/projects`, { headers: { 'x-api-key': admin.key, 'x-request-id': 'rf-2' } });
      assert.equal(response.status, 200);
      const { req, made, slotAtArrival } = seen[0]!;
      assert.ok(made, 'the server made the request with the class');
      assert.ok(slotAtArrival, 'the slot is an own property before the API sees the request');
      // The API kept its fields in that slot: no other symbol or field was added for them.
      assert.deepEqual(
        Object.getOwnPropertySymbols(req).filter((symbol) => symbol.description === 'svc.requestFields'),
        [requestFieldsSlot],
      );
      assert.equal((req as unknown as express.Request).requestId, 'rf-2');
      assert.equal((req as unknown as express.Request).auth?.keyId, admin.keyId);
    } finally {
      server.closeAllConnections();
      server.close();
      await service.close();
    }
  });

  it("the node's HTTP front makes its requests with the class it is given", async () => {
    const classes: boolean[] = [];
    const front = await startHttpServer({
      host: '127.0.0.1',
      port: 0,
      role: 'api',
      incomingMessage: ApiIncomingMessage,
      requestTimeoutMs: 10_000,
      onError: () => undefined,
      surface: {
        health: () => null,
        ready: () => null,
        status: () => null,
        metrics: () => Promise.resolve(null),
        api: () => (req, res) => {
          classes.push(req instanceof ApiIncomingMessage);
          res.end();
        },
      },
    });
    try {
      assert.equal((await fetch(`http://127.0.0.1:${front.port}/projects`)).status, 200);
      assert.deepEqual(classes, [true]);
    } finally {
      await front.close();
    }
  });

  it('leaves other Express apps in the process as they are', async () => {
    const store = new MemoryDocumentStore();
    const service = createApp({ store, config: { log: silentApiLogger() } });
    const other = express();
    other.get('/', (req, res) => {
      req.requestId = 'plain';
      res.json({ own: Object.getOwnPropertyNames(req).includes('requestId') });
    });
    const { url, server } = await serve(other);
    try {
      assert.deepEqual(await (await fetch(url)).json(), { own: true });
    } finally {
      server.closeAllConnections();
      server.close();
      await service.close();
    }
  });
});
