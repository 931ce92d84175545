// An agent run's record (owner, status, times, exit code) is a document in the replicated store (`runs/<id>`),
// so a node's loss or a Redis flush loses no run's record; every status change is a compare-and-set. Its
// events are a Redis stream per run (read by SSE with the stream entry id as the SSE event id), beside the
// queue; the stream expires runRetentionSeconds after the end.
import type { Redis } from 'ioredis';
import type { DocumentStore } from '../../store/document-store.js';
import { isVersionConflict } from '../../store/document-store.js';
import { storeKeys } from '../records.js';
import { updateRecord } from '../store-helpers.js';
import { runCompleteRepairGraceMs, runEventsMax, runRetentionSeconds } from '../limits.js';
import type { SandboxStatement } from './run-isolation.js';

export const runKeys = {
  events: (runId: string) => `svc:run:${runId}:events`,
  cancelChannel: 'svc:run-cancel',
  /** waitingNoted marks a run whose stream already says it waits for its workspace (one notice per run). */
  waitingNoted: (runId: string) => `svc:run:${runId}:waiting-noted`,
  /** eventsChannel carries the run id of every appended event, to wake open event streams (run-event-hub.ts). */
  eventsChannel: 'svc:run-events',
} as const;

/** runIdPattern is the form of every run id the API makes (and so of every job id a worker takes). */
export const runIdPattern = /^run_[0-9a-z]{9}[0-9a-f]{16}$/;

export type RunStatus = 'queued' | 'running' | 'succeeded' | 'failed' | 'cancelled' | 'timed_out';
export const finalRunStatuses: readonly RunStatus[] = ['succeeded', 'failed', 'cancelled', 'timed_out'];

/** InjectedCredential names one credential handed to a run (never its value). */
export interface InjectedCredential {
  category: string;
  name: string;
  as: 'env' | 'file';
  /** target is the environment variable or the file's path in the sandbox. */
  target: string;
}

export type RunEvent =
  | { event: 'queued'; data: { runId: string; projectId: string } }
  | { event: 'started'; data: { startedAt: string; sandbox?: SandboxStatement } }
  | { event: 'credentials'; data: { injected: InjectedCredential[] } }
  | { event: 'output'; data: { stream: 'stdout' | 'stderr'; text: string } }
  | { event: 'notice'; data: { message: string; code?: string } }
  | { event: 'complete'; data: { status: RunStatus; exitCode: number | null; durationMs: number } };

export interface RunRecord {
  [key: string]: string | number | boolean | null;
  id: string;
  project_id: string;
  user_id: string;
  status: RunStatus;
  created_at: string;
  started_at: string | null;
  finished_at: string | null;
  exit_code: number | null;
  duration_ms: number | null;
  /** cancel_requested closes the race between a cancel and a worker taking the job (routes/runs.ts). */
  cancel_requested: boolean;
  /**
   * prompt is what the run was asked: the worker reads it here, with the project, never from the queued job
   * (which carries ids only). Records made before it was kept here lack it (a worker refuses those runs).
   */
  prompt: string | null;
}

/** runView is the documented Run: the record without its internal cancel flag and prompt. */
export function runView(record: RunRecord): Omit<RunRecord, 'cancel_requested' | 'prompt'> {
  const { cancel_requested: _flag, prompt: _prompt, ...view } = record;
  return view;
}

/**
 * appendRunEvent adds the event to the run's stream and, in the same transaction, names the run on
 * eventsChannel so that open event streams on any API process read it at once.
 */
export async function appendRunEvent(redis: Redis, runId: string, event: RunEvent): Promise<string> {
  const results = await redis
    .multi()
    .xadd(
      runKeys.events(runId),
      'MAXLEN',
      '~',
      String(runEventsMax),
      '*',
      'event',
      event.event,
      'data',
      JSON.stringify(event.data),
    )
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

export async function readRun(store: DocumentStore, runId: string): Promise<RunRecord | null> {
  return (await store.get<RunRecord>(storeKeys.run(runId)))?.value ?? null;
}

/** updateRun changes the run's record by compare-and-set (retried; see updateRecord) and returns the result. */
export function updateRun(
  store: DocumentStore,
  runId: string,
  mutate: (current: RunRecord) => RunRecord,
): Promise<RunRecord> {
  return updateRecord<RunRecord>(store, storeKeys.run(runId), mutate);
}

/** completeEvent is the `complete` event of a final record: it says what the record says. */
function completeEvent(record: RunRecord): RunEvent {
  return {
    event: 'complete',
    data: { status: record.status, exitCode: record.exit_code, durationMs: record.duration_ms ?? 0 },
  };
}

/**
 * finishRun records the final status (once: a run already final keeps its status), then writes the `complete`
 * event, so that a client that saw `complete` reads the final record; the event stream's retention starts. The
 * event says what the record says: when another party finished the run first (a worker that found it lost, the
 * sweep), its status stands and no second `complete` is appended if the stream already ends with one.
 */
export async function finishRun(
  store: DocumentStore,
  redis: Redis,
  runId: string,
  status: RunStatus,
  exitCode: number | null,
  durationMs: number,
): Promise<RunRecord> {
  let finishedHere = false;
  const record = await updateRun(store, runId, (current) => {
    finishedHere = !finalRunStatuses.includes(current.status);
    return finishedHere
      ? {
          ...current,
          status,
          finished_at: new Date().toISOString(),
          exit_code: exitCode,
          duration_ms: durationMs,
        }
      : current;
  });
  if (finishedHere || !(await isRunStreamFinished(redis, runId)))
    await appendRunEvent(redis, runId, completeEvent(record));
  await redis.expire(runKeys.events(runId), runRetentionSeconds);
  return record;
}

/**
 * ensureCompleteEvent appends `complete` to the stream of a final run that lacks it. The store's record is the
 * truth and the stream a copy in Redis, which replicates asynchronously: a primary that fails over can take the
 * last events with it, and a client would wait on a stream that never ends. An open event stream calls this
 * when it goes quiet. A run finished less than runCompleteRepairGraceMs ago is left to its finisher, which
 * appends `complete` right after the record (no second one).
 */
export async function ensureCompleteEvent(store: DocumentStore, redis: Redis, runId: string): Promise<void> {
  const record = await readRun(store, runId);
  if (!record || !finalRunStatuses.includes(record.status)) return;
  const finishedMs = record.finished_at === null ? NaN : Date.parse(record.finished_at);
  if (!(Date.now() - finishedMs >= runCompleteRepairGraceMs)) return;
  if (await isRunStreamFinished(redis, runId)) return;
  await appendRunEvent(redis, runId, completeEvent(record));
}

/** workerLostCode is the `notice` code of a run whose worker stopped mid-run (finishLostRun). */
export const workerLostCode = 'WORKER_LOST';

/**
 * finishLostRun ends a run that is still `running` although the worker that started it lost it (the worker
 * died, or lost its BullMQ lock): `failed` with a WORKER_LOST notice, then `complete`. It is never run again:
 * an agent run has side effects beyond the store (a git push, a message sent), so running it twice could do
 * them twice; at most once is the safe default, and the client can start a new run. With `read` (the record as
 * the sweep read it) the change is a compare-and-set on that version, so a worker that finished it meanwhile wins;
 * without it, any `running` record is taken. A live worker still running it hears a cancel and stops it.
 * Resolves true when this call finished the run.
 */
export async function finishLostRun(
  store: DocumentStore,
  redis: Redis,
  runId: string,
  read?: { record: RunRecord; version: number },
): Promise<boolean> {
  const lost = (current: RunRecord): RunRecord => {
    const startedMs = current.started_at === null ? NaN : Date.parse(current.started_at);
    const nowMs = Date.now();
    return {
      ...current,
      status: 'failed',
      finished_at: new Date(nowMs).toISOString(),
      exit_code: null,
      duration_ms: Number.isFinite(startedMs) ? Math.max(0, nowMs - startedMs) : 0,
    };
  };
  let record: RunRecord | null = null;
  if (read === undefined) {
    await updateRun(store, runId, (current) => {
      record = current.status === 'running' ? lost(current) : null;
      return record ?? current;
    });
  } else {
    if (read.record.status !== 'running') return false;
    const failed = lost(read.record);
    try {
      await store.put(storeKeys.run(runId), failed, { expectedVersion: read.version });
      record = failed;
    } catch (error) {
      if (isVersionConflict(error)) return false;
      throw error;
    }
  }
  if (record === null) return false;
  const message =
    "the worker running this run stopped before it ended; the run's processes stopped with it and it is not run " +
    'again (a run may have side effects, such as a git push): start a new run';
  await appendRunEvent(redis, runId, { event: 'notice', data: { message, code: workerLostCode } });
  await appendRunEvent(redis, runId, completeEvent(record));
  await redis.expire(runKeys.events(runId), runRetentionSeconds);
  await redis.publish(runKeys.cancelChannel, runId);
  return true;
}
