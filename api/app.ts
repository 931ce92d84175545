// createApp wires the developer HTTP API over a DocumentStore and, optionally, Redis. Middleware order:
// request id, public routes (/health, /ready, /openapi.json, /docs), authentication, rate limit, JSON body,
// OpenAPI validation, routes, then one JSON error handler for every failure.
import './express-types.js';
import express from 'express';
import type { Express, NextFunction, Request, RequestHandler, Response } from 'express';
import type { Redis } from 'ioredis';
import { connectRedis } from './redis/redis-target.js';
import type { DocumentStore } from '../store/document-store.js';
import type { ApiConfig } from './config.js';
import { defaultConfig } from './config.js';
import { ApiError, errorHandler } from './errors.js';
import { enterWithoutRouterWalk } from './app-door.js';
import {
  rateLimitLeaseMs,
  rateLimitRenewAheadRemainingShare,
  rateLimitRenewAtShare,
  rateLimitSliceShareOfLimit,
  rateLimitSliceTokensMax,
  rateLimitWindowMs,
  requestBodyBytesMax,
} from './limits.js';
import { assignRequestId } from './request-id.js';
import { requestFieldsSlot } from './request-class.js';
import { answersWithHeaderBlocks, setConstantHeaders, type ConstantHeaders } from './response-class.js';
import { ApiHttpMetrics, routeLabelOf } from './http-metrics.js';
import { expressPathOf, inSequence, routeDispatch, routePathsOf } from './keyed-chain.js';
import { openApiDocument } from './openapi/document.js';
import { openApiValidatorChain } from './openapi/validator.js';
import { docsRoutes } from './docs.js';
import { authenticate } from './auth/authenticate.js';
import { ApiKeyCache } from './auth/key-cache.js';
import { rateLimit } from './rate-limit/middleware.js';
import type { RateLimiter } from './rate-limit/sliding-window.js';
import { FallbackLimiter, LocalSlidingWindowLimiter, RedisSlidingWindowLimiter } from './rate-limit/sliding-window.js';
import { LeasedLimiter } from './rate-limit/leased-limiter.js';
import { keyRoutes } from './routes/keys.js';
import { credentialRoutes } from './routes/credentials.js';
import { projectRoutes } from './routes/projects.js';
import { workRoutes } from './routes/work.js';
import { WorkStatsReader } from './queue/work-stats.js';
import { runRoutes } from './routes/runs.js';
import { albumApi, albumPageRoutes } from './albums/index.js';
import { clusterPageRoutes } from './cluster/cluster-page.js';
import { clusterRoutes } from './cluster/cluster-routes.js';
import type { ClusterSource } from './cluster/cluster-source.js';

/**
 * everyAnswerHeaders are on every answer of the API: no MIME sniffing of a JSON answer, and no cache keeps one (an
 * answer is per key). A constant list: the node's response class writes it as one block (response-class.ts).
 */
const everyAnswerHeaders: ConstantHeaders = [
  ['X-Content-Type-Options', 'nosniff'],
  ['Cache-Control', 'no-store'],
];

/** redisCommandTimeoutMs bounds one Redis command of the request path (rate limit, stats). */
export const redisCommandTimeoutMs = 1000;

export interface RedisSettings {
  url: string;
}

export interface CreateAppOptions {
  store: DocumentStore;
  /** redis enables the cluster-wide rate limit and the queue endpoints; without it they degrade (see README). */
  redis?: RedisSettings;
  config?: Partial<ApiConfig>;
  /** cluster is the node's view of its cluster, for /cluster (a node gives it; without it /cluster answers 404). */
  cluster?: ClusterSource;
}

export interface ApiService {
  app: Express;
  config: ApiConfig;
  /** close releases Redis connections; the HTTP server, if any, is the caller's to close. */
  close(): Promise<void>;
  /**
   * validatorLoaded settles when the OpenAPI validator has loaded its document (a few hundred ms of CPU after the
   * app exists; keyed requests wait for it meanwhile), so a start can put work that can wait after it.
   */
  validatorLoaded: Promise<void>;
}

/**
 * isPublicPath: the paths publicRoutes serves (/health, /ready, /openapi.json, /docs and below), matched as
 * Express matches routes by default (any case, an optional trailing slash).
 */
function isPublicPath(path: string): boolean {
  const lower = path.toLowerCase();
  const trimmed = lower.length > 1 && lower.endsWith('/') ? lower.slice(0, -1) : lower;
  return (
    trimmed === '/health' ||
    trimmed === '/ready' ||
    trimmed === '/openapi.json' ||
    trimmed === '/docs' ||
    lower.startsWith('/docs/')
  );
}

/** validatorOptions are the keyed requests' express-openapi-validator options. */
export function validatorOptions(validateResponses: boolean): Parameters<typeof openApiValidatorChain>[0] {
  return {
    apiSpec: openApiDocument as unknown as Parameters<typeof openApiValidatorChain>[0]['apiSpec'],
    validateRequests: { allowUnknownQueryParameters: false },
    validateResponses,
    validateSecurity: false,
    validateApiSpec: true,
    ignorePaths: /^\/docs(\/|$)/,
  };
}

export function createApp(options: CreateAppOptions): ApiService {
  const config = defaultConfig(options.config);
  const { store } = options;
  const redisClients: Redis[] = [];
  const connect = (autoPipelining = false): Redis => {
    const client = connectRedis(options.redis!.url, {
      maxRetriesPerRequest: 1,
      commandTimeout: redisCommandTimeoutMs,
      lazyConnect: false,
      enableAutoPipelining: autoPipelining,
    });
    // Connection errors surface as failed commands; the 'error' event only needs a listener.
    client.on('error', () => undefined);
    redisClients.push(client);
    return client;
  };

  const { limiter, workStats } = limiting(config, options.redis ? connect : null);

  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.set('query parser', 'simple');
  holdRequestFieldsTogether(app);
  answersWithHeaderBlocks(app);
  // The public routes sit behind one gate, so a keyed request passes them in one step.
  const publicRoutes = publicRouter(config);
  // The album page holds no data (it asks for the key in the browser), so it is public like /docs. Its router
  // sees only GET and HEAD under /album (its routes): a keyed request does not walk it.
  const albumPage = albumPageRoutes();
  // The /cluster page likewise holds no data; it answers only a browser's navigation to /cluster (cluster-page.ts),
  // and every other /cluster request goes on to the keyed chain.
  const clusterPage = clusterPageRoutes();

  const keyCache = new ApiKeyCache(store);
  // The documented routes the keyed routers must declare: all but the public ones and the album page's.
  const pagePaths = new Set(routePathsOf(albumPage));
  const keyedDocumentedPaths = Object.keys(openApiDocument.paths).filter(
    (path) => !isPublicPath(path) && !pagePaths.has(expressPathOf(path)),
  );
  const runs = runRoutes({ store, redisUrl: options.redis?.url, connect, sseKeepAliveMs: config.sseKeepAliveMs });
  const albums = albumApi({ store, redisUrl: options.redis?.url, connect, sseKeepAliveMs: config.sseKeepAliveMs });
  const cluster = clusterRoutes({ cluster: options.cluster, keepAliveMs: config.sseKeepAliveMs });
  // One layer for every keyed request (keyed-chain.ts): authentication, rate limit, JSON body, OpenAPI
  // validation (the library's chain with its route lookup compiled once, openapi/validator.ts), then straight
  // to the routers that declare the route the validator matched.
  const validator = openApiValidatorChain(validatorOptions(config.validateResponses));
  const keyed = inSequence([
    authenticate(store, config.trustedProxies, keyCache),
    rateLimit(limiter, rateLimitWindowMs),
    bodiesOnly(
      express.json({ limit: requestBodyBytesMax, strict: true, type: ['application/json', 'application/*+json'] }),
    ),
    ...validator,
    routeDispatch(
      [
        keyRoutes(store),
        credentialRoutes(store, config.secretKey),
        projectRoutes(store, config.workspaceRoot),
        workRoutes(workStats),
        runs.router,
        albums.router,
        cluster.router,
      ],
      keyedDocumentedPaths,
    ),
  ]);
  // Everything up to the keyed routes is one layer: what every answer carries, then the public routes,
  // the album page, or the keyed chain (each Express layer costs every request, bench/api-cluster.ts).
  const onAnswered = answerObserver(
    config,
    () => ({
      'run-events': runs.openStreams(),
      'album-events': albums.openStreams(),
    }),
    workStats,
  );
  const everyRequest: RequestHandler = (req, res, next) => {
    assignRequestId(req, res);
    if (onAnswered !== null) {
      req.startedMs = performance.now();
      res.on('close', onAnswered);
    }
    setConstantHeaders(res, everyAnswerHeaders);
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      keyed(req, res, next);
      return;
    }
    // Only GET and HEAD reach the public routers: a nested router would answer OPTIONS itself (text/plain).
    // A path they do not answer goes on, as it would through consecutive layers.
    const path = req.path;
    if (isPublicPath(path)) publicRoutes(req, res, new OnToKeyed(req, res, next, keyed).step);
    else if (path.startsWith('/album')) albumPage(req, res, new OnToKeyed(req, res, next, keyed).step);
    else if (path.startsWith('/cluster')) clusterPage(req, res, new OnToKeyed(req, res, next, keyed).step);
    else keyed(req, res, next);
  };
  const notFound: RequestHandler = (_req, _res, next) => {
    next(new ApiError('NOT_FOUND', 'no such route'));
  };
  // The app's three layers are entered without Express's app-level router walk (app-door.ts).
  enterWithoutRouterWalk(app, [everyRequest, notFound, errorHandler(config.log)]);

  return {
    app,
    config,
    validatorLoaded: validator.loaded,
    async close() {
      keyCache.close();
      cluster.close();
      await runs.close();
      await albums.close();
      await workStats?.close();
      await Promise.all(redisClients.map((client) => client.quit().catch(() => client.disconnect())));
    },
  };
}

/**
 * answerObserver is the `close` listener of every response when the API keeps metrics or an access log (null
 * when neither: then a request pays nothing for them). One function for all responses (`this` is the response),
 * not a closure per request. Not pino-http: it makes a child logger and its own request id for every request,
 * whether or not a line is written; ours exist already (request-id.ts) and the child is made on a first line.
 */
function answerObserver(
  config: ApiConfig,
  openStreams: () => Record<string, number>,
  workStats: WorkStatsReader | undefined,
): ((this: Response) => void) | null {
  const metrics =
    config.metricsRegistry === undefined
      ? null
      : new ApiHttpMetrics(config.metricsRegistry, {
          openStreams,
          ...(workStats ? { queueStats: () => workStats.read() } : {}),
        });
  const log = config.accessLog ? config.log : null;
  if (metrics === null && log === null) return null;
  return function onAnswered(this: Response): void {
    const req = this.req;
    const seconds = (performance.now() - req.startedMs!) / 1000;
    metrics?.observe(req, this, seconds);
    // The id is a field of the line rather than a child logger's binding: a child per request costs more.
    log?.info(
      {
        event: 'request',
        requestId: req.requestId,
        method: req.method,
        route: routeLabelOf(req),
        path: req.path,
        status: this.statusCode,
        durationMs: Math.round(seconds * 1000),
        keyId: req.auth?.keyId ?? null,
        ...(this.writableFinished ? {} : { aborted: true }),
      },
      'request',
    );
  };
}

/**
 * requestFieldNames are the fields this API adds to a request: its own (express-types.ts) and the OpenAPI
 * validator's match (`openapi`, openapi/validator.ts and the library's steps).
 */
const requestFieldNames = ['requestId', 'auth', 'readStore', 'log', 'startedMs', 'openapi'] as const;
const requestFields = requestFieldsSlot;

/** RequestFields holds them, every one declared at once so that all requests' holders share one shape. */
class RequestFields {
  requestId: unknown = undefined;
  auth: unknown = undefined;
  readStore: unknown = undefined;
  log: unknown = undefined;
  startedMs: unknown = undefined;
  openapi: unknown = undefined;
}

/**
 * holdRequestFieldsTogether keeps the fields this API adds to a request in one object, behind accessors on this
 * app's own request prototype (app.request: other apps in the process are untouched), so that a request gets one
 * new property instead of six. Each property added to an IncomingMessage after its constructor goes to its
 * out-of-object property store, which V8 grows by copying as it fills: `bench/api-per-request.ts --allocations`
 * counted those copies as most of what authentication, the request id and the front allocated per request.
 * A server made with ApiIncomingMessage (request-class.ts; the node's HTTP port) has the holder's slot from the
 * constructor on, so not even that one property is added.
 */
function holdRequestFieldsTogether(app: Express): void {
  type Holder = Request & { [requestFields]?: RequestFields };
  for (const name of requestFieldNames) {
    Object.defineProperty(app.request, name, {
      configurable: true,
      enumerable: true,
      get(this: Holder): unknown {
        return this[requestFields]?.[name];
      },
      set(this: Holder, value: unknown): void {
        (this[requestFields] ??= new RequestFields())[name] = value;
      },
    });
  }
}

/**
 * OnToKeyed continues a request that a public router (or the album page) did not answer on to the keyed chain, as
 * consecutive Express layers would (no public path starts with /album, so the album page never follows the
 * public routes); an error goes to the error handlers. Made only for public paths (a class, not closures: tsx
 * renames every closure it creates).
 */
class OnToKeyed {
  readonly step: (error?: unknown) => void;

  constructor(
    private readonly req: Request,
    private readonly res: Response,
    private readonly next: NextFunction,
    private readonly keyed: RequestHandler,
  ) {
    this.step = this.onNext.bind(this);
  }

  private onNext(error?: unknown): void {
    if (error !== undefined && error !== null) this.next(error);
    else void this.keyed(this.req, this.res, this.next);
  }
}

/**
 * bodiesOnly runs a body parser only for a request that has a body (body-parser's own test: a
 * Transfer-Encoding or a Content-Length header); for the others it would only note that there is none,
 * at a cost every GET paid.
 */
function bodiesOnly(parser: RequestHandler): RequestHandler {
  return function parseBody(req, res, next) {
    if (req.headers['transfer-encoding'] === undefined && req.headers['content-length'] === undefined) next();
    else void parser(req, res, next);
  };
}

/**
 * limiting builds the rate limiter (leased from the shared window in Redis, falling back to this process's own
 * window while Redis does not answer; this process's alone without Redis) and the queue statistics reader.
 */
function limiting(
  config: ApiConfig,
  connect: ((autoPipelining?: boolean) => Redis) | null,
): { limiter: RateLimiter; workStats: WorkStatsReader | undefined } {
  const localLimiter = new LocalSlidingWindowLimiter(config.rateLimitPerSecond, rateLimitWindowMs);
  let limiter: RateLimiter = localLimiter;
  let workStats: WorkStatsReader | undefined;
  if (connect) {
    let warned = false;
    // Budget is leased from the shared window in small slices (rate-limit/leased-limiter.ts), so most requests
    // are judged here without a Redis round trip. The limiter's own connection pipelines automatically: leases
    // of keys asked together go to Redis in one write. (Not the shared one: BullMQ's queues use that.)
    const shared = new RedisSlidingWindowLimiter(connect(true), config.rateLimitPerSecond, rateLimitWindowMs);
    const leased = new LeasedLimiter(shared, config.rateLimitPerSecond, rateLimitWindowMs, {
      sliceShareOfLimit: rateLimitSliceShareOfLimit,
      sliceTokensMax: rateLimitSliceTokensMax,
      leaseMs: rateLimitLeaseMs,
      renewAtShare: rateLimitRenewAtShare,
      renewAheadRemainingShare: rateLimitRenewAheadRemainingShare,
    });
    limiter = new FallbackLimiter(leased, localLimiter, (error) => {
      if (!warned)
        config.log.warn(
          { event: 'ratelimit.fallback', error: error instanceof Error ? error.message : String(error) },
          'the shared rate limit is unreachable: limiting per process until Redis answers',
        );
      warned = true;
    });
    workStats = new WorkStatsReader(connect(), config.queueNames);
  }

  return { limiter, workStats };
}

/** publicRouter: the routes no key is asked for (health, readiness, the OpenAPI document, /docs). */
function publicRouter(config: ApiConfig): express.Router {
  const publicRoutes = express.Router();
  publicRoutes.get('/health', (_req, res) => {
    res.json({ status: 'ok' });
  });
  publicRoutes.get('/ready', async (_req, res) => {
    let ready: boolean;
    try {
      ready = await config.isReady();
    } catch {
      ready = false;
    }
    if (!ready) throw new ApiError('NOT_READY', 'the service is not ready yet');
    res.json({ status: 'ready' });
  });
  publicRoutes.get('/openapi.json', (_req, res) => {
    res.json(openApiDocument);
  });
  publicRoutes.use(docsRoutes());
  return publicRoutes;
}
