// GET /cluster (JSON) and GET /cluster/events (Server-Sent Events): the node's view of its cluster, for admin
// keys only (role admin, requireRole: the same gate as creating projects or credentials). The view names every
// member's addresses and positions, which a developer key has no need of. The stream is the API's shared SSE
// loop (api/sse/event-stream-response.ts) over the node's feed: event ids are `<epoch>-<seq>`, so Last-Event-ID
// resumes after the last entry seen (an id of another epoch, from before the node restarted, starts over).
import { Router } from 'express';
import type { Response } from 'express';
import { requireRole } from '../auth/authenticate.js';
import { ApiError } from '../errors.js';
import { eventStreamResponse, lastEventIdOf, type StreamEntry } from '../sse/event-stream-response.js';
import type { ClusterSource } from './cluster-source.js';
import { sseReadCountMax } from '../limits.js';
import { clusterStreamsMax } from './limits.js';

export interface ClusterRoutesOptions {
  /** cluster is the node's feed; undefined when the API runs without a node (then 404). */
  cluster: ClusterSource | undefined;
  keepAliveMs: number;
}

export function clusterRoutes(options: ClusterRoutesOptions): { router: Router; close(): void } {
  const router = Router();
  const open = new Set<Response>();
  const source = (): ClusterSource => {
    if (!options.cluster) throw new ApiError('NOT_FOUND', 'this API is not served by a cluster node');
    return options.cluster;
  };

  router.get('/cluster', requireRole('admin'), async (_req, res) => {
    res.json(await source().snapshot());
  });

  router.get('/cluster/events', requireRole('admin'), async (req, res) => {
    const cluster = source();
    const lastEventId = lastEventIdOf(req);
    if (open.size >= clusterStreamsMax) throw new ApiError('RATE_LIMITED', 'too many open /cluster streams');
    const seqAfter = (id: string): number => {
      const [epoch, seq] = id.split('-');
      return Number(epoch) === cluster.epoch ? Number(seq) : 0;
    };
    await eventStreamResponse(req, res, {
      startAfter: lastEventId === null || lastEventId === '0' ? '0-0' : lastEventId,
      keepAliveMs: options.keepAliveMs,
      open,
      listen: (wake) => Promise.resolve(cluster.listen(wake)),
      read: (afterId) =>
        Promise.resolve(
          cluster
            .entriesAfter(seqAfter(afterId), sseReadCountMax)
            .map((entry): StreamEntry => [
              `${cluster.epoch}-${entry.seq}`,
              ['event', entry.event, 'data', JSON.stringify(entry.data)],
            ]),
        ),
    });
  });

  return {
    router,
    close() {
      for (const res of open) res.end();
    },
  };
}
