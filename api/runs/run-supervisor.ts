// One started run, from its start to its exit: its output streamed (run-output-stream.ts), its limits watched
// (the timeout, the workspace quota), its network attached, and a cancel heard; the outcome says how it ended.
import type { ChildProcess } from 'node:child_process';
import os from 'node:os';
import type { Redis } from 'ioredis';
import { runKillGraceMs } from '../limits.js';
import type { DocumentStore } from '../../store/document-store.js';
import type { RunStatus } from './run-records.js';
import { readRun } from './run-records.js';
import type { RunIsolation } from './run-isolation.js';
import { workspaceBytes } from './run-isolation.js';
import { SecretMasker } from './secret-masker.js';
import type { RunBackend, RunProcess } from './run-backend.js';
import { RunOutputStream } from './run-output-stream.js';
import type { RunStart, StartedRun } from './run-sandbox-start.js';
import { attachNetwork, signalGroup, startRunProcess } from './run-sandbox-start.js';

/** ActiveRun is a run whose process is up, as the cancel channel and close() reach it. */
export interface ActiveRun {
  child: RunProcess;
  cancel(): void;
}

export interface RunOutcome {
  status: RunStatus;
  exitCode: number | null;
  /** code says why a run failed that its command did not fail itself (the quota, the network). */
  code?: string;
  message?: string;
}

/** RunSupervision is what the worker lends each run: its connections, its isolation and its table of runs. */
export interface RunSupervision {
  redis: Redis;
  store: DocumentStore;
  isolation: RunIsolation;
  backend: RunBackend | undefined;
  active: Map<string, ActiveRun>;
}

type EndReason = { code: string; message: string };

/** superviseRun starts the run's command and resolves with its outcome once its output is all appended. */
export function superviseRun(supervision: RunSupervision, start: RunStart): Promise<RunOutcome> {
  // Either way the output passes the masker.
  const masker = new SecretMasker(start.credentials.map((credential) => credential.value));
  const started = startRunProcess(supervision.backend, start);
  return new RunSupervisor(supervision, start, started, masker).supervise();
}

class RunSupervisor {
  /** ending is set by the first kill: the status the run ends with whatever its exit code. */
  private ending: RunStatus | null = null;
  private endingCode: EndReason | undefined;
  private slirp: ChildProcess | null = null;
  private readonly child: RunProcess;
  private readonly localChild: ChildProcess | null;

  constructor(
    private readonly supervision: RunSupervision,
    private readonly start: RunStart,
    started: StartedRun,
    private readonly masker: SecretMasker,
  ) {
    this.child = started.child;
    this.localChild = started.localChild;
  }

  supervise(): Promise<RunOutcome> {
    const { runId, timeoutMs, project } = this.start;
    const output = new RunOutputStream(this.supervision.redis, runId, this.masker);
    this.child.stdout!.on('data', output.collect('stdout'));
    this.child.stderr!.on('data', output.collect('stderr'));
    const timeout = setTimeout(() => this.kill('timed_out'), timeoutMs);
    this.supervision.active.set(runId, { child: this.child, cancel: () => this.kill('cancelled') });
    this.hearEarlyCancel();
    const quotaTimer = this.watchQuota();
    if (project.network && this.localChild) this.startNetwork(this.localChild);
    return this.waitForExit(output, () => {
      clearTimeout(timeout);
      clearInterval(quotaTimer);
    });
  }

  private kill(status: RunStatus, reason?: EndReason): void {
    if (this.ending !== null) return;
    this.ending = status;
    this.endingCode = reason;
    signalGroup(this.child, 'SIGTERM');
    setTimeout(() => {
      signalGroup(this.child, 'SIGKILL');
      this.start.resources.cgroup?.killAll();
    }, runKillGraceMs).unref();
  }

  /** A cancel that arrived between the claim's check and the run entering `active` was flagged but not heard. */
  private hearEarlyCancel(): void {
    void readRun(this.supervision.store, this.start.runId).then(
      (now) => {
        if (now?.cancel_requested) this.kill('cancelled');
      },
      () => undefined,
    );
  }

  /** The workspace quota: measured every interval; one measurement at a time. */
  private watchQuota(): NodeJS.Timeout {
    const { isolation } = this.supervision;
    let measuring = false;
    return setInterval(() => {
      if (measuring || !this.localChild) return;
      measuring = true;
      void workspaceBytes(this.start.project.workspace).then((bytes) => {
        measuring = false;
        if (bytes !== null && bytes > isolation.workspaceBytesMax) {
          this.kill('failed', {
            code: 'WORKSPACE_QUOTA_EXCEEDED',
            message: `the workspace grew to ${bytes} bytes, over the quota of ${isolation.workspaceBytesMax}`,
          });
        }
      });
    }, isolation.workspacePollMs);
  }

  private startNetwork(localChild: ChildProcess): void {
    void attachNetwork(localChild, this.start.resources, this.supervision.isolation).then(
      (started) => {
        this.slirp = started;
      },
      (error: Error) => {
        this.kill('failed', {
          code: 'NETWORK_SETUP_FAILED',
          message: `the run's network could not be set up: ${error.message}`,
        });
      },
    );
  }

  private waitForExit(output: RunOutputStream, stopTimers: () => void): Promise<RunOutcome> {
    return new Promise((resolve) => {
      let finished = false;
      const finish = (exitCode: number | null) => {
        if (finished) return;
        finished = true;
        stopTimers();
        output.stopFlushing();
        this.supervision.active.delete(this.start.runId);
        if (this.slirp) signalGroup(this.slirp, 'SIGKILL');
        const ended = output.end();
        const status: RunStatus = this.ending ?? (exitCode === 0 ? 'succeeded' : 'failed');
        // endingCode is read once the output is appended: a kill heard meanwhile (a late network failure) adds
        // its code to the status the exit gave.
        void ended.then(() => resolve({ status, exitCode, ...(this.endingCode ?? {}) }));
      };
      this.child.on('error', (error) => {
        output.pushStderr(`could not start the sandbox: ${error.message}\n`);
        finish(null);
      });
      // A signalled process reports 128 + the signal number, as a shell would.
      this.child.on('close', (code, signal) =>
        finish(code ?? (signal ? 128 + (os.constants.signals[signal] ?? 0) : null)),
      );
    });
  }
}
