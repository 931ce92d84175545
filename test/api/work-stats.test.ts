import assert from 'node:assert/strict';
import { Queue, Worker } from 'bullmq';
import { agentRunQueueName } from '../../api/config.js';
import { startTestApi, startTestRedis, useApiOnRedis, waitFor } from './harness.js';

interface QueueStats {
  name: string;
  waiting: number;
  active: number;
  completed: number;
  failed: number;
  delayed: number;
  workers: number;
}

describe('api: GET /work/stats with real BullMQ queues', function () {
  this.timeout(30_000);
  const setup = useApiOnRedis();

  const stats = async (): Promise<QueueStats> => {
    const result = await setup.api.call('GET', '/work/stats');
    assert.equal(result.status, 200, result.text);
    return (result.json.queues as QueueStats[]).find((queue) => queue.name === agentRunQueueName)!;
  };

  it('moves the counts as jobs are added, run, finished, failed and delayed', async () => {
    const connection = {
      host: '127.0.0.1',
      port: setup.redis.port,
      password: decodeURIComponent(new URL(setup.redis.url).password),
    };
    const queue = new Queue(agentRunQueueName, { connection });
    try {
      assert.deepEqual(await stats(), {
        name: agentRunQueueName,
        waiting: 0,
        active: 0,
        completed: 0,
        failed: 0,
        delayed: 0,
        workers: 0,
      });
      await queue.add('ok', { n: 1 });
      await queue.add('ok', { n: 2 });
      await queue.add('boom', { n: 3 });
      await queue.add('later', { n: 4 }, { delay: 60_000 });
      const queued = await stats();
      assert.equal(queued.waiting, 3);
      assert.equal(queued.delayed, 1);

      let release!: () => void;
      const gate = new Promise<void>((resolve) => {
        release = resolve;
      });
      const worker = new Worker(
        agentRunQueueName,
        async (job) => {
          await gate;
          if (job.name === 'boom') throw new Error('planned failure');
        },
        { connection, concurrency: 5 },
      );
      try {
        const running = await waitFor(stats, (current) => current.active === 3 && current.workers === 1);
        assert.equal(running.waiting, 0);
        release();
        const done = await waitFor(stats, (current) => current.completed === 2 && current.failed === 1);
        assert.deepEqual([done.active, done.waiting, done.delayed], [0, 0, 1]);
      } finally {
        await worker.close();
      }
      await waitFor(stats, (current) => current.workers === 0);
    } finally {
      await queue.obliterate({ force: true });
      await queue.close();
    }
  });

  it('answers 503 QUEUE_UNAVAILABLE when Redis goes away, and the rest keeps working', async () => {
    const doomedRedis = await startTestRedis();
    const doomed = await startTestApi({ redisUrl: doomedRedis.url });
    try {
      assert.equal((await doomed.call('GET', '/work/stats')).status, 200);
      await doomedRedis.stop();
      const result = await doomed.call('GET', '/work/stats');
      assert.equal(result.status, 503);
      assert.equal(result.json.code, 'QUEUE_UNAVAILABLE');
      // The rate limiter falls back to the per-process window; other routes stay up.
      assert.equal((await doomed.call('GET', '/projects')).status, 200);
    } finally {
      await doomed.close();
    }
  });
});

describe('api: GET /work/stats without Redis', () => {
  it('answers 503 QUEUE_UNAVAILABLE while the rest works', async () => {
    const api = await startTestApi();
    try {
      const result = await api.call('GET', '/work/stats');
      assert.equal(result.status, 503);
      assert.equal(result.json.code, 'QUEUE_UNAVAILABLE');
      assert.equal((await api.call('GET', '/projects')).status, 200);
    } finally {
      await api.close();
    }
  });
});
