// What a claimed job and its project must be before a run starts; a run that fails a check ends with a RunRefusal.
import { statSync } from 'node:fs';
import path from 'node:path';
import type { Job } from 'bullmq';
import type { RunRecord } from './run-records.js';
import type { AgentRunJob } from './agent-worker-options.js';

/** RunRefusal ends a run before its command starts, with a code for its `notice`. */
export class RunRefusal extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/** jobMismatch says how a job differs from what the API queues for this run, or null when it matches. */
export function jobMismatch(job: Job, data: unknown, record: RunRecord): string | null {
  if (typeof data !== 'object' || data === null || Array.isArray(data)) return 'the payload is not an object';
  const keys = Object.keys(data).sort();
  if (keys.join(',') !== 'projectId,runId')
    return `the payload has fields ${keys.join(', ')} (expected runId, projectId)`;
  const { runId, projectId } = data as AgentRunJob;
  if (job.id !== runId) return 'the payload names another run';
  if (projectId !== record.project_id) return "the project is not the run's";
  return null;
}

/** checkedWorkspace re-checks what the API checked when the project was written (absolute, normalized, a directory). */
export function checkedWorkspace(workspace: string): string {
  if (
    typeof workspace !== 'string' ||
    !path.isAbsolute(workspace) ||
    path.resolve(workspace) !== workspace ||
    workspace === '/'
  ) {
    throw new RunRefusal('INVALID_WORKSPACE', 'the project workspace is not an absolute, normalized directory path');
  }
  let isDirectory: boolean;
  try {
    isDirectory = statSync(workspace).isDirectory();
  } catch {
    isDirectory = false;
  }
  if (!isDirectory) throw new RunRefusal('WORKSPACE_MISSING', 'the workspace directory does not exist');
  return workspace;
}
