// What an agent-run worker is given: the options it starts with (agent-worker.ts) and the payload of each job.
import type { ApiLogger } from '../config.js';
import type { DocumentStore } from '../../store/document-store.js';
import type { RunIsolationOptions } from './run-isolation.js';
import type { ReadOnlyMount, SandboxLimits } from './sandbox.js';
import type { RunBackend } from './run-backend.js';

/** AgentRunJob is the whole payload of a queued run: ids, nothing a worker would act on without the store. */
export interface AgentRunJob {
  runId: string;
  projectId: string;
}

export interface AgentWorkerOptions {
  redisUrl: string;
  /**
   * signal stops the start: an abort while the worker waits for Redis closes its connections, and the start
   * rejects with the signal's reason (else it waits for Redis without end).
   */
  signal?: AbortSignal;
  /** store holds the run records (the API's store: on a cluster, the node's replicated store). */
  store: DocumentStore;
  /** secretKey opens the credentials a project injects (the API's key); without it such runs fail. */
  secretKey?: Buffer;
  /** log hears run audit events (`run.credentials_injected`: names only) and isolation warnings. */
  log?: ApiLogger;
  concurrency?: number;
  runTimeoutMs?: number;
  limits?: SandboxLimits;
  /** isolation tunes the host probe (uid range, egress allow/deny, quota); see run-isolation.ts. */
  isolation?: RunIsolationOptions;
  /** agentMounts are bound read-only into every sandbox (default: referenceAgentMounts(), the shipped agent). */
  agentMounts?: ReadOnlyMount[];
  /**
   * agentStageRoot is where a worker that gives runs their own uid copies the agentMounts for them to read
   * (agent-stage.ts; default agentStageRootDefault: /run/svc-agent). The worker does not start when a run's uid
   * could not reach it, and says what to change.
   */
  agentStageRoot?: string;
  /** runSweepIntervalMs paces the sweep of run records past their retention (default runSweepIntervalMs). */
  runSweepIntervalMs?: number;
  /**
   * lockDurationMs and stalledIntervalMs (BullMQ's; defaults runJobLockDurationMsDefault and
   * runJobStalledIntervalMsDefault) decide how soon a run whose worker died is handed to another worker, which
   * finishes it `failed` (WORKER_LOST): once its lock expires, at the next stalled check of any worker.
   */
  lockDurationMs?: number;
  stalledIntervalMs?: number;
  /** workspaceBusyRetryMs: how soon a run waiting for a workspace another run holds looks again (default workspaceBusyRetryMsDefault). */
  workspaceBusyRetryMs?: number;
  /** onSweepError hears a failed sweep (the next interval tries again). */
  onSweepError?: (error: unknown) => void;
  /** backendSweepIntervalMs paces the sweep of a backend's leftovers (default runKubernetesSweepIntervalMs). */
  backendSweepIntervalMs?: number;
  /**
   * backend starts runs elsewhere (kubernetes-backend.ts); default: bubblewrap on this host, with the isolation
   * above. A backend's runs get no host isolation from this worker (no uid, cgroup, egress filter or workspace
   * quota here: the backend has its own). Credentials are resolved and audited here and handed to the backend,
   * which injects them (Kubernetes: a per-run Secret); their values are masked in its output here.
   */
  backend?: RunBackend;
}
