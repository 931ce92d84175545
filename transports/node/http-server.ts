// The node's own HTTP surface, on two listeners (node:http / node:https):
//   the HTTP port (httpListen; HTTPS unless plaintext was asked for by name)
//     GET /health   200 once the readiness latch converged; 503 before, and when removed, halted, reseeding or failed
//     GET /ready    200 when healthy and a leader is known (the node can serve store reads and writes)
//     GET /status   the JSON document of node-status.ts (peers' status-poll readiness path reads durableLastSeq here)
//     /metrics      404 naming the metrics listener
//     any other     the developer API when configured (node-api.ts); 404 without it
//   the metrics listener (metricsListen; plaintext, loopback by default)
//     GET /metrics  Prometheus text format; and /status, /health, /ready as above
// On the HTTP port every answer carries helmet's security headers (HSTS when it is HTTPS).
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer, Server as HttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import helmet from 'helmet';
import type { NodeStatusDocument } from './node-status.js';
import { httpsOnly } from './https-only.js';

/** HSTS_MAX_AGE_SECONDS is how long a browser keeps to HTTPS for the node's name once told (one year). */
export const HSTS_MAX_AGE_SECONDS = 31_536_000;

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

/** HttpListenerRole: 'api' is the HTTP port (no /metrics, the API, security headers); 'metrics' the metrics listener. */
export type HttpListenerRole = 'api' | 'metrics';

export interface HttpListenerOptions {
  host: string;
  port: number;
  role: HttpListenerRole;
  surface: HttpSurface;
  requestTimeoutMs: number;
  onError: (err: Error) => void;
  /** tls serves HTTPS with this PEM pair; plain HTTP to the port is answered 400 and closed (https-only.ts). */
  tls?: { cert: Buffer; key: Buffer };
  /** incomingMessage is node:http's request class for this listener (the API's, api/request-class.ts), else node's. */
  incomingMessage?: typeof IncomingMessage;
  /**
   * serverResponse is node:http's response class for this listener (the API's, api/response-class.ts), else node's.
   * A class with addConstantHeaders (ConstantHeaderTarget) gets the security headers as one list per answer.
   */
  serverResponse?: typeof ServerResponse;
}

/**
 * ConstantHeaderTarget is a response that takes headers the same on every answer as one constant list
 * (api/response-class.ts ApiServerResponse writes them into the head as one precomputed block).
 */
interface ConstantHeaderTarget {
  addConstantHeaders(headers: ReadonlyArray<readonly [string, string]>): void;
}

export interface NodeHttpServer {
  port: number;
  close(): Promise<void>;
}

export async function startHttpServer(options: HttpListenerOptions): Promise<NodeHttpServer> {
  const { surface, role, onError } = options;
  const headers = role === 'api' ? securityHeaders(options.tls !== undefined) : null;
  const fail = (res: ServerResponse, err: unknown): void => {
    onError(err instanceof Error ? err : new Error(String(err)));
    if (!res.headersSent) send(res, 500, { status: 'error', reason: 'internal error' });
    else res.destroy();
  };
  const listener = (req: IncomingMessage, res: ServerResponse): void => {
    if (headers !== null) {
      const target = res as ServerResponse & Partial<ConstantHeaderTarget>;
      if (target.addConstantHeaders !== undefined) target.addConstantHeaders(headers);
      else for (const [name, value] of headers) res.setHeader(name, value);
    }
    // A developer API request goes to the API at once: no promise or closure of this layer's per request.
    const api = role === 'api' ? apiFor(req, surface) : null;
    if (api !== null) {
      try {
        api(req, res);
      } catch (err) {
        fail(res, err);
      }
      return;
    }
    handle(req, res, surface, role).catch((err: unknown) => fail(res, err));
  };
  const requestClass = {
    ...(options.incomingMessage ? { IncomingMessage: options.incomingMessage } : {}),
    ...(options.serverResponse ? { ServerResponse: options.serverResponse } : {}),
  };
  const server: Server | HttpsServer = options.tls
    ? createHttpsServer(
        { cert: options.tls.cert, key: options.tls.key, minVersion: 'TLSv1.2', ...requestClass },
        listener,
      )
    : createServer(requestClass, listener);
  server.requestTimeout = options.requestTimeoutMs;
  server.headersTimeout = Math.min(options.requestTimeoutMs, 60_000);
  server.on('clientError', (_err, socket) => socket.destroy());
  // A failed TLS handshake (a bad client, an unknown CA on its side) closes that connection and nothing else.
  server.on('tlsClientError', (_err, socket) => socket.destroy());
  const front = server instanceof HttpsServer ? httpsOnly(server, server.headersTimeout) : server;
  await new Promise<void>((resolve, reject) => {
    front.once('error', reject);
    front.listen(options.port, options.host.replace(/^\[|\]$/g, ''), () => {
      front.off('error', reject);
      resolve();
    });
  });
  return {
    port: (front.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        let open = front === server ? 1 : 2;
        const done = (): void => {
          open -= 1;
          if (open === 0) resolve();
        };
        if (front !== server) front.close(done);
        // The HTTPS server never listened itself (the front hands it connections): closing it ends them.
        server.close(done);
        server.closeAllConnections();
      }),
  };
}

/** API_STARTING_RETRY_AFTER_SECONDS is the Retry-After of an API path asked before the API is mounted. */
export const API_STARTING_RETRY_AFTER_SECONDS = 1;

type Middleware = (req: IncomingMessage, res: ServerResponse, next: (err?: unknown) => void) => void;

/**
 * securityHeaders are helmet's headers (maintained, framework-free: it runs on node:http as on Express 5) with two
 * choices of ours: HSTS only over HTTPS (a browser ignores it over HTTP, and a plaintext node is a test set-up),
 * without includeSubDomains (the node's name says nothing of its siblings'); and a CSP for a JSON API
 * (default-src 'none'), which the API's two pages (/docs, the album page) replace with their own.
 *
 * With these options every header helmet sets is a constant (no CSP directive is a function), so helmet runs
 * once, here, against a recording response, and each answer gets the recorded headers: helmet's own middleware
 * chain per request cost about as much again as the setHeader calls themselves (bench/api-cluster.ts). Its one
 * other act, removing X-Powered-By, has nothing to remove at this point of a request (nothing set it yet).
 */
export function securityHeaders(https: boolean): ReadonlyArray<readonly [string, string]> {
  const middleware = helmet({
    strictTransportSecurity: https ? { maxAge: HSTS_MAX_AGE_SECONDS, includeSubDomains: false } : false,
    contentSecurityPolicy: {
      useDefaults: false,
      directives: { defaultSrc: ["'none'"], frameAncestors: ["'none'"] },
    },
  }) as unknown as Middleware;
  const recorded: Array<readonly [string, string]> = [];
  const recorder = {
    setHeader(name: string, value: unknown): void {
      if (typeof value !== 'string') throw new Error(`helmet set ${name} to a non-string value`);
      recorded.push([name, value]);
    },
    removeHeader(): void {},
  };
  let passed = false;
  middleware({} as IncomingMessage, recorder as unknown as ServerResponse, (err?: unknown) => {
    if (err) throw err instanceof Error ? err : new Error(String(err));
    passed = true;
  });
  // Helmet's chain is synchronous; a version that deferred or skipped next() would leave the headers unknown.
  if (!passed) throw new Error('helmet did not finish synchronously: its headers cannot be precomputed');
  return recorded;
}

const NODE_PATHS: Record<HttpListenerRole, ReadonlySet<string>> = {
  api: new Set(['/health', '/ready', '/status']),
  metrics: new Set(['/health', '/ready', '/status', '/metrics']),
};

/** apiFor is the developer API's handler when it answers this request (a path that is not the node's own), else null. */
function apiFor(
  req: IncomingMessage,
  surface: HttpSurface,
): ((req: IncomingMessage, res: ServerResponse) => void) | null {
  if (!surface.api) return null;
  const url = req.url ?? '/';
  const queryAt = url.indexOf('?');
  const path = queryAt === -1 ? url : url.slice(0, queryAt);
  if (path === '/metrics' || NODE_PATHS.api.has(path)) return null;
  return surface.api();
}

async function handle(
  req: IncomingMessage,
  res: ServerResponse,
  surface: HttpSurface,
  role: HttpListenerRole,
): Promise<void> {
  const path = (req.url ?? '/').split('?')[0]!;
  if (role === 'api' && path === '/metrics')
    return send(res, 404, { status: 'error', reason: '/metrics is served on the metrics listener (metricsListen)' });
  if (!NODE_PATHS[role].has(path)) {
    if (role !== 'api' || !surface.api) return send(res, 404, { status: 'error', reason: `no route ${path}` });
    const api = surface.api();
    // Not mounted yet (the node is starting) or any more (stopping): the API's own error shape and a Retry-After,
    // so a client (the SDK) comes back rather than failing the call; nothing was done.
    if (api === null) {
      res.setHeader('retry-after', String(API_STARTING_RETRY_AFTER_SECONDS));
      return send(res, 503, { code: 'NOT_READY', message: 'the developer API is not running yet', requestId: '' });
    }
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
