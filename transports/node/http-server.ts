// The node's own HTTP surface (node:http):
//   GET /health   200 once the readiness latch converged; 503 before, and when removed, halted, reseeding or failed
//   GET /ready    200 when healthy and a leader is known (the node can serve store reads and writes)
//   GET /metrics  Prometheus text format
//   GET /status   the JSON document of node-status.ts (the status-poll readiness path reads durableLastSeq)
// With the developer API configured (node-api.ts), every other path goes to it; without, they answer 404.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { NodeStatusDocument } from './node-status.js';

export interface HttpSurface {
  /** health is null when healthy, else the reason for 503. */
  health(): string | null;
  /** ready is null when the node can serve the store, else the reason for 503. */
  ready(): string | null;
  /** status and metrics are null while the node is not running (503). */
  status(): NodeStatusDocument | null;
  metrics(): Promise<{ contentType: string; body: string } | null>;
  /**
   * api, present when the node serves the developer API, answers every other path; it returns null while
   * the API is not running (starting or stopping: 503).
   */
  api?: () => ((req: IncomingMessage, res: ServerResponse) => void) | null;
}

export interface NodeHttpServer {
  port: number;
  close(): Promise<void>;
}

export async function startHttpServer(
  host: string,
  port: number,
  surface: HttpSurface,
  requestTimeoutMs: number,
  onError: (err: Error) => void,
): Promise<NodeHttpServer> {
  const server: Server = createServer((req, res) => {
    handle(req, res, surface).catch((err: unknown) => {
      onError(err instanceof Error ? err : new Error(String(err)));
      if (!res.headersSent) send(res, 500, { status: 'error', reason: 'internal error' });
      else res.destroy();
    });
  });
  server.requestTimeout = requestTimeoutMs;
  server.headersTimeout = Math.min(requestTimeoutMs, 60_000);
  server.on('clientError', (_err, socket) => socket.destroy());
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host.replace(/^\[|\]$/g, ''), () => {
      server.off('error', reject);
      resolve();
    });
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

async function handle(req: IncomingMessage, res: ServerResponse, surface: HttpSurface): Promise<void> {
  const path = (req.url ?? '/').split('?')[0];
  const known = path === '/health' || path === '/ready' || path === '/metrics' || path === '/status';
  if (!known) {
    if (!surface.api) return send(res, 404, { status: 'error', reason: `no route ${path}` });
    const api = surface.api();
    if (api === null) return send(res, 503, { status: 'unavailable', reason: 'the developer API is not running' });
    return api(req, res);
  }
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    res.setHeader('allow', 'GET, HEAD');
    return send(res, 405, { status: 'error', reason: `${req.method} is not allowed on ${path}` });
  }
  switch (path) {
    case '/health': {
      const reason = surface.health();
      return send(
        res,
        reason === null ? 200 : 503,
        reason === null ? { status: 'ok' } : { status: 'unavailable', reason },
      );
    }
    case '/ready': {
      const reason = surface.ready();
      return send(
        res,
        reason === null ? 200 : 503,
        reason === null ? { status: 'ok' } : { status: 'unavailable', reason },
      );
    }
    case '/status': {
      const status = surface.status();
      return send(res, status === null ? 503 : 200, status ?? { status: 'unavailable', reason: 'node is not running' });
    }
    default: {
      const metrics = await surface.metrics();
      if (metrics === null) return send(res, 503, { status: 'unavailable', reason: 'node is not running' });
      res.writeHead(200, { 'content-type': metrics.contentType, 'cache-control': 'no-store' });
      res.end(metrics.body);
    }
  }
}

function send(res: ServerResponse, code: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(code, {
    'content-type': 'application/json; charset=utf-8',
    'cache-control': 'no-store',
    'content-length': Buffer.byteLength(text),
  });
  res.end(text);
}
