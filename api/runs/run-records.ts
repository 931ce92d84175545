// Agent runs live in Redis, beside their queue: a hash per run (status, owner) and a stream per run (events,
// read by SSE with the stream entry id as the SSE event id). Both expire runRetentionSeconds after the end.
import type { Redis } from 'ioredis';
import { runEventsMax, runRetentionSeconds } from '../limits.js';

export const runKeys = {
  run: (runId: string) => `svc:run:${runId}`,
  events: (runId: string) => `svc:run:${runId}:events`,
  cancelChannel: 'svc:run-cancel',
  /** eventsChannel carries the run id of every appended event, to wake open event streams (run-event-hub.ts). */
  eventsChannel: 'svc:run-events',
} as const;

export type RunStatus = 'queued' | 'running' | 'succeeded' | 'failed' | 'cancelled' | 'timed_out';
export const finalRunStatuses: readonly RunStatus[] = ['succeeded', 'failed', 'cancelled', 'timed_out'];

export type RunEvent =
  | { event: 'queued'; data: { runId: string; projectId: string } }
  | { event: 'started'; data: { startedAt: string } }
  | { event: 'output'; data: { stream: 'stdout' | 'stderr'; text: string } }
  | { event: 'notice'; data: { message: string } }
  | { event: 'complete'; data: { status: RunStatus; exitCode: number | null; durationMs: number } };

export interface RunRecord {
  id: string;
  project_id: string;
  user_id: string;
  status: RunStatus;
  created_at: string;
  started_at: string | null;
  finished_at: string | null;
  exit_code: number | null;
  duration_ms: number | null;
}

/**
 * appendRunEvent adds the event to the run's stream and, in the same transaction, names the run on
 * eventsChannel so that open event streams on any API process read it at once.
 */
export async function appendRunEvent(redis: Redis, runId: string, event: RunEvent): Promise<string> {
  const results = await redis.multi()
    .xadd(runKeys.events(runId), 'MAXLEN', '~', String(runEventsMax), '*', 'event', event.event, 'data', JSON.stringify(event.data))
    .publish(runKeys.eventsChannel, runId)
    .exec();
  const [failure, id] = results?.[0] ?? [new Error('the event append was discarded'), null];
  if (failure) throw failure;
  return id as string;
}

/** isRunStreamFinished says whether the stream's newest event is `complete` (nothing more will be appended). */
export async function isRunStreamFinished(redis: Redis, runId: string): Promise<boolean> {
  const newest = await redis.xrevrange(runKeys.events(runId), '+', '-', 'COUNT', 1);
  const fields = newest[0]?.[1];
  return fields !== undefined && fields[fields.indexOf('event') + 1] === 'complete';
}

export async function readRun(redis: Redis, runId: string): Promise<RunRecord | null> {
  const fields = await redis.hgetall(runKeys.run(runId));
  if (!fields.id) return null;
  const numberOrNull = (text: string | undefined) => (text === undefined || text === '' ? null : Number(text));
  return {
    id: fields.id, project_id: fields.project_id ?? '', user_id: fields.user_id ?? '',
    status: (fields.status ?? 'queued') as RunStatus, created_at: fields.created_at ?? '',
    started_at: fields.started_at || null, finished_at: fields.finished_at || null,
    exit_code: numberOrNull(fields.exit_code), duration_ms: numberOrNull(fields.duration_ms),
  };
}

/** finishRun records the final status, writes the `complete` event and starts the retention clock. */
export async function finishRun(redis: Redis, runId: string, status: RunStatus, exitCode: number | null,
  durationMs: number): Promise<void> {
  await redis.hset(runKeys.run(runId), {
    status, finished_at: new Date().toISOString(), exit_code: exitCode === null ? '' : String(exitCode),
    duration_ms: String(durationMs),
  });
  await appendRunEvent(redis, runId, { event: 'complete', data: { status, exitCode, durationMs } });
  await redis.expire(runKeys.run(runId), runRetentionSeconds);
  await redis.expire(runKeys.events(runId), runRetentionSeconds);
}
