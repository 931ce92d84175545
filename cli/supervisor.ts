// Supervisor runs each node of the local cluster as a child process (`svc node --config FILE`),
// its output appended to the node's log file. Children get their own process group, so a Ctrl-C
// in the terminal reaches the supervisor alone and each child hears exactly one SIGTERM from it;
// the IPC channel lets a child notice that the supervisor died and stop by itself.
import { spawn, type ChildProcess } from 'node:child_process';
import { openSync, closeSync } from 'node:fs';
import { appPath } from '../layout/app-files.js';

/** SVC_BIN is the launcher the children run, so they start exactly as a user's `svc node` would. */
export const SVC_BIN = appPath('bin/svc.js');

export interface ChildExit {
  name: string;
  code: number | null;
  signal: NodeJS.Signals | null;
}

export class SupervisedNode {
  readonly exited: Promise<ChildExit>;
  private exitInfo: ChildExit | null = null;

  private constructor(
    readonly name: string,
    private readonly proc: ChildProcess,
  ) {
    this.exited = new Promise((resolve) => {
      proc.once('exit', (code, signal) => {
        this.exitInfo = { name, code, signal };
        resolve(this.exitInfo);
      });
    });
  }

  /** start runs `svc node --config configFile`; nodeOptions go to node itself (e.g. --cpu-prof). */
  static start(name: string, configFile: string, logFile: string, nodeOptions: string[] = []): SupervisedNode {
    return SupervisedNode.spawn(name, [...nodeOptions, SVC_BIN, 'node', '--config', configFile], logFile);
  }

  /** spawn runs node with args (the supervisor's own use is start()). */
  static spawn(name: string, args: string[], logFile: string): SupervisedNode {
    const log = openSync(logFile, 'a', 0o644);
    try {
      const proc = spawn(process.execPath, args, {
        stdio: ['ignore', log, log, 'ipc'],
        detached: true,
        env: process.env,
      });
      // An 'error' (spawn failed) is followed by 'exit' or leaves pid undefined; both read as exited.
      proc.on('error', () => undefined);
      return new SupervisedNode(name, proc);
    } finally {
      closeSync(log);
    }
  }

  get pid(): number {
    return this.proc.pid ?? 0;
  }

  get running(): boolean {
    return this.exitInfo === null && this.proc.pid !== undefined;
  }

  signal(signal: NodeJS.Signals): void {
    if (this.running) this.proc.kill(signal);
  }

  /** stop sends SIGTERM, then SIGKILL after graceMs; it resolves when the process has exited (bounded by killWaitMs more). */
  async stop(graceMs: number, killWaitMs: number): Promise<ChildExit | null> {
    if (!this.running) return this.exitInfo;
    this.signal('SIGTERM');
    const graceful = await within(this.exited, graceMs);
    if (graceful) return graceful;
    this.signal('SIGKILL');
    return within(this.exited, killWaitMs);
  }
}

async function within<T>(promise: Promise<T>, timeoutMs: number): Promise<T | null> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<null>((resolve) => {
    timer = setTimeout(() => resolve(null), timeoutMs);
  });
  try {
    return await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
  }
}
