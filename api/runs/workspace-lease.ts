// One run at a time per workspace. A run is handed its workspace (chowned to the run's own uid, then given back
// when it ends: run-isolation.ts), so two runs on one workspace at once would take it from each other: the second
// chowns it away from the first, the first's end gives it back under the second. The lease is a record in the
// replicated store, taken and dropped by compare-and-set, so it holds across every worker of every node. It names
// the run that holds it and is valid only while that run is queued or running: a worker that dies mid-run leaves
// a lease that frees itself when the run is finished as lost (finishLostRun, the sweep), with no timer to tune.
import { createHash } from 'node:crypto';
import type { DocumentStore } from '../../store/document-store.js';
import { isVersionConflict } from '../../store/document-store.js';
import { finalRunStatuses, readRun } from './run-records.js';

/** WorkspaceLeaseRecord is the store's record of who holds a workspace. */
export interface WorkspaceLeaseRecord {
  [key: string]: string;
  run_id: string;
  workspace: string;
  taken_at: string;
}

/** workspaceLeaseKey names a workspace's lease by a digest of its path (a path may be longer than a key may be). */
export function workspaceLeaseKey(workspace: string): string {
  return `workspace-leases/${createHash('sha256').update(workspace).digest('hex')}`;
}

/**
 * leaseTakeAttemptsMax bounds the compare-and-set passes of one take: each conflict means another worker wrote the
 * lease in between, and after this many the workspace is reported held (the job looks again later).
 */
const leaseTakeAttemptsMax = 8;

/** LeaseAnswer: taken (or already held by this run), or busy with the run that holds it. */
export type LeaseAnswer = { taken: true } | { taken: false; heldBy: string };

/** takeWorkspaceLease takes the workspace for runId unless a run that is queued or running holds it. */
export async function takeWorkspaceLease(store: DocumentStore, workspace: string, runId: string): Promise<LeaseAnswer> {
  const key = workspaceLeaseKey(workspace);
  // Each pass either takes the lease or finds it held; a conflict means another worker moved first: look again.
  for (let attempt = 0; attempt < leaseTakeAttemptsMax; attempt++) {
    const current = await store.get<WorkspaceLeaseRecord>(key);
    if (current?.value.run_id === runId) return { taken: true };
    if (current) {
      const holder = await readRun(store, current.value.run_id);
      if (holder && !finalRunStatuses.includes(holder.status)) return { taken: false, heldBy: holder.id };
    }
    const lease: WorkspaceLeaseRecord = { run_id: runId, workspace, taken_at: new Date().toISOString() };
    try {
      await store.put(key, lease, { expectedVersion: current?.version ?? 0 });
      return { taken: true };
    } catch (error) {
      if (!isVersionConflict(error)) throw error;
    }
  }
  const holder = (await store.get<WorkspaceLeaseRecord>(key))?.value.run_id ?? 'another run';
  return { taken: false, heldBy: holder };
}

/** dropWorkspaceLease gives the workspace up if runId still holds it (a lease taken over since is left alone). */
export async function dropWorkspaceLease(store: DocumentStore, workspace: string, runId: string): Promise<void> {
  const key = workspaceLeaseKey(workspace);
  const current = await store.get<WorkspaceLeaseRecord>(key);
  if (current?.value.run_id !== runId) return;
  try {
    await store.delete(key, { expectedVersion: current.version });
  } catch (error) {
    if (!isVersionConflict(error)) throw error;
  }
}
