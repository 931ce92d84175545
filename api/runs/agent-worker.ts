// The agent-run worker: a BullMQ Worker that runs each job's project command in the sandbox (sandbox.ts) and
// streams its output into the run's Redis stream, ending with a `complete` event. It can live in the API
// process or in its own; cancellation reaches it over a Redis channel. Each job goes through the stages of
// agent-run-pipeline.ts: claim → prepare workspace → isolate → start → stream → finish.
//
// A job carries ids only ({runId, projectId}). Everything that decides what runs, where and with what (the
// project's workspace, command, network flag and credentials; the prompt) is read from the replicated store,
// so a process that can write to Redis can at most start a run that was already queued, as it was queued. A
// job that does not match its run record is refused: the run fails with a `notice` whose code is JOB_MISMATCH.
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { appPath } from '../../layout/app-files.js';
import type { ApiLogger } from '../config.js';
import { silentApiLogger } from '../log.js';
import type { RunIsolation } from './run-isolation.js';
import { probeRunIsolation } from './run-isolation.js';
import type { ReadOnlyMount } from './sandbox.js';
import { agentMountPoint } from './sandbox.js';
import type { AgentStage } from './agent-stage.js';
import { agentStageRootDefault, checkAgentStageRoot, stageAgentMounts } from './agent-stage.js';
import type { AgentWorkerOptions } from './agent-worker-options.js';
import type { AgentMountsSource } from './agent-run-pipeline.js';
import { AgentWorkerRuntime } from './agent-run-pipeline.js';
import { RunRefusal } from './run-job-checks.js';
import { startWorkerSweeps } from './agent-worker-sweeps.js';

export type { AgentRunJob, AgentWorkerOptions } from './agent-worker-options.js';

/** referenceAgentDir is the reference agent shipped with the service (agent/), bound into every sandbox. */
export const referenceAgentDir = appPath('agent');

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

export async function startAgentWorker(options: AgentWorkerOptions): Promise<AgentWorker> {
  const log = options.log ?? silentApiLogger();
  const isolation = await probeWorkerIsolation(options, log);
  const agent = await stageAgent(options, isolation, log);
  let runtime: AgentWorkerRuntime;
  try {
    runtime = await AgentWorkerRuntime.start(options, log, isolation, agent.mounts);
  } catch (error) {
    // Stopped while it waited for Redis (options.signal), or Redis refused it: what this start set up goes.
    await options.backend?.close?.();
    await agent.staging?.then((stage) => stage.remove()).catch(() => undefined);
    throw error;
  }
  const sweeps = startWorkerSweeps(options, log, runtime.redis);
  return {
    isolation,
    async close(force = false) {
      await sweeps.stop();
      if (force) {
        await runtime.abandon();
        return;
      }
      await runtime.drain();
      await sweeps.closeQueue();
      await runtime.disconnect();
      await agent.staging?.then((stage) => stage.remove()).catch(() => undefined);
    },
  };
}

/**
 * probeWorkerIsolation finds what the host allows runs. A backend's runs are isolated where they run: this host's
 * uid, cgroup, egress filter and quota are not theirs.
 */
async function probeWorkerIsolation(options: AgentWorkerOptions, log: ApiLogger): Promise<RunIsolation> {
  const isolation = await probeRunIsolation(
    options.backend ? { ...options.isolation, probe: false } : { redisUrl: options.redisUrl, ...options.isolation },
  );
  if (isolation.egressProblem && !options.backend)
    log.warn(
      {
        event: 'runs.network_unavailable',
        reason: isolation.egressProblem,
        effect: 'runs of projects with network: true fail',
      },
      'agent runs cannot have a network on this host',
    );
  // Resolve the names to deny once now: a name that answers now is denied from then on even if DNS later fails.
  if (isolation.egress && !options.backend) {
    await isolation.egressDeny.resolve().catch((error: Error) =>
      log.warn(
        {
          event: 'runs.egress_deny_resolve_failed',
          reason: error.message,
          effect: 'runs of projects with network: true fail EGRESS_DENY_UNRESOLVED until the names resolve',
        },
        'the names networked runs are denied did not resolve',
      ),
    );
  }
  return isolation;
}

/**
 * stageAgent gives runs the agent to bind. Runs of their own uid read it from a copy (agent-stage.ts): the
 * checkout may sit in a private home. The stage root is checked now (a worker that could not stage does not
 * start); the copy is made in the background, so the API is up at once, and a run waits for it.
 */
async function stageAgent(
  options: AgentWorkerOptions,
  isolation: RunIsolation,
  log: ApiLogger,
): Promise<{ staging: Promise<AgentStage> | null; mounts: AgentMountsSource }> {
  const givenMounts = options.agentMounts ?? referenceAgentMounts();
  let staging: Promise<AgentStage> | null = null;
  if (isolation.root && !options.backend && givenMounts.length > 0) {
    const stageRoot = options.agentStageRoot ?? agentStageRootDefault(os.tmpdir());
    await checkAgentStageRoot(stageRoot);
    staging = stageAgentMounts(givenMounts, stageRoot);
    staging.catch((error: Error) =>
      log.error(
        { event: 'runs.agent_stage_failed', reason: error.message, effect: 'runs fail AGENT_STAGE_FAILED' },
        'the worker could not copy the agent for runs',
      ),
    );
  }
  const mounts = async (): Promise<ReadOnlyMount[]> => {
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
  return { staging, mounts };
}
