// The sweeps an agent-run worker process takes part in: the records of runs past their retention and the runs
// left `running` whose job no worker holds (run-sweep.ts), and what a backend's runs left where they ran
// (kubernetes-sweep.ts). Each runs on one worker process of the cluster at a time (a Redis lock per interval).
import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import type { ApiLogger } from '../config.js';
import { agentRunQueueName } from '../config.js';
import { runKubernetesSweepIntervalMs } from '../limits.js';
import { startLockedInterval, type LockedInterval } from '../redis/locked-interval.js';
import { readRun } from './run-records.js';
import { startRunSweeper } from './run-sweep.js';
import type { AgentRunJob, AgentWorkerOptions } from './agent-worker-options.js';

/** leftoverSweepLockKey is the Redis lock of the backend leftover sweep (one worker process per interval). */
const leftoverSweepLockKey = 'svc:run-backend-leftover-sweep';

export interface WorkerSweeps {
  /** stop ends the intervals and waits for the leftover sweep made as the worker started. */
  stop(): Promise<void>;
  /** closeQueue closes the queue the run sweep asks for job states (after the worker has stopped). */
  closeQueue(): Promise<void>;
}

export function startWorkerSweeps(options: AgentWorkerOptions, log: ApiLogger, redis: Redis): WorkerSweeps {
  const queue = new Queue<AgentRunJob>(agentRunQueueName, { connection: redis });
  queue.on('error', () => undefined);
  const sweeper = startRunSweeper(
    redis,
    options.store,
    (error) => options.onSweepError?.(error),
    options.runSweepIntervalMs,
    (runId) => queue.getJobState(runId),
  );
  const leftovers = startLeftoverSweeps(options, log, redis);
  return {
    async stop() {
      sweeper.stop();
      leftovers.sweeper?.stop();
      await leftovers.first;
    },
    closeQueue: () => queue.close(),
  };
}

/**
 * startLeftoverSweeps sweeps what a backend's runs left where they ran when a worker died (kubernetes-sweep.ts:
 * unowned Secrets, Jobs of ended runs): once as this worker starts, since a restarted worker is the usual sign of
 * one that died, then on one worker process of the cluster at a time. Names are logged, never contents.
 */
function startLeftoverSweeps(
  options: AgentWorkerOptions,
  log: ApiLogger,
  redis: Redis,
): { first: Promise<void>; sweeper: LockedInterval | null } {
  const backend = options.backend;
  if (!backend?.sweepLeftovers) return { first: Promise.resolve(), sweeper: null };
  const sweepLeftovers = async () => {
    const outcome = await backend.sweepLeftovers!(
      async (runId) => (await readRun(options.store, runId))?.status ?? null,
      Date.now(),
      {
        onDeleted: (deletion) =>
          log.info(
            { event: 'runs.backend_leftover_deleted', backend: backend.name, ...deletion },
            'deleted a leftover of a finished run',
          ),
      },
    );
    if (outcome.secretsDeleted + outcome.jobsDeleted + outcome.conflicts > 0)
      log.info({ event: 'runs.backend_leftover_sweep', backend: backend.name, ...outcome }, 'swept leftovers of runs');
  };
  const first = sweepLeftovers().catch((error: unknown) => options.onSweepError?.(error));
  const sweeper = startLockedInterval(
    redis,
    leftoverSweepLockKey,
    options.backendSweepIntervalMs ?? runKubernetesSweepIntervalMs,
    sweepLeftovers,
    (error) => options.onSweepError?.(error),
  );
  return { first, sweeper };
}
