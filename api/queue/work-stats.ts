// Work-queue statistics straight from BullMQ: job counts by state and the workers attached to each queue.
import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { ApiError } from '../errors.js';
import { queueStatsTimeoutMs } from '../limits.js';

export interface QueueStats {
  name: string;
  waiting: number;
  active: number;
  completed: number;
  failed: number;
  delayed: number;
  workers: number;
}

function withTimeout<T>(promise: Promise<T>, timeoutMs: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(
      () => reject(new ApiError('QUEUE_UNAVAILABLE', 'the queue store did not answer in time')),
      timeoutMs,
    );
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

export class WorkStatsReader {
  private readonly queues: Queue[];

  constructor(connection: Redis, queueNames: readonly string[]) {
    this.queues = queueNames.map((name) => new Queue(name, { connection }));
    // A Queue emits 'error' when Redis drops; /work/stats reports that as 503, so nothing else must crash.
    for (const queue of this.queues) queue.on('error', () => undefined);
  }

  async read(): Promise<QueueStats[]> {
    const read = Promise.all(
      this.queues.map(async (queue) => {
        const [counts, workers] = await Promise.all([
          queue.getJobCounts('waiting', 'active', 'completed', 'failed', 'delayed'),
          queue.getWorkers(),
        ]);
        return {
          name: queue.name,
          waiting: counts.waiting ?? 0,
          active: counts.active ?? 0,
          completed: counts.completed ?? 0,
          failed: counts.failed ?? 0,
          delayed: counts.delayed ?? 0,
          workers: workers.length,
        };
      }),
    );
    try {
      return await withTimeout(read, queueStatsTimeoutMs);
    } catch (error) {
      if (error instanceof ApiError) throw error;
      throw new ApiError('QUEUE_UNAVAILABLE', 'the queue store is unavailable');
    }
  }

  async close(): Promise<void> {
    await Promise.all(this.queues.map((queue) => queue.close()));
  }
}
