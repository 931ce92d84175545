// The agent-run worker's runtime: its Redis connections, its BullMQ Worker, its table of active runs, and each
// job taken through the stages of a run, in order:
//
//   claim → prepare workspace → isolate → start → stream → finish
//
// Before the claim, the run takes its workspace's lease (workspace-lease.ts): while another run holds the
// workspace, the job waits in BullMQ's delayed set and the run stays `queued` (with one WORKSPACE_BUSY notice).
// claim takes the job's run from `queued` to `running` (or finishes a run whose worker was lost, or refuses a job
// that does not match its run); prepareWorkspace reads the project and everything the run is given (the agent,
// the names its network may not reach, its credentials, its limits); isolate acquires the run's uid, cgroup and
// egress rules and hands it the workspace; announceStart appends `started` (and `credentials`); superviseRun
// (run-supervisor.ts) starts the command and streams its output until it exits; finish gives back what the run
// held and appends `complete`. A RunRefusal at any stage before the command starts fails the run with its code.
import type { Job } from 'bullmq';
import { DelayedError, Worker } from 'bullmq';
import type { Redis } from 'ioredis';
import { abortableWait } from '../redis/abortable-wait.js';
import { connectRedis } from '../redis/redis-target.js';
import type { ApiLogger } from '../config.js';
import { agentRunQueueName } from '../config.js';
import {
  runConcurrencyDefault,
  runJobLockDurationMsDefault,
  runJobStalledIntervalMsDefault,
  runTimeoutMsDefault,
  workspaceBusyRetryMsDefault,
} from '../limits.js';
import type { ProjectRecord } from '../records.js';
import { storeKeys } from '../records.js';
import type { DocumentStore } from '../../store/document-store.js';
import type { RunRecord, RunStatus } from './run-records.js';
import {
  appendRunEvent,
  finishLostRun,
  finishRun,
  readRun,
  runIdPattern,
  runKeys,
  updateRun,
  workerLostCode,
} from './run-records.js';
import type { ResolvedCredential } from './run-credentials.js';
import { CredentialResolutionError, projectCredentials, resolveRunCredentials } from './run-credentials.js';
import type { RunIsolation, RunResources } from './run-isolation.js';
import { acquireRunResources, chownTree, describeSandbox, workspaceBytes, workspaceOwner } from './run-isolation.js';
import type { ResolvedDeny } from './egress-deny.js';
import { EgressDenyUnresolved } from './egress-deny.js';
import type { ReadOnlyMount, SandboxLimits } from './sandbox.js';
import { defaultSandboxLimits, secretsDir } from './sandbox.js';
import { closedAncestor } from './agent-stage.js';
import type { AgentRunJob, AgentWorkerOptions } from './agent-worker-options.js';
import { RunRefusal, checkedWorkspace, jobMismatch } from './run-job-checks.js';
import type { ActiveRun, RunOutcome, RunSupervision } from './run-supervisor.js';
import { superviseRun } from './run-supervisor.js';
import { dropWorkspaceLease, takeWorkspaceLease } from './workspace-lease.js';

/** JobResult is what a job's processor returns to BullMQ. */
type JobResult = { status: RunStatus; exitCode: number | null };

/** ClaimedRun is a run this worker took from `queued` to `running`. */
interface ClaimedRun {
  runId: string;
  record: RunRecord;
  /** current is the record as the claim wrote it (its started_at). */
  current: RunRecord;
  startedMs: number;
}

/** PreparedRun is everything the run is given, read and checked before anything is acquired for it. */
interface PreparedRun {
  project: ProjectRecord;
  workspace: string;
  prompt: string;
  mounts: ReadOnlyMount[];
  egressDeny: ResolvedDeny | null;
  credentials: ResolvedCredential[];
  limits: SandboxLimits;
  timeoutMs: number;
}

/**
 * RunHold is what a run holds on the host until it finishes: its resources, and the workspace's owner to give it
 * back to. release runs before `complete`: a client that sees it finds the workspace given back and nothing of
 * the run left.
 */
class RunHold {
  resources: RunResources | null = null;
  owner: { uid: number; gid: number; workspace: string } | null = null;

  async release(): Promise<void> {
    await this.resources?.release();
    this.resources = null;
    if (this.owner) await chownTree(this.owner.workspace, this.owner.uid, this.owner.gid).catch(() => undefined);
    this.owner = null;
  }
}

/** agentMounts gives the agent a run's sandbox binds (it may wait for the copy made as the worker started). */
export type AgentMountsSource = () => Promise<ReadOnlyMount[]>;

export class AgentWorkerRuntime {
  private readonly store: DocumentStore;
  private readonly active = new Map<string, ActiveRun>();
  private readonly supervision: RunSupervision;
  private workerConnection: Redis | null = null;
  private worker: Worker<AgentRunJob> | null = null;

  private constructor(
    private readonly options: AgentWorkerOptions,
    private readonly log: ApiLogger,
    private readonly isolation: RunIsolation,
    private readonly agentMounts: AgentMountsSource,
    readonly redis: Redis,
    private readonly subscriber: Redis,
  ) {
    this.store = options.store;
    const { store, active } = this;
    this.supervision = { redis, store, isolation, backend: options.backend, active };
  }

  /** start connects to Redis, listens for cancels and starts taking jobs. */
  static async start(
    options: AgentWorkerOptions,
    log: ApiLogger,
    isolation: RunIsolation,
    agentMounts: AgentMountsSource,
  ): Promise<AgentWorkerRuntime> {
    const redis = connectRedis(options.redisUrl, { maxRetriesPerRequest: 3 });
    const subscriber = connectRedis(options.redisUrl, { maxRetriesPerRequest: null });
    redis.on('error', () => undefined);
    subscriber.on('error', () => undefined);
    const runtime = new AgentWorkerRuntime(options, log, isolation, agentMounts, redis, subscriber);
    await abortableWait(runtime.listen(), options.signal, () => runtime.disconnectNow());
    return runtime;
  }

  private async listen(): Promise<void> {
    await this.subscriber.subscribe(runKeys.cancelChannel);
    // Aborted meanwhile (abortableWait): its connections are closed; open no more.
    this.options.signal?.throwIfAborted();
    this.subscriber.on('message', (_channel, runId: string) => this.active.get(runId)?.cancel());
    // BullMQ does not close a connection it was given, so the worker keeps it to close it.
    const workerConnection = connectRedis(this.options.redisUrl, { maxRetriesPerRequest: null });
    this.workerConnection = workerConnection;
    workerConnection.on('error', () => undefined);
    this.worker = new Worker<AgentRunJob>(agentRunQueueName, (job, token) => this.runJob(job, token), {
      connection: workerConnection,
      concurrency: this.options.concurrency ?? runConcurrencyDefault,
      lockDuration: this.options.lockDurationMs ?? runJobLockDurationMsDefault,
      stalledInterval: this.options.stalledIntervalMs ?? runJobStalledIntervalMsDefault,
    });
    this.worker.on('error', () => undefined);
  }

  /** abandon stops taking jobs and leaves the runs as a crash would (their locks left to expire). */
  async abandon(): Promise<void> {
    await this.worker!.close(true);
  }

  /** drain cancels the running runs and waits for the worker to finish them. */
  async drain(): Promise<void> {
    for (const run of this.active.values()) run.cancel();
    await this.worker!.close();
  }

  /** disconnectNow drops every connection at once (a start stopped while it waited for Redis). */
  private disconnectNow(): void {
    this.worker?.close(true).catch(() => undefined);
    this.workerConnection?.disconnect();
    this.subscriber.disconnect();
    this.redis.disconnect();
  }

  /** disconnect closes the backend and the worker's connections. */
  async disconnect(): Promise<void> {
    await this.options.backend?.close?.();
    const workerConnection = this.workerConnection!;
    await workerConnection.quit().catch(() => workerConnection.disconnect());
    await this.subscriber.quit().catch(() => this.subscriber.disconnect());
    await this.redis.quit().catch(() => this.redis.disconnect());
  }

  private async runJob(job: Job<AgentRunJob>, token?: string): Promise<JobResult> {
    const lease = await this.leaseWorkspace(job, token);
    if (lease === 'busy') throw new DelayedError();
    try {
      return await this.runLeased(job);
    } finally {
      if (lease)
        await dropWorkspaceLease(this.store, lease.workspace, lease.runId).catch((error: unknown) =>
          // The lease lapses by itself once the run is final: a failed drop only delays the next run.
          this.log.warn(
            {
              event: 'runs.lease_drop_failed',
              runId: lease.runId,
              reason: error instanceof Error ? error.message : String(error),
            },
            "a run's workspace lease was not dropped",
          ),
        );
    }
  }

  /**
   * leaseWorkspace takes the workspace of the job's queued run, or puts the job back to wait (`busy`) while
   * another run holds it. A job that is not a queued run of a project with a valid workspace takes no lease
   * (null): the claim or the preparation ends it with its own answer.
   */
  private async leaseWorkspace(
    job: Job<AgentRunJob>,
    token: string | undefined,
  ): Promise<{ workspace: string; runId: string } | null | 'busy'> {
    const runId = job.id;
    if (typeof runId !== 'string' || !runIdPattern.test(runId)) return null;
    const record = await readRun(this.store, runId);
    if (record?.status !== 'queued' || record.cancel_requested) return null;
    // A job that does not match its run takes nothing and waits for nothing: the claim refuses it (JOB_MISMATCH).
    if (jobMismatch(job, job.data as unknown, record)) return null;
    const project = (await this.store.get<ProjectRecord>(storeKeys.project(record.project_id)))?.value;
    let workspace: string;
    try {
      workspace = checkedWorkspace(project?.workspace ?? '');
    } catch {
      return null;
    }
    const answer = await takeWorkspaceLease(this.store, workspace, runId);
    if (answer.taken) return { workspace, runId };
    // One notice per run, however many times it looks again.
    if ((await this.redis.set(runKeys.waitingNoted(runId), '1', 'EX', 86_400, 'NX')) === 'OK') {
      await appendRunEvent(this.redis, runId, {
        event: 'notice',
        data: { code: 'WORKSPACE_BUSY', message: `waiting for run ${answer.heldBy} to finish with the workspace` },
      });
    }
    await job.moveToDelayed(Date.now() + (this.options.workspaceBusyRetryMs ?? workspaceBusyRetryMsDefault), token);
    return 'busy';
  }

  private async runLeased(job: Job<AgentRunJob>): Promise<JobResult> {
    const startedMs = performance.now();
    const claimed = await this.claim(job, startedMs);
    if (!('runId' in claimed)) return claimed;
    const hold = new RunHold();
    try {
      const prepared = await this.prepareWorkspace(claimed);
      const resources = await this.isolate(claimed.runId, prepared, hold);
      await this.announceStart(claimed, prepared, resources);
      const { workspace, project, prompt, limits, timeoutMs, credentials, mounts } = prepared;
      const outcome = await superviseRun(this.supervision, {
        runId: claimed.runId,
        project: { workspace, command: project.command, network: project.network },
        prompt,
        timeoutMs,
        limits,
        resources,
        credentials,
        mounts,
      });
      return await this.finish(claimed, outcome, hold);
    } catch (error) {
      await hold.release();
      if (error instanceof RunRefusal) return this.fail(claimed.runId, startedMs, error.code, error.message);
      throw error;
    } finally {
      await hold.release();
    }
  }

  /**
   * claim takes the job's run from `queued` to `running` by compare-and-set, so a cancel flagged before it wins
   * and one after it is heard. A job for a run that is not queued ends here, with the run's status.
   */
  private async claim(job: Job<AgentRunJob>, startedMs: number): Promise<ClaimedRun | JobResult> {
    const data = job.data as unknown;
    // The API queues every run under its run id (jobId); the payload must agree (jobMismatch).
    const runId = job.id;
    if (typeof runId !== 'string' || !runIdPattern.test(runId)) throw new Error('a job whose id is not a run id');
    const record = await readRun(this.store, runId);
    if (record?.status === 'running') return this.finishLost(job, runId);
    if (!record || record.status !== 'queued') return { status: record?.status ?? 'cancelled', exitCode: null };
    // The payload must be exactly {runId, projectId}, name this job's run, and match the record.
    const mismatch = jobMismatch(job, data, record);
    if (mismatch) {
      await updateRun(this.store, runId, (now) =>
        now.status === 'queued' ? { ...now, status: 'running', started_at: new Date().toISOString() } : now,
      );
      this.log.warn({ event: 'runs.job_refused', runId, jobId: job.id, reason: mismatch }, 'refused a queued job');
      return this.fail(runId, startedMs, 'JOB_MISMATCH', `the queued job does not match the run: ${mismatch}`);
    }
    let taken = false;
    const current = await updateRun(this.store, runId, (now) => {
      taken = now.status === 'queued' && !now.cancel_requested;
      return taken ? { ...now, status: 'running', started_at: new Date().toISOString() } : now;
    });
    if (!taken) {
      if (current.status !== 'queued') return { status: current.status, exitCode: null };
      await finishRun(this.store, this.redis, runId, 'cancelled', null, 0);
      return { status: 'cancelled', exitCode: null };
    }
    return { runId, record, current, startedMs };
  }

  /**
   * finishLost fails a job handed out again while its run is `running`: the worker that started it lost its lock
   * (BullMQ's stalled check gives a job back only then), so it died or can no longer reach Redis. The run is
   * failed, not started over: it may already have had effects beyond the store (a git push), and at most once is
   * the safe default. Its processes are gone with that worker (the local sandbox runs with --die-with-parent in a
   * PID namespace, so the kernel kills it all with the worker; a worker still alive hears the cancel that
   * finishLostRun publishes); a backend's run elsewhere is stopped by the backend (Kubernetes: its Job deleted).
   */
  private async finishLost(job: Job<AgentRunJob>, runId: string): Promise<never> {
    this.log.warn({ event: 'runs.worker_lost', runId, jobId: job.id }, "a run's worker was lost: the run ends");
    await this.options.backend?.stopLost?.(runId).catch((error: unknown) =>
      this.log.warn(
        {
          event: 'runs.worker_lost_stop_failed',
          runId,
          reason: error instanceof Error ? error.message : String(error),
        },
        "could not stop a lost run's process",
      ),
    );
    await finishLostRun(this.store, this.redis, runId);
    throw new Error(`run lost: ${workerLostCode}`);
  }

  /** prepareWorkspace reads the run's project and checks it can run here. */
  private async prepareWorkspace({ runId, record }: ClaimedRun): Promise<PreparedRun> {
    const { options, isolation } = this;
    const project = (await this.store.get<ProjectRecord>(storeKeys.project(record.project_id)))?.value ?? null;
    if (!project) throw new RunRefusal('PROJECT_MISSING', 'the project was deleted before the run started');
    if (typeof record.prompt !== 'string')
      throw new RunRefusal('JOB_MISMATCH', 'the run record has no prompt (queued by an older version)');
    const prompt = record.prompt;
    const workspace = checkedWorkspace(project.workspace);
    if (project.network && !isolation.egress && !options.backend) {
      throw new RunRefusal(
        'NETWORK_POLICY_UNAVAILABLE',
        `the project allows network, but this worker cannot filter egress: ${isolation.egressProblem}`,
      );
    }
    // The agent the sandbox binds (a copy made as the worker started, which the first runs may wait for).
    const mounts = await this.agentMounts();
    const egressDeny = await this.resolveEgressDeny(runId, project);
    let credentials: ResolvedCredential[];
    try {
      credentials = await resolveRunCredentials(this.store, options.secretKey, projectCredentials(project));
    } catch (error) {
      if (error instanceof CredentialResolutionError) throw new RunRefusal(error.code, error.message);
      throw error;
    }
    const limits = this.runLimits();
    const timeoutMs = options.runTimeoutMs ?? runTimeoutMsDefault;
    return { project, workspace, prompt, mounts, egressDeny, credentials, limits, timeoutMs };
  }

  /** What a networked run may not reach is resolved as it starts (the cluster's members by name, as they are now). */
  private async resolveEgressDeny(runId: string, project: ProjectRecord): Promise<ResolvedDeny | null> {
    if (!project.network || this.options.backend) return null;
    try {
      return await this.isolation.egressDeny.resolve();
    } catch (error) {
      if (!(error instanceof EgressDenyUnresolved)) throw error;
      this.log.warn(
        { event: 'runs.egress_deny_resolve_failed', runId, reason: error.message },
        "a run's denied names did not resolve: the run is refused",
      );
      throw new RunRefusal(error.code, `the run's network is refused: ${error.message}`);
    }
  }

  /**
   * runLimits are the sandbox's limits. No file may outgrow the workspace quota (RLIMIT_FSIZE): the quota is
   * measured by polling, so this bounds what one file can overshoot it by (writes past it fail EFBIG at once)
   * where the quota is under the file limit. A backend's runs have their own limits.
   */
  private runLimits(): SandboxLimits {
    const configuredLimits = this.options.limits ?? defaultSandboxLimits;
    if (this.options.backend) return configuredLimits;
    return {
      ...configuredLimits,
      fileBytesMax: Math.min(configuredLimits.fileBytesMax, this.isolation.workspaceBytesMax),
    };
  }

  /** isolate acquires the run's uid, cgroup and egress rules, checks the quota, and hands it the workspace. */
  private async isolate(runId: string, prepared: PreparedRun, hold: RunHold): Promise<RunResources> {
    const { isolation } = this;
    const { workspace, limits, egressDeny } = prepared;
    const resources = acquireRunResources(isolation, runId, limits);
    hold.resources = resources;
    resources.egressDeny = egressDeny;
    const sizeAtStart = this.options.backend ? null : await workspaceBytes(workspace);
    if (sizeAtStart !== null && sizeAtStart > isolation.workspaceBytesMax) {
      throw new RunRefusal(
        'WORKSPACE_QUOTA_EXCEEDED',
        `the workspace holds ${sizeAtStart} bytes, over the quota of ${isolation.workspaceBytesMax}`,
      );
    }
    if (resources.uid !== null) {
      const closed = closedAncestor(workspace);
      if (closed) {
        throw new RunRefusal(
          'WORKSPACE_NOT_REACHABLE',
          `the run's own uid cannot reach the workspace: ${closed} is not searchable by others (chmod o+x)`,
        );
      }
      hold.owner = { ...workspaceOwner(workspace), workspace: prepared.project.workspace };
      await chownTree(workspace, resources.uid, resources.uid);
    }
    return resources;
  }

  /** announceStart appends `started` (how the run is sandboxed) and `credentials` (names only), and audits them. */
  private async announceStart(claimed: ClaimedRun, prepared: PreparedRun, resources: RunResources): Promise<void> {
    const { runId, record, current } = claimed;
    const { project, credentials, limits, timeoutMs } = prepared;
    const backendName = this.options.backend?.name;
    await appendRunEvent(this.redis, runId, {
      event: 'started',
      data: {
        startedAt: current.started_at ?? new Date().toISOString(),
        sandbox: describeSandbox(this.isolation, resources, limits, project.network, timeoutMs, backendName),
      },
    });
    if (credentials.length === 0) return;
    const injected = credentials.map(({ category, name, as, target }) => ({
      category,
      name,
      as,
      target: as === 'file' ? `${secretsDir}/${target}` : target,
    }));
    await appendRunEvent(this.redis, runId, { event: 'credentials', data: { injected } });
    // Names and categories only: the values never reach a log line.
    this.log.info(
      {
        event: 'run.credentials_injected',
        runId,
        projectId: project.id,
        userId: record.user_id,
        credentials: injected,
      },
      'credentials injected into a run',
    );
  }

  /** finish gives back what the run held, then appends the outcome's notice and `complete`. */
  private async finish({ runId, startedMs }: ClaimedRun, outcome: RunOutcome, hold: RunHold): Promise<RunOutcome> {
    await hold.release();
    if (outcome.code)
      await appendRunEvent(this.redis, runId, {
        event: 'notice',
        data: { message: outcome.message ?? outcome.code, code: outcome.code },
      });
    const durationMs = Math.round(performance.now() - startedMs);
    await finishRun(this.store, this.redis, runId, outcome.status, outcome.exitCode, durationMs);
    if (outcome.status !== 'succeeded') throw new Error(`run ${outcome.status}`);
    return outcome;
  }

  /** fail ends a refused run: a `notice` with the refusal's code, then `complete` with status failed. */
  private async fail(runId: string, startedMs: number, code: string, message: string): Promise<never> {
    await appendRunEvent(this.redis, runId, { event: 'notice', data: { message, code } });
    await finishRun(this.store, this.redis, runId, 'failed', null, Math.round(performance.now() - startedMs));
    throw new Error(`run refused: ${code}`);
  }
}
