// Run records (runs/<id> in the replicated store) would otherwise grow without end: a run's event stream in
// Redis expires runRetentionSeconds after the run ends, and its record goes the same way here. A sweep lists
// every run and deletes each one that ended (a final status) more than the retention ago, by compare-and-set
// on the version it read, so a record that changed meanwhile is left for the next sweep. Queued and running
// runs are never swept. startRunSweeper runs it on one worker process of the cluster at a time.
//
// The same sweep finishes runs a worker lost (sweepLostRuns): a run still `running` whose BullMQ job is no longer
// active (completed or failed without the record saying so, failed by BullMQ after stalling more than its
// maxStalledCount, or gone from the queue) has no worker that will ever finish it. It ends `failed` with a
// WORKER_LOST notice, by compare-and-set on the version read before the job's state was asked, so a worker that
// finished it meanwhile wins (a worker finishes the record before BullMQ completes the job). A job that is
// active (its lock held by a live worker, or expired and about to be handed back by BullMQ's stalled check),
// waiting or delayed is left alone: a slow run keeps its lock, and a handed-back one is finished by the worker
// that takes it (agent-worker.ts).
import type { Redis } from 'ioredis';
import type { DocumentStore } from '../../store/document-store.js';
import { isVersionConflict } from '../../store/document-store.js';
import { storeKeys } from '../records.js';
import { runRetentionSeconds, runSweepIntervalMs, runSweepPageEntriesMax } from '../limits.js';
import { startLockedInterval, type LockedInterval } from '../redis/locked-interval.js';
import { finalRunStatuses, finishLostRun, type RunRecord } from './run-records.js';

const sweepLockKey = 'svc:run-record-sweep';

export interface RunSweepOutcome {
  /** examined counts the run records read. */
  examined: number;
  deleted: number;
}

/** sweepRunRecords deletes the runs that ended before nowMs - retentionMs. */
export async function sweepRunRecords(
  store: DocumentStore,
  nowMs: number,
  retentionMs = runRetentionSeconds * 1000,
  pageEntriesMax = runSweepPageEntriesMax,
): Promise<RunSweepOutcome> {
  const outcome: RunSweepOutcome = { examined: 0, deleted: 0 };
  let after: string | undefined;
  for (;;) {
    const page = await store.list<RunRecord>(storeKeys.runs, { after, limit: pageEntriesMax });
    for (const { key, value: run, version } of page.entries) {
      outcome.examined++;
      if (!expired(run, nowMs, retentionMs)) continue;
      try {
        if ((await store.delete(key, { expectedVersion: version })).deleted) outcome.deleted++;
      } catch (error) {
        if (!isVersionConflict(error)) throw error;
      }
    }
    if (page.nextAfter === null || page.entries.length === 0) return outcome;
    after = page.nextAfter;
  }
}

function expired(run: RunRecord, nowMs: number, retentionMs: number): boolean {
  if (!finalRunStatuses.includes(run.status) || run.finished_at === null) return false;
  const finishedMs = Date.parse(run.finished_at);
  return Number.isFinite(finishedMs) && finishedMs + retentionMs <= nowMs;
}

/** JobStateLookup answers a run's BullMQ job state (Queue.getJobState: 'unknown' when the job is gone). */
export type JobStateLookup = (runId: string) => Promise<string>;

/** jobStatesWithoutWorker are the job states in which no worker holds the job nor will take it again. */
const jobStatesWithoutWorker: readonly string[] = ['completed', 'failed', 'unknown'];

export interface LostRunSweepOutcome {
  /** running counts the `running` records examined. */
  running: number;
  finished: number;
}

/** sweepLostRuns finishes the `running` runs whose job no worker holds or will take (failed, WORKER_LOST). */
export async function sweepLostRuns(
  store: DocumentStore,
  redis: Redis,
  jobStateOf: JobStateLookup,
  pageEntriesMax = runSweepPageEntriesMax,
): Promise<LostRunSweepOutcome> {
  const outcome: LostRunSweepOutcome = { running: 0, finished: 0 };
  let after: string | undefined;
  for (;;) {
    const page = await store.list<RunRecord>(storeKeys.runs, { after, limit: pageEntriesMax });
    for (const { value: run, version } of page.entries) {
      if (run.status !== 'running') continue;
      outcome.running++;
      // Read after the record: a job that completes now was finished in the store first, so the set below loses.
      if (!jobStatesWithoutWorker.includes(await jobStateOf(run.id))) continue;
      if (await finishLostRun(store, redis, run.id, { record: run, version })) outcome.finished++;
    }
    if (page.nextAfter === null || page.entries.length === 0) return outcome;
    after = page.nextAfter;
  }
}

/** startRunSweeper sweeps every intervalMs on whichever process takes the lock first; stop() ends it. */
export function startRunSweeper(
  redis: Redis,
  store: DocumentStore,
  onError: (error: unknown) => void,
  intervalMs = runSweepIntervalMs,
  jobStateOf?: JobStateLookup,
): LockedInterval {
  return startLockedInterval(
    redis,
    sweepLockKey,
    intervalMs,
    async () => {
      if (jobStateOf) await sweepLostRuns(store, redis, jobStateOf);
      await sweepRunRecords(store, Date.now());
    },
    onError,
  );
}
