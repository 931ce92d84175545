// The API's Prometheus families, registered on the registry it is given (a node's, served on its metrics
// listener; the API has no /metrics of its own). Per request: one counter and one histogram update at
// `finish`, with labels from the matched route's pattern (never the raw path, so the series stay bounded).
// Open event streams and queue depths are read at scrape time, so they cost the request path nothing.
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { Request, Response } from 'express';
import type { QueueStats } from './queue/work-stats.js';

/** unroutedLabel is the route of a request no route matched: a 404, or one refused before routing (401, 429). */
export const unroutedLabel = '(unrouted)';

/** httpDurationBucketsSeconds spans a cached GET (sub-millisecond) to a slow proxied write. */
export const httpDurationBucketsSeconds: readonly number[] = [
  0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
];

/** The queue job states reported per queue: what is backed up (waiting, delayed) and what is being worked (active). */
const QUEUE_STATES = ['waiting', 'active', 'delayed'] as const;

export interface ApiMetricsSources {
  /** openStreams is the event streams open now in this process, by stream kind. */
  openStreams(): Record<string, number>;
  /** queueStats reads the BullMQ queues' counts (bounded by its own timeout); absent without Redis. */
  queueStats?: () => Promise<QueueStats[]>;
}

/**
 * ApiHttpMetrics: svc_http_requests_total{method,route,code}, svc_http_request_duration_seconds{method,route},
 * svc_http_sse_streams_open{stream}, svc_queue_jobs{queue,state}, svc_queue_workers{queue}, svc_queue_stats_up.
 */
export class ApiHttpMetrics {
  private readonly requests: Counter<'method' | 'route' | 'code'>;
  private readonly duration: Histogram<'method' | 'route'>;

  constructor(registry: Registry, sources: ApiMetricsSources) {
    const registers = [registry];
    this.requests = new Counter({
      name: 'svc_http_requests_total',
      help: `Developer API answers, by method, route pattern (${unroutedLabel}: no route matched) and status code.`,
      labelNames: ['method', 'route', 'code'],
      registers,
    });
    this.duration = new Histogram({
      name: 'svc_http_request_duration_seconds',
      help: 'Developer API time from the request reaching the API to the last byte of the answer handed to the socket, by method and route pattern (event streams excluded: their duration is the client’s).',
      labelNames: ['method', 'route'],
      buckets: [...httpDurationBucketsSeconds],
      registers,
    });
    new Gauge({
      name: 'svc_http_sse_streams_open',
      help: 'Server-Sent Events streams this process holds open now, by stream (run-events, album-events).',
      labelNames: ['stream'],
      registers,
      collect() {
        for (const [stream, open] of Object.entries(sources.openStreams())) this.set({ stream }, open);
      },
    });
    registerQueueDepths(registers, sources.queueStats);
  }

  /** observe records one finished answer. */
  observe(req: Request, res: Response, seconds: number): void {
    const route = routeLabelOf(req);
    this.requests.inc({ method: req.method, route, code: res.statusCode });
    // A stream's duration is how long its client watched: it would swamp the latency of everything else.
    if (!isEventStream(res)) this.duration.observe({ method: req.method, route }, seconds);
  }
}

/**
 * routeLabelOf is the route pattern that answered: the OpenAPI validator's match for keyed routes (the Express
 * form, `/projects/:id`), else the Express route of a public route or page, else unroutedLabel. Our routers are
 * called directly (never mounted under a path), so the route's own path is the whole pattern.
 */
export function routeLabelOf(req: Request): string {
  const matched = (req as Request & { openapi?: { expressRoute?: string } }).openapi?.expressRoute;
  if (typeof matched === 'string') return matched;
  const path = (req.route as { path?: unknown } | undefined)?.path;
  return typeof path === 'string' ? path : unroutedLabel;
}

function isEventStream(res: Response): boolean {
  const type = res.getHeader('content-type');
  return typeof type === 'string' && type.startsWith('text/event-stream');
}

/**
 * registerQueueDepths reads the queues at scrape time, once per scrape for its three families (a scrape asks
 * every family at once: the first to ask starts the read, the others share it); a Redis that does not answer in
 * time sets svc_queue_stats_up 0 and leaves the others without series rather than failing the whole scrape.
 */
function registerQueueDepths(registers: Registry[], read: ApiMetricsSources['queueStats']): void {
  if (read === undefined) return;
  let pending: Promise<QueueStats[] | null> | null = null;
  const statsOfThisScrape = (): Promise<QueueStats[] | null> => {
    pending ??= read()
      .catch(() => null)
      .finally(() => {
        pending = null;
      });
    return pending;
  };
  new Gauge({
    name: 'svc_queue_stats_up',
    help: '1 when the last scrape read the BullMQ queue counts from Redis, 0 when Redis did not answer in time.',
    registers,
    async collect() {
      this.set((await statsOfThisScrape()) === null ? 0 : 1);
    },
  });
  new Gauge({
    name: 'svc_queue_jobs',
    help: 'BullMQ jobs per queue and state (waiting, active, delayed; cluster-wide: every node reads the same Redis).',
    labelNames: ['queue', 'state'],
    registers,
    async collect() {
      const stats = await statsOfThisScrape();
      this.reset();
      for (const queue of stats ?? [])
        for (const state of QUEUE_STATES) this.set({ queue: queue.name, state }, queue[state]);
    },
  });
  new Gauge({
    name: 'svc_queue_workers',
    help: 'Workers attached to each BullMQ queue (cluster-wide: every node reads the same Redis).',
    labelNames: ['queue'],
    registers,
    async collect() {
      const stats = await statsOfThisScrape();
      this.reset();
      for (const queue of stats ?? []) this.set({ queue: queue.name }, queue.workers);
    },
  });
}
