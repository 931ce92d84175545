// The agent-run worker: a BullMQ Worker that runs each job's project command in the bubblewrap sandbox and
// streams its output into the run's Redis stream, ending with a `complete` event. It can live in the API
// process or in its own; cancellation reaches it over a Redis channel.
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { statSync } from 'node:fs';
import os from 'node:os';
import { Worker } from 'bullmq';
import type { Job } from 'bullmq';
import { Redis } from 'ioredis';
import { startRunSweeper } from './run-sweep.js';
import { agentRunQueueName } from '../config.js';
import {
  runConcurrencyDefault, runKillGraceMs, runOutputBytesMax, runOutputChunkBytesMax, runOutputFlushMs,
  runTimeoutMsDefault,
} from '../limits.js';
import type { DocumentStore } from '../../store/document-store.js';
import type { RunStatus } from './run-records.js';
import { appendRunEvent, finishRun, readRun, runKeys, updateRun } from './run-records.js';
import type { SandboxLimits, SandboxProject } from './sandbox.js';
import { defaultSandboxLimits, sandboxCommand } from './sandbox.js';

export interface AgentRunJob {
  runId: string;
  project: SandboxProject & { id: string };
  prompt: string;
}

export interface AgentWorkerOptions {
  redisUrl: string;
  /** store holds the run records (the API's store: on a cluster, the node's replicated store). */
  store: DocumentStore;
  concurrency?: number;
  runTimeoutMs?: number;
  limits?: SandboxLimits;
  /** runSweepIntervalMs paces the sweep of run records past their retention (default runSweepIntervalMs). */
  runSweepIntervalMs?: number;
  /** onSweepError hears a failed sweep (the next interval tries again). */
  onSweepError?: (error: unknown) => void;
}

export interface AgentWorker {
  close(): Promise<void>;
}

interface ActiveRun {
  child: ChildProcess;
  cancel(): void;
}

export async function startAgentWorker(options: AgentWorkerOptions): Promise<AgentWorker> {
  const { store } = options;
  const redis = new Redis(options.redisUrl, { maxRetriesPerRequest: 3 });
  const subscriber = new Redis(options.redisUrl, { maxRetriesPerRequest: null });
  redis.on('error', () => undefined);
  subscriber.on('error', () => undefined);
  const active = new Map<string, ActiveRun>();
  await subscriber.subscribe(runKeys.cancelChannel);
  subscriber.on('message', (_channel, runId: string) => active.get(runId)?.cancel());

  // BullMQ does not close a connection it was given, so the worker keeps it to close it.
  const workerConnection = new Redis(options.redisUrl, { maxRetriesPerRequest: null });
  workerConnection.on('error', () => undefined);
  const worker = new Worker<AgentRunJob>(agentRunQueueName, (job) => runJob(job), {
    connection: workerConnection,
    concurrency: options.concurrency ?? runConcurrencyDefault,
  });
  worker.on('error', () => undefined);

  async function runJob(job: Job<AgentRunJob>): Promise<{ status: RunStatus; exitCode: number | null }> {
    const { runId, project, prompt } = job.data;
    const startedMs = performance.now();
    const record = await readRun(store, runId);
    if (!record || record.status !== 'queued') return { status: record?.status ?? 'cancelled', exitCode: null };
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
    await appendRunEvent(redis, runId, { event: 'started', data: { startedAt: current.started_at ?? new Date().toISOString() } });

    let workspaceIsDirectory: boolean;
    try {
      workspaceIsDirectory = statSync(project.workspace).isDirectory();
    } catch {
      workspaceIsDirectory = false;
    }
    if (!workspaceIsDirectory) {
      await appendRunEvent(redis, runId, { event: 'notice', data: { message: 'the workspace directory does not exist' } });
      await finishRun(store, redis, runId, 'failed', null, Math.round(performance.now() - startedMs));
      throw new Error('workspace missing');
    }

    const outcome = await runSandboxed(runId, project, prompt, options.runTimeoutMs ?? runTimeoutMsDefault,
      options.limits ?? defaultSandboxLimits);
    await finishRun(store, redis, runId, outcome.status, outcome.exitCode, Math.round(performance.now() - startedMs));
    if (outcome.status !== 'succeeded') throw new Error(`run ${outcome.status}`);
    return outcome;
  }

  function runSandboxed(runId: string, project: SandboxProject, prompt: string, timeoutMs: number,
    limits: SandboxLimits): Promise<{ status: RunStatus; exitCode: number | null }> {
    const { file, args } = sandboxCommand(project, prompt, limits);
    const child = spawn(file, args, { stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    let ending: RunStatus | null = null;
    let outputBytes = 0;
    let truncated = false;
    const pending: Array<{ stream: 'stdout' | 'stderr'; text: string }> = [];
    let writes = Promise.resolve();

    const flush = () => {
      const batch = pending.splice(0);
      writes = writes.then(async () => {
        for (const item of batch) await appendRunEvent(redis, runId, { event: 'output', data: item });
      }).catch(() => undefined);
    };
    const flushTimer = setInterval(flush, runOutputFlushMs);
    const collect = (stream: 'stdout' | 'stderr') => (chunk: Buffer) => {
      if (outputBytes >= runOutputBytesMax) {
        if (!truncated) {
          truncated = true;
          writes = writes.then(() => appendRunEvent(redis, runId, { event: 'notice',
            data: { message: `output beyond ${runOutputBytesMax} bytes was dropped` } })).then(() => undefined, () => undefined);
        }
        return;
      }
      const kept = chunk.subarray(0, runOutputBytesMax - outputBytes);
      outputBytes += kept.length;
      for (let offset = 0; offset < kept.length; offset += runOutputChunkBytesMax) {
        const text = kept.subarray(offset, offset + runOutputChunkBytesMax).toString('utf8');
        const last = pending.at(-1);
        if (last && last.stream === stream && last.text.length + text.length <= runOutputChunkBytesMax) last.text += text;
        else pending.push({ stream, text });
      }
    };
    child.stdout!.on('data', collect('stdout'));
    child.stderr!.on('data', collect('stderr'));

    const kill = (status: RunStatus) => {
      if (ending !== null) return;
      ending = status;
      signalGroup(child, 'SIGTERM');
      setTimeout(() => signalGroup(child, 'SIGKILL'), runKillGraceMs).unref();
    };
    const timeout = setTimeout(() => kill('timed_out'), timeoutMs);
    active.set(runId, { child, cancel: () => kill('cancelled') });
    // A cancel that arrived between the check in runJob and the line above was flagged but not heard.
    void readRun(store, runId).then((now) => { if (now?.cancel_requested) kill('cancelled'); }, () => undefined);

    return new Promise((resolve) => {
      let finished = false;
      const finish = (exitCode: number | null) => {
        if (finished) return;
        finished = true;
        clearTimeout(timeout);
        clearInterval(flushTimer);
        active.delete(runId);
        flush();
        const status: RunStatus = ending ?? (exitCode === 0 ? 'succeeded' : 'failed');
        writes.then(() => resolve({ status, exitCode }));
      };
      child.on('error', (error) => {
        pending.push({ stream: 'stderr', text: `could not start the sandbox: ${error.message}\n` });
        finish(null);
      });
      // A signalled process reports 128 + the signal number, as a shell would.
      child.on('close', (code, signal) => finish(code ?? (signal ? 128 + (os.constants.signals[signal] ?? 0) : null)));
    });
  }

  // One worker process of the cluster at a time deletes the records of runs past their retention (run-sweep.ts).
  const sweeper = startRunSweeper(redis, store, (error) => options.onSweepError?.(error), options.runSweepIntervalMs);

  return {
    async close() {
      sweeper.stop();
      for (const run of active.values()) run.cancel();
      await worker.close();
      await workerConnection.quit().catch(() => workerConnection.disconnect());
      await subscriber.quit().catch(() => subscriber.disconnect());
      await redis.quit().catch(() => redis.disconnect());
    },
  };
}

function signalGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
  try {
    process.kill(-child.pid, signal);
  } catch {
    child.kill(signal);
  }
}
