// Agent command runs: POST /projects/{id}/commands queues a run and answers 202 {runId, streamUrl};
// GET /runs/{id}/events is the SSE stream (event ids are Redis stream ids, so Last-Event-ID resumes exactly;
// resuming after `complete` ends the response at once);
// POST /runs/{id}/cancel stops it. A run is visible to the user who started it and to admins.
import { Router } from 'express';
import type { Request, Response } from 'express';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import type { DocumentStore } from '../../store/document-store.js';
import { ApiError } from '../errors.js';
import type { ProjectRecord } from '../records.js';
import { newId, storeKeys } from '../records.js';
import { agentRunQueueName } from '../config.js';
import { sseReadCountMax, sseStreamsMax } from '../limits.js';
import { eventStreamResponse, lastEventIdOf } from '../sse/event-stream-response.js';
import type { AgentRunJob } from '../runs/agent-worker.js';
import type { RunRecord } from '../runs/run-records.js';
import {
  appendRunEvent,
  finishRun,
  ensureCompleteEvent,
  isRunStreamFinished,
  readRun,
  runKeys,
  runView,
  updateRun,
} from '../runs/run-records.js';
import { RunEventHub } from '../runs/run-event-hub.js';
import { awaitReplicated } from '../redis/redis-target.js';

export interface RunRoutesOptions {
  store: DocumentStore;
  redisUrl: string | undefined;
  /** connect makes the short-command Redis client (with a command timeout) for this router. */
  connect: () => Redis;
  sseKeepAliveMs: number;
}

export interface RunRoutes {
  router: Router;
  /** openStreams is the run event streams open now (svc_http_sse_streams_open). */
  openStreams(): number;
  close(): Promise<void>;
}

export function runRoutes(options: RunRoutesOptions): RunRoutes {
  const router = Router();
  const { store, redisUrl } = options;
  const redis = redisUrl ? options.connect() : undefined;
  const queue = redisUrl ? new Queue<AgentRunJob>(agentRunQueueName, { connection: redis! }) : undefined;
  queue?.on('error', () => undefined);
  // One subscriber connection wakes every open event stream of this process (run-event-hub.ts).
  const hub = redisUrl ? new RunEventHub(redisUrl) : undefined;
  const openStreams = new Set<Response>();
  // Streams of one run woken together read from the same position: they share one XRANGE while it runs. A
  // stream only joins a read issued since the last notification: an event appended after an older read was
  // issued would be missing from it, and its notification could have come before the stream reset its flag.
  const readsInFlight = new Map<string, Promise<Array<[string, string[]]>>>();
  const readEventsAfter = (client: Redis, runId: string, afterId: string): Promise<Array<[string, string[]]>> => {
    const readKey = `${runId} ${afterId} ${hub!.notificationCount}`;
    let read = readsInFlight.get(readKey);
    if (!read) {
      read = client.xrange(runKeys.events(runId), `(${afterId}`, '+', 'COUNT', sseReadCountMax);
      readsInFlight.set(readKey, read);
      const forget = () => {
        readsInFlight.delete(readKey);
      };
      read.then(forget, forget);
    }
    return read;
  };

  const requireRedis = (): Redis => {
    if (!redis) throw new ApiError('QUEUE_UNAVAILABLE', 'no Redis is configured: set REDIS_URL');
    return redis;
  };
  const unavailable = (error: unknown): never => {
    if (error instanceof ApiError) throw error;
    throw new ApiError('QUEUE_UNAVAILABLE', 'the queue store is unavailable');
  };
  const visibleRun = async (req: Request): Promise<RunRecord> => {
    const run = await readRun(req.readStore ?? store, req.params.id as string);
    const auth = req.auth!;
    if (!run || (auth.role !== 'admin' && run.user_id !== auth.userId)) throw new ApiError('NOT_FOUND', 'no such run');
    return run;
  };

  router.post('/projects/:id/commands', async (req, res) => {
    const client = requireRedis();
    const found = await store.get<ProjectRecord>(storeKeys.project(req.params.id as string));
    if (!found) throw new ApiError('NOT_FOUND', 'no such project');
    const project = found.value;
    const runId = newId('run');
    const record: RunRecord = {
      id: runId,
      project_id: project.id,
      user_id: req.auth!.userId,
      status: 'queued',
      created_at: new Date().toISOString(),
      started_at: null,
      finished_at: null,
      exit_code: null,
      duration_ms: null,
      cancel_requested: false,
      prompt: (req.body as { prompt: string }).prompt,
    };
    // The record is committed before the job exists, so a worker on any node finds it.
    await store.put(storeKeys.run(runId), record, { expectedVersion: 0 });
    try {
      await appendRunEvent(client, runId, { event: 'queued', data: { runId, projectId: project.id } });
      // Ids only: the worker reads the project, its command and policy, and the prompt from the replicated
      // store, so whoever can write to Redis cannot change what runs or where.
      const job: AgentRunJob = { runId, projectId: project.id };
      await queue!.add('run', job, {
        jobId: runId,
        attempts: 1,
        removeOnComplete: { count: 1000 },
        removeOnFail: { count: 1000 },
      });
      // Acknowledged only once enough replicas hold the job, so a Redis failover cannot take back a 202.
      await awaitReplicated(client, redisUrl!);
    } catch (error) {
      // Not queued: the record must not stay `queued` forever.
      await updateRun(store, runId, (current) => ({
        ...current,
        status: 'failed',
        finished_at: new Date().toISOString(),
      })).catch(() => undefined);
      unavailable(error);
    }
    res.status(202).json({ runId, streamUrl: `/runs/${runId}/events` });
  });

  router.get('/runs/:id', async (req, res) => {
    res.json(runView(await visibleRun(req)));
  });

  router.post('/runs/:id/cancel', async (req, res) => {
    const client = requireRedis();
    const run = await visibleRun(req);
    if (run.status === 'queued' || run.status === 'running') {
      const flagged = await updateRun(store, run.id, (current) => ({ ...current, cancel_requested: true }));
      // A job no worker has taken yet is removed here and completed as cancelled; a running one is stopped
      // by its worker, which hears the channel (or sees the flag when it takes the job).
      const removed = flagged.status === 'queued' ? await queue!.remove(run.id).catch(() => 0) : 0;
      try {
        if (removed === 1) await finishRun(store, client, run.id, 'cancelled', null, 0);
        else await client.publish(runKeys.cancelChannel, run.id);
      } catch (error) {
        unavailable(error);
      }
    }
    res.status(202).json(runView((await readRun(store, run.id))!));
  });

  router.get('/runs/:id/events', async (req, res) => {
    const run = await visibleRun(req);
    const lastEventId = lastEventIdOf(req) ?? '0';
    if (openStreams.size >= sseStreamsMax) throw new ApiError('QUEUE_UNAVAILABLE', 'too many open event streams');
    const client = requireRedis();
    // Reads share the router's command connection; resumed at or after `complete`, the response ends at once.
    await eventStreamResponse(req, res, {
      startAfter: lastEventId === '0' ? '0-0' : lastEventId,
      keepAliveMs: options.sseKeepAliveMs,
      open: openStreams,
      listen: (wake) => hub!.listen(run.id, wake),
      read: (afterId) => readEventsAfter(client, run.id, afterId),
      finalEvent: 'complete',
      isFinished: () => isRunStreamFinished(client, run.id),
      onQuiet: () => ensureCompleteEvent(store, client, run.id),
    });
  });

  return {
    router,
    openStreams: () => openStreams.size,
    async close() {
      for (const stream of openStreams) stream.end();
      hub?.close();
      await queue?.close();
    },
  };
}
