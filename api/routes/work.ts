import { Router } from 'express';
import { ApiError } from '../errors.js';
import type { WorkStatsReader } from '../queue/work-stats.js';

export function workRoutes(stats: WorkStatsReader | undefined): Router {
  const router = Router();
  router.get('/work/stats', async (_req, res) => {
    if (!stats) throw new ApiError('QUEUE_UNAVAILABLE', 'no Redis is configured: set REDIS_URL');
    res.json({ queues: await stats.read() });
  });
  return router;
}
