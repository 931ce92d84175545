// The run backend seam: where a run's command is started. The worker (agent-worker.ts) reads a backend's output
// streams into the run's events, enforces the wall-time limit and cancellation by kill(), and ends the run when
// it closes; the backend decides where and how the command runs, under which limits, and how the command gets its
// credentials (the worker resolves and audits them, and masks their values in the output). Two backends:
// bubblewrap on the worker's own host (the default; run-sandbox-start.ts spawns sandbox.ts's command) and
// one Kubernetes Job per run (kubernetes-backend.ts), chosen by the API config's runBackend.
import type { Readable } from 'node:stream';
import type { RunStatus } from './run-records.js';
import type { SandboxLimits, SandboxProject } from './sandbox.js';

// The leftover sweep's types (kubernetes-sweep.ts sweeps; a backend with nothing to sweep reports zeros).
/** RunStatusLookup reads a run's status from the replicated store: null when it has no record. */
export type RunStatusLookup = (runId: string) => Promise<RunStatus | null>;

export type LeftoverReason = 'run-final' | 'run-missing' | 'unowned-past-grace';

/** LeftoverDeletion names one deleted object (never its contents). */
export interface LeftoverDeletion {
  kind: 'Secret' | 'Job';
  name: string;
  runId: string;
  reason: LeftoverReason;
}

export interface LeftoverSweepOutcome {
  secretsExamined: number;
  secretsDeleted: number;
  jobsExamined: number;
  jobsDeleted: number;
  /** conflicts counts deletes refused because the object changed since it was listed (left to the next sweep). */
  conflicts: number;
}

export interface LeftoverSweepOptions {
  graceMs?: number;
  pageItemsMax?: number;
  onDeleted?: (deletion: LeftoverDeletion) => void;
}

export const runBackendNames = ['bubblewrap', 'kubernetes'] as const;
export type RunBackendName = (typeof runBackendNames)[number];

/**
 * RunProcess is the part of a child process the worker uses, so that a spawned ChildProcess is one: output on
 * stdout and stderr, `close` with the exit code (or the signal) once the output has ended, `error` when it could
 * not start, and kill(SIGTERM) to ask it to stop, kill(SIGKILL) to stop it at once. pid is set only for a local
 * process (the worker signals its whole process group).
 */
export interface RunProcess {
  readonly stdout: Readable | null;
  readonly stderr: Readable | null;
  readonly pid?: number | undefined;
  readonly exitCode: number | null;
  readonly signalCode: NodeJS.Signals | null;
  kill(signal?: NodeJS.Signals | number): boolean;
  on(event: 'close', listener: (code: number | null, signal: NodeJS.Signals | null) => void): unknown;
  on(event: 'error', listener: (error: Error) => void): unknown;
}

/**
 * RunCredential is a credential the run's command gets: an environment variable (as `env`, named target) or the
 * file /run/secrets/<target> (as `file`). The value is for the backend to hand over, never to record.
 */
export interface RunCredential {
  as: 'env' | 'file';
  target: string;
  value: string;
}

export interface RunSpec {
  runId: string;
  project: SandboxProject & { id?: string };
  prompt: string;
  limits: SandboxLimits;
  /** timeoutMs is the run's wall-time limit, which the worker enforces; a backend may add a backstop. */
  timeoutMs: number;
  /** credentials the backend injects (resolved by the worker, which masks their values in the output). */
  credentials?: readonly RunCredential[];
}

export interface RunBackend {
  readonly name: RunBackendName;
  start(spec: RunSpec): RunProcess;
  close?(): Promise<void>;
  /**
   * stopLost stops what is left of a run whose worker was lost (Kubernetes: deletes its Job, with its pods), so
   * nothing of it keeps running once it is failed WORKER_LOST; a run already gone is fine.
   */
  stopLost?(runId: string): Promise<void>;
  /**
   * sweepLeftovers deletes what runs left behind where they ran after their worker died (Kubernetes: Secrets
   * and Jobs, kubernetes-sweep.ts); statusOf reads a run's status from the store (null: no record). The worker
   * runs it when it starts and, on one worker process at a time, every runKubernetesSweepIntervalMs.
   */
  sweepLeftovers?(
    statusOf: RunStatusLookup,
    nowMs: number,
    options?: LeftoverSweepOptions,
  ): Promise<LeftoverSweepOutcome>;
}
