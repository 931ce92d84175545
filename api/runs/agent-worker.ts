// The agent-run worker: a BullMQ Worker that runs each job's project command in the sandbox (sandbox.ts) and
// streams its output into the run's Redis stream, ending with a `complete` event. It can live in the API
// process or in its own; cancellation reaches it over a Redis channel.
import { ChildProcess as ChildProcessClass } from 'node:child_process';
//
// A job carries ids only ({runId, projectId}). Everything that decides what runs, where and with what (the
// project's workspace, command, network flag and credentials; the prompt) is read from the replicated store,
// so a process that can write to Redis can at most start a run that was already queued, as it was queued. A
// job that does not match its run record is refused: the run fails with a `notice` whose code is JOB_MISMATCH.
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Readable, Writable } from 'node:stream';
import { Queue, Worker } from 'bullmq';
import type { Job } from 'bullmq';
import { connectRedis } from '../redis/redis-target.js';
import { startRunSweeper } from './run-sweep.js';
import { startLockedInterval, type LockedInterval } from '../redis/locked-interval.js';
import type { ApiLogger } from '../config.js';
import { agentRunQueueName } from '../config.js';
import {
  runConcurrencyDefault,
  runJobLockDurationMsDefault,
  runJobStalledIntervalMsDefault,
  runKillGraceMs,
  runOutputBytesMax,
  runOutputChunkBytesMax,
  runOutputFlushMs,
  runKubernetesSweepIntervalMs,
  runSlirpReadyTimeoutMs,
  runTimeoutMsDefault,
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
import type { RunIsolation, RunIsolationOptions, RunResources } from './run-isolation.js';
import {
  acquireRunResources,
  chownTree,
  describeSandbox,
  probeRunIsolation,
  workspaceBytes,
  workspaceOwner,
} from './run-isolation.js';
import type { ResolvedDeny } from './egress-deny.js';
import { EgressDenyUnresolved } from './egress-deny.js';
import type { ReadOnlyMount, SandboxLimits, SandboxProject } from './sandbox.js';
import {
  agentBinDir,
  agentMountPoint,
  defaultSandboxLimits,
  firstSecretFd,
  goFd,
  readyFd,
  resolvConfFd,
  sandboxCommand,
  secretsDir,
  slirpResolvConf,
} from './sandbox.js';
import { SecretMasker } from './secret-masker.js';
import type { AgentStage } from './agent-stage.js';
import { agentStageRootDefault, checkAgentStageRoot, closedAncestor, stageAgentMounts } from './agent-stage.js';
import type { RunBackend, RunProcess } from './run-backend.js';

/** AgentRunJob is the whole payload of a queued run: ids, nothing a worker would act on without the store. */
export interface AgentRunJob {
  runId: string;
  projectId: string;
}

/** leftoverSweepLockKey is the Redis lock of the backend leftover sweep (one worker process per interval). */
const leftoverSweepLockKey = 'svc:run-backend-leftover-sweep';

/** referenceAgentDir is the reference agent shipped with the service (agent/), bound into every sandbox. */
export const referenceAgentDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'agent');

/** referenceAgentMounts binds the reference agent and the one package it imports (`openai`), when both exist. */
export function referenceAgentMounts(agentDir = referenceAgentDir): ReadOnlyMount[] {
  let openaiDir: string;
  try {
    // The package's exports hide package.json: find its root from its entry point.
    openaiDir = path.dirname(createRequire(import.meta.url).resolve('openai'));
    while (!existsSync(path.join(openaiDir, 'package.json')) && path.dirname(openaiDir) !== openaiDir)
      openaiDir = path.dirname(openaiDir);
  } catch {
    return [];
  }
  if (!existsSync(path.join(agentDir, 'svc-agent.mjs'))) return [];
  return [
    { source: agentDir, target: `${agentMountPoint}/app` },
    { source: openaiDir, target: `${agentMountPoint}/node_modules/openai` },
  ];
}

export interface AgentWorkerOptions {
  redisUrl: string;
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

export interface AgentWorker {
  /** isolation is what the host allowed (found when the worker started). */
  readonly isolation: RunIsolation;
  /**
   * close cancels the running runs and waits for them. close(true) abandons them as a crash would: the BullMQ
   * worker stops (their locks left to expire) and nothing else; the runs' processes go on until a worker that
   * takes the job back finishes the run and its cancel reaches them. A later close() closes the rest.
   */
  close(force?: boolean): Promise<void>;
}

interface ActiveRun {
  child: RunProcess;
  cancel(): void;
}

/** RunRefusal ends a run before its command starts, with a code for its `notice`. */
class RunRefusal extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

interface RunOutcome {
  status: RunStatus;
  exitCode: number | null;
  /** code says why a run failed that its command did not fail itself (the quota, the network). */
  code?: string;
  message?: string;
}

export async function startAgentWorker(options: AgentWorkerOptions): Promise<AgentWorker> {
  const { store } = options;
  const log = options.log ?? (() => undefined);
  // A backend's runs are isolated where they run: this host's uid, cgroup, egress filter and quota are not theirs.
  const isolation = await probeRunIsolation(
    options.backend ? { ...options.isolation, probe: false } : { redisUrl: options.redisUrl, ...options.isolation },
  );
  if (isolation.egressProblem && !options.backend)
    log('runs.network_unavailable', {
      reason: isolation.egressProblem,
      effect: 'runs of projects with network: true fail',
    });
  // Resolve the names to deny once now: a name that answers now is denied from then on even if DNS later fails.
  if (isolation.egress && !options.backend) {
    await isolation.egressDeny.resolve().catch((error: Error) =>
      log('runs.egress_deny_resolve_failed', {
        reason: error.message,
        effect: 'runs of projects with network: true fail EGRESS_DENY_UNRESOLVED until the names resolve',
      }),
    );
  }
  // Runs of their own uid read the agent from a copy (agent-stage.ts): the checkout may sit in a private home.
  // The stage root is checked now (a worker that could not stage does not start); the copy is made in the
  // background, so the API is up at once, and a run waits for it.
  const givenMounts = options.agentMounts ?? referenceAgentMounts();
  let staging: Promise<AgentStage> | null = null;
  if (isolation.root && !options.backend && givenMounts.length > 0) {
    const stageRoot = options.agentStageRoot ?? agentStageRootDefault(os.tmpdir());
    await checkAgentStageRoot(stageRoot);
    staging = stageAgentMounts(givenMounts, stageRoot);
    staging.catch((error: Error) =>
      log('runs.agent_stage_failed', { reason: error.message, effect: 'runs fail AGENT_STAGE_FAILED' }),
    );
  }
  const agentMounts = async (): Promise<ReadOnlyMount[]> => {
    if (!staging) return givenMounts;
    try {
      return (await staging).mounts;
    } catch (error) {
      throw new RunRefusal(
        'AGENT_STAGE_FAILED',
        `the worker could not copy the agent for the run's uid: ${(error as Error).message}`,
      );
    }
  };
  const redis = connectRedis(options.redisUrl, { maxRetriesPerRequest: 3 });
  const subscriber = connectRedis(options.redisUrl, { maxRetriesPerRequest: null });
  redis.on('error', () => undefined);
  subscriber.on('error', () => undefined);
  const active = new Map<string, ActiveRun>();
  await subscriber.subscribe(runKeys.cancelChannel);
  subscriber.on('message', (_channel, runId: string) => active.get(runId)?.cancel());

  // BullMQ does not close a connection it was given, so the worker keeps it to close it.
  const workerConnection = connectRedis(options.redisUrl, { maxRetriesPerRequest: null });
  workerConnection.on('error', () => undefined);
  const worker = new Worker<AgentRunJob>(agentRunQueueName, (job) => runJob(job), {
    connection: workerConnection,
    concurrency: options.concurrency ?? runConcurrencyDefault,
    lockDuration: options.lockDurationMs ?? runJobLockDurationMsDefault,
    stalledInterval: options.stalledIntervalMs ?? runJobStalledIntervalMsDefault,
  });
  worker.on('error', () => undefined);

  const fail = async (runId: string, startedMs: number, code: string, message: string): Promise<never> => {
    await appendRunEvent(redis, runId, { event: 'notice', data: { message, code } });
    await finishRun(store, redis, runId, 'failed', null, Math.round(performance.now() - startedMs));
    throw new Error(`run refused: ${code}`);
  };

  async function runJob(job: Job<AgentRunJob>): Promise<{ status: RunStatus; exitCode: number | null }> {
    const startedMs = performance.now();
    const data = job.data as unknown;
    // The API queues every run under its run id (jobId); the payload must agree (jobMismatch).
    const runId = job.id;
    if (typeof runId !== 'string' || !runIdPattern.test(runId)) throw new Error('a job whose id is not a run id');
    const record = await readRun(store, runId);
    // A job handed out again while its run is `running`: the worker that started it lost its lock (BullMQ's
    // stalled check gives a job back only then), so it died or can no longer reach Redis. The run is failed, not
    // started over: it may already have had effects beyond the store (a git push), and at most once is the safe
    // default. Its processes are gone with that worker (the local sandbox runs with --die-with-parent in a PID
    // namespace, so the kernel kills it all with the worker; a worker still alive hears the cancel that
    // finishLostRun publishes); a backend's run elsewhere is stopped by the backend (Kubernetes: its Job deleted).
    if (record?.status === 'running') {
      log('runs.worker_lost', { runId, jobId: job.id });
      await options.backend?.stopLost?.(runId).catch((error: unknown) =>
        log('runs.worker_lost_stop_failed', {
          runId,
          reason: error instanceof Error ? error.message : String(error),
        }),
      );
      await finishLostRun(store, redis, runId);
      throw new Error(`run lost: ${workerLostCode}`);
    }
    if (!record || record.status !== 'queued') return { status: record?.status ?? 'cancelled', exitCode: null };
    // The payload must be exactly {runId, projectId}, name this job's run, and match the record.
    const mismatch = jobMismatch(job, data, record);
    if (mismatch) {
      await updateRun(store, runId, (now) =>
        now.status === 'queued' ? { ...now, status: 'running', started_at: new Date().toISOString() } : now,
      );
      log('runs.job_refused', { runId, jobId: job.id, reason: mismatch });
      return fail(runId, startedMs, 'JOB_MISMATCH', `the queued job does not match the run: ${mismatch}`);
    }
    // queued → running by compare-and-set, so a cancel flagged before it wins and one after it is heard.
    let taken = false;
    const current = await updateRun(store, runId, (now) => {
      taken = now.status === 'queued' && !now.cancel_requested;
      return taken ? { ...now, status: 'running', started_at: new Date().toISOString() } : now;
    });
    if (!taken) {
      if (current.status !== 'queued') return { status: current.status, exitCode: null };
      await finishRun(store, redis, runId, 'cancelled', null, 0);
      return { status: 'cancelled', exitCode: null };
    }

    let resources: RunResources | null = null;
    let owner: { uid: number; gid: number } | null = null;
    let project: ProjectRecord | null = null;
    // Before `complete`: a client that sees it finds the workspace given back and nothing of the run left.
    const cleanUp = async () => {
      await resources?.release();
      resources = null;
      if (owner && project) await chownTree(project.workspace, owner.uid, owner.gid).catch(() => undefined);
      owner = null;
    };
    try {
      project = (await store.get<ProjectRecord>(storeKeys.project(record.project_id)))?.value ?? null;
      if (!project) throw new RunRefusal('PROJECT_MISSING', 'the project was deleted before the run started');
      if (typeof record.prompt !== 'string')
        throw new RunRefusal('JOB_MISMATCH', 'the run record has no prompt (queued by an older version)');
      const workspace = checkedWorkspace(project.workspace);
      if (project.network && !isolation.egress && !options.backend) {
        throw new RunRefusal(
          'NETWORK_POLICY_UNAVAILABLE',
          `the project allows network, but this worker cannot filter egress: ${isolation.egressProblem}`,
        );
      }
      // The agent the sandbox binds (a copy made as the worker started, which the first runs may wait for).
      const mounts = await agentMounts();
      // What a networked run may not reach is resolved as it starts (the cluster's members by name, as they are now).
      let egressDeny: ResolvedDeny | null = null;
      if (project.network && !options.backend) {
        try {
          egressDeny = await isolation.egressDeny.resolve();
        } catch (error) {
          if (!(error instanceof EgressDenyUnresolved)) throw error;
          log('runs.egress_deny_resolve_failed', { runId, reason: error.message });
          throw new RunRefusal(error.code, `the run's network is refused: ${error.message}`);
        }
      }
      let credentials: ResolvedCredential[];
      try {
        credentials = await resolveRunCredentials(store, options.secretKey, projectCredentials(project));
      } catch (error) {
        if (error instanceof CredentialResolutionError) throw new RunRefusal(error.code, error.message);
        throw error;
      }
      const configuredLimits = options.limits ?? defaultSandboxLimits;
      // No file may outgrow the workspace quota (RLIMIT_FSIZE): the quota is measured by polling, so this bounds
      // what one file can overshoot it by (writes past it fail EFBIG at once) where the quota is under the file
      // limit. A backend's runs have their own limits.
      const limits = options.backend
        ? configuredLimits
        : {
            ...configuredLimits,
            fileBytesMax: Math.min(configuredLimits.fileBytesMax, isolation.workspaceBytesMax),
          };
      const timeoutMs = options.runTimeoutMs ?? runTimeoutMsDefault;
      resources = acquireRunResources(isolation, runId, limits);
      resources.egressDeny = egressDeny;
      const sizeAtStart = options.backend ? null : await workspaceBytes(workspace);
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
        owner = workspaceOwner(workspace);
        await chownTree(workspace, resources.uid, resources.uid);
      }
      await appendRunEvent(redis, runId, {
        event: 'started',
        data: {
          startedAt: current.started_at ?? new Date().toISOString(),
          sandbox: describeSandbox(isolation, resources, limits, project.network, timeoutMs, options.backend?.name),
        },
      });
      if (credentials.length > 0) {
        const injected = credentials.map(({ category, name, as, target }) => ({
          category,
          name,
          as,
          target: as === 'file' ? `${secretsDir}/${target}` : target,
        }));
        await appendRunEvent(redis, runId, { event: 'credentials', data: { injected } });
        log('run.credentials_injected', {
          runId,
          projectId: project.id,
          userId: record.user_id,
          credentials: injected,
        });
      }
      const outcome = await runSandboxed(
        runId,
        { workspace, command: project.command, network: project.network },
        record.prompt,
        timeoutMs,
        limits,
        resources,
        credentials,
        mounts,
      );
      await cleanUp();
      if (outcome.code)
        await appendRunEvent(redis, runId, {
          event: 'notice',
          data: { message: outcome.message ?? outcome.code, code: outcome.code },
        });
      await finishRun(store, redis, runId, outcome.status, outcome.exitCode, Math.round(performance.now() - startedMs));
      if (outcome.status !== 'succeeded') throw new Error(`run ${outcome.status}`);
      return outcome;
    } catch (error) {
      await cleanUp();
      if (error instanceof RunRefusal) return fail(runId, startedMs, error.code, error.message);
      throw error;
    } finally {
      await cleanUp();
    }
  }

  function runSandboxed(
    runId: string,
    project: SandboxProject,
    prompt: string,
    timeoutMs: number,
    limits: SandboxLimits,
    resources: RunResources,
    credentials: ResolvedCredential[],
    mounts: ReadOnlyMount[],
  ): Promise<RunOutcome> {
    const network = project.network ? ('slirp' as const) : ('none' as const);
    const masker = new SecretMasker(credentials.map((credential) => credential.value));
    // A configured backend (Kubernetes) runs the command elsewhere, under its own isolation, and injects the
    // credentials itself; the slirp network is the local sandbox's. Either way the output passes the masker.
    let localChild: ChildProcess | null = null;
    let child: RunProcess;
    if (options.backend) {
      const injected = credentials.map(({ as, target, value }) => ({ as, target, value }));
      child = options.backend.start({ runId, project, prompt, limits, timeoutMs, credentials: injected });
    } else {
      const secretFiles = credentials.filter((credential) => credential.as === 'file');
      const command = sandboxCommand({
        project,
        prompt,
        limits,
        uid: resources.uid,
        cgroupProcsFiles: resources.cgroup?.procsFiles ?? [],
        network,
        secretFileNames: secretFiles.map((credential) => credential.target),
        readOnlyMounts: mounts,
      });
      // The sandbox's environment is exactly this: nothing of the worker's own leaks in.
      const env: Record<string, string> = {
        PATH: `/usr/local/bin:/usr/bin:/bin:${agentBinDir}`,
        HOME: '/tmp',
        LANG: 'C.UTF-8',
      };
      for (const credential of credentials) if (credential.as === 'env') env[credential.target] = credential.value;
      const spawned = spawn(command.file, command.args, { stdio: command.stdio, detached: true, env });
      // A sandbox that dies early closes its ends of these pipes: an EPIPE is no reason to crash the worker.
      for (const stream of spawned.stdio.slice(3)) stream?.on('error', () => undefined);
      secretFiles.forEach((credential, index) =>
        (spawned.stdio as unknown as Writable[])[firstSecretFd + index]!.end(credential.value),
      );
      localChild = spawned;
      child = spawned;
    }
    let ending: RunStatus | null = null;
    let endingCode: { code: string; message: string } | undefined;
    let outputBytes = 0;
    let truncated = false;
    const pending: Array<{ stream: 'stdout' | 'stderr'; text: string }> = [];
    let writes = Promise.resolve();
    let slirp: ChildProcess | null = null;

    const flush = () => {
      const batch = pending.splice(0);
      writes = writes
        .then(async () => {
          for (const item of batch) await appendRunEvent(redis, runId, { event: 'output', data: item });
        })
        .catch(() => undefined);
    };
    const flushTimer = setInterval(flush, runOutputFlushMs);
    const queueText = (stream: 'stdout' | 'stderr', text: string) => {
      for (let offset = 0; offset < text.length; offset += runOutputChunkBytesMax) {
        const piece = text.slice(offset, offset + runOutputChunkBytesMax);
        const last = pending.at(-1);
        if (last && last.stream === stream && last.text.length + piece.length <= runOutputChunkBytesMax)
          last.text += piece;
        else pending.push({ stream, text: piece });
      }
    };
    const collect = (stream: 'stdout' | 'stderr') => (chunk: Buffer) => {
      if (outputBytes >= runOutputBytesMax) {
        if (!truncated) {
          truncated = true;
          writes = writes
            .then(() =>
              appendRunEvent(redis, runId, {
                event: 'notice',
                data: { message: `output beyond ${runOutputBytesMax} bytes was dropped` },
              }),
            )
            .then(
              () => undefined,
              () => undefined,
            );
        }
        return;
      }
      const kept = chunk.subarray(0, runOutputBytesMax - outputBytes);
      outputBytes += kept.length;
      queueText(stream, masker.push(stream, kept.toString('utf8')));
    };
    child.stdout!.on('data', collect('stdout'));
    child.stderr!.on('data', collect('stderr'));

    const kill = (status: RunStatus, reason?: { code: string; message: string }) => {
      if (ending !== null) return;
      ending = status;
      endingCode = reason;
      signalGroup(child, 'SIGTERM');
      setTimeout(() => {
        signalGroup(child, 'SIGKILL');
        resources.cgroup?.killAll();
      }, runKillGraceMs).unref();
    };
    const timeout = setTimeout(() => kill('timed_out'), timeoutMs);
    active.set(runId, { child, cancel: () => kill('cancelled') });
    // A cancel that arrived between the check in runJob and the line above was flagged but not heard.
    void readRun(store, runId).then(
      (now) => {
        if (now?.cancel_requested) kill('cancelled');
      },
      () => undefined,
    );

    // The workspace quota: measured every interval; one measurement at a time.
    let measuring = false;
    const quotaTimer = setInterval(() => {
      if (measuring || !localChild) return;
      measuring = true;
      void workspaceBytes(project.workspace).then((bytes) => {
        measuring = false;
        if (bytes !== null && bytes > isolation.workspaceBytesMax) {
          kill('failed', {
            code: 'WORKSPACE_QUOTA_EXCEEDED',
            message: `the workspace grew to ${bytes} bytes, over the quota of ${isolation.workspaceBytesMax}`,
          });
        }
      });
    }, isolation.workspacePollMs);

    if (network === 'slirp' && localChild) {
      void attachNetwork(localChild, resources).then(
        (started) => {
          slirp = started;
        },
        (error: Error) => {
          kill('failed', {
            code: 'NETWORK_SETUP_FAILED',
            message: `the run's network could not be set up: ${error.message}`,
          });
        },
      );
    }

    return new Promise((resolve) => {
      let finished = false;
      const finish = (exitCode: number | null) => {
        if (finished) return;
        finished = true;
        clearTimeout(timeout);
        clearInterval(flushTimer);
        clearInterval(quotaTimer);
        active.delete(runId);
        if (slirp) signalGroup(slirp, 'SIGKILL');
        for (const stream of ['stdout', 'stderr'] as const) queueText(stream, masker.end(stream));
        flush();
        const status: RunStatus = ending ?? (exitCode === 0 ? 'succeeded' : 'failed');
        writes.then(() => resolve({ status, exitCode, ...(endingCode ?? {}) }));
      };
      child.on('error', (error) => {
        pending.push({ stream: 'stderr', text: `could not start the sandbox: ${error.message}\n` });
        finish(null);
      });
      // A signalled process reports 128 + the signal number, as a shell would.
      child.on('close', (code, signal) => finish(code ?? (signal ? 128 + (os.constants.signals[signal] ?? 0) : null)));
    });
  }

  /**
   * attachNetwork waits for the sandbox's namespaces, installs the run uid's egress rules, starts slirp4netns
   * (as the run's uid, so the rules apply to every connection it makes for the run) and lets the sandbox go.
   */
  async function attachNetwork(child: ChildProcess, resources: RunResources): Promise<ChildProcess> {
    const uid = resources.uid!;
    (child.stdio as unknown as Writable[])[resolvConfFd]!.end(slirpResolvConf);
    await readLine(
      (child.stdio as unknown as Readable[])[readyFd]!,
      runSlirpReadyTimeoutMs,
      'the sandbox did not make its namespaces',
    );
    await isolation.egress!.open(uid, resources.egressDeny!);
    resources.egressOpen = true;
    const loopbackAllowed = isolation.egressAllow.some((rule) => rule.cidr.startsWith('127.'));
    const slirp = spawn(
      'setpriv',
      [
        `--reuid=${uid}`,
        `--regid=${uid}`,
        '--clear-groups',
        '--inh-caps=-all',
        '--bounding-set=-all',
        '--',
        'slirp4netns',
        '--configure',
        '--mtu=65520',
        '--enable-seccomp',
        // 10.0.2.2 reaches the host's loopback only when an allow entry opens a loopback destination (the egress
        // rules still decide which); otherwise slirp4netns refuses it itself as well.
        ...(loopbackAllowed ? [] : ['--disable-host-loopback']),
        '--ready-fd=3',
        `--userns-path=/proc/${child.pid}/ns/user`,
        String(child.pid),
        'tap0',
      ],
      { stdio: ['ignore', 'ignore', 'ignore', 'pipe'], detached: true },
    );
    slirp.on('error', () => undefined);
    try {
      await readLine(slirp.stdio[3] as Readable, runSlirpReadyTimeoutMs, 'slirp4netns did not come up', true);
    } catch (error) {
      signalGroup(slirp, 'SIGKILL');
      throw error;
    }
    (child.stdio as unknown as Writable[])[goFd]!.end('go\n');
    return slirp;
  }

  // One worker process of the cluster at a time deletes the records of runs past their retention (run-sweep.ts).
  // It also finishes runs left `running` whose job no worker holds any more (run-sweep.ts sweepLostRuns).
  const queue = new Queue<AgentRunJob>(agentRunQueueName, { connection: redis });
  queue.on('error', () => undefined);
  const sweeper = startRunSweeper(
    redis,
    store,
    (error) => options.onSweepError?.(error),
    options.runSweepIntervalMs,
    (runId) => queue.getJobState(runId),
  );
  // What a backend's runs left where they ran when a worker died (kubernetes-sweep.ts: unowned Secrets, Jobs of
  // ended runs): swept once as this worker starts, since a restarted worker is the usual sign of one that died,
  // then on one worker process of the cluster at a time. Names are logged, never contents.
  const backend = options.backend;
  let leftoverSweep: Promise<void> = Promise.resolve();
  let leftoverSweeper: LockedInterval | null = null;
  if (backend?.sweepLeftovers) {
    const sweepLeftovers = async () => {
      const outcome = await backend.sweepLeftovers!(
        async (runId) => (await readRun(store, runId))?.status ?? null,
        Date.now(),
        { onDeleted: (deletion) => log('runs.backend_leftover_deleted', { backend: backend.name, ...deletion }) },
      );
      if (outcome.secretsDeleted + outcome.jobsDeleted + outcome.conflicts > 0)
        log('runs.backend_leftover_sweep', { backend: backend.name, ...outcome });
    };
    leftoverSweep = sweepLeftovers().catch((error: unknown) => options.onSweepError?.(error));
    leftoverSweeper = startLockedInterval(
      redis,
      leftoverSweepLockKey,
      options.backendSweepIntervalMs ?? runKubernetesSweepIntervalMs,
      sweepLeftovers,
      (error) => options.onSweepError?.(error),
    );
  }

  return {
    isolation,
    async close(force = false) {
      sweeper.stop();
      leftoverSweeper?.stop();
      await leftoverSweep;
      if (force) {
        await worker.close(true);
        return;
      }
      for (const run of active.values()) run.cancel();
      await worker.close();
      await queue.close();
      await options.backend?.close?.();
      await workerConnection.quit().catch(() => workerConnection.disconnect());
      await subscriber.quit().catch(() => subscriber.disconnect());
      await redis.quit().catch(() => redis.disconnect());
      await staging?.then((stage) => stage.remove()).catch(() => undefined);
    },
  };
}

/** jobMismatch says how a job differs from what the API queues for this run, or null when it matches. */
function jobMismatch(job: Job, data: unknown, record: RunRecord): string | null {
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
function checkedWorkspace(workspace: string): string {
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

/** readLine resolves on the first data from stream (a line or, with anyData, any bytes); it rejects on EOF or timeout. */
function readLine(stream: Readable, timeoutMs: number, what: string, anyData = false): Promise<void> {
  return new Promise((resolve, reject) => {
    let text = '';
    const done = (error?: Error) => {
      clearTimeout(timer);
      stream.off('data', onData);
      stream.off('end', onEnd);
      if (error) reject(error);
      else resolve();
    };
    const onData = (chunk: Buffer) => {
      text += chunk.toString();
      if (anyData || text.includes('\n')) done();
    };
    const onEnd = () => done(new Error(`${what} (it closed)`));
    const timer = setTimeout(() => done(new Error(`${what} within ${timeoutMs} ms`)), timeoutMs);
    stream.on('data', onData);
    stream.on('end', onEnd);
  });
}

function signalGroup(child: RunProcess, signal: NodeJS.Signals): void {
  if (child.exitCode !== null || child.signalCode !== null) return;
  // A run elsewhere (no local process group) is stopped by its backend.
  if (child.pid === undefined) {
    if (!(child instanceof ChildProcessClass)) child.kill(signal);
    return;
  }
  try {
    process.kill(-child.pid, signal);
  } catch {
    child.kill(signal);
  }
}
