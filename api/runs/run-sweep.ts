// Run records (runs/<id> in the replicated store) would otherwise grow without end: a run's event stream in
// Redis expires runRetentionSeconds after the run ends, and its record goes the same way here. A sweep lists
// every run and deletes each one that ended (a final status) more than the retention ago, by compare-and-set
// on the version it read, so a record that changed meanwhile is left for the next sweep. Queued and running
// runs are never swept. startRunSweeper runs it on one worker process of the cluster at a time.
import type { Redis } from 'ioredis';
import type { DocumentStore } from '../../store/document-store.js';
import { isVersionConflict } from '../../store/document-store.js';
import { storeKeys } from '../records.js';
import { runRetentionSeconds, runSweepIntervalMs, runSweepPageEntriesMax } from '../limits.js';
import { startLockedInterval, type LockedInterval } from '../redis/locked-interval.js';
import { finalRunStatuses, type RunRecord } from './run-records.js';

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

/** startRunSweeper sweeps every intervalMs on whichever process takes the lock first; stop() ends it. */
export function startRunSweeper(
  redis: Redis,
  store: DocumentStore,
  onError: (error: unknown) => void,
  intervalMs = runSweepIntervalMs,
): LockedInterval {
  return startLockedInterval(redis, sweepLockKey, intervalMs, () => sweepRunRecords(store, Date.now()), onError);
}
