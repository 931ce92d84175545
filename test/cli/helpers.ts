// Helpers for the `svc` command's tests: run bin/svc.js as a user would (its own process, any
// working directory), capture its output, wait on conditions with a bound, and find processes
// left behind.
import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { fetch as undiciFetch, type Dispatcher } from 'undici';
import type { NodeTls } from '../../cli/node/config.js';
import { waitFor as pollFor } from '../node/harness.js';

export const SVC_BIN = fileURLToPath(new URL('../../bin/svc.js', import.meta.url));
/** POLL_INTERVAL_MS paces every wait: conditions are polled, never slept on. */
export const POLL_INTERVAL_MS = 50;
/** CLI_RUN_TIMEOUT_MS bounds one short svc command (tsx compiles on the fly; two shared cores). */
export const CLI_RUN_TIMEOUT_MS = 60_000;

export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** tlsTargetArgs are an svc admin command's mutual TLS flags for a certificate of the tests' PKI (issued for localhost). */
export function tlsTargetArgs(tls: NodeTls): string[] {
  if (tls.mode !== 'mtls') throw new Error(`mutual TLS material expected, not ${tls.mode}`);
  return [
    '--tls-ca',
    tls.caFile,
    '--tls-cert',
    tls.certFile,
    '--tls-key',
    tls.keyFile,
    '--tls-server-name',
    'localhost',
  ];
}

/** runCli runs one svc command to its end (SIGKILL after timeoutMs). */
export function runCli(
  args: string[],
  options: { cwd?: string; nodeArgs?: string[]; timeoutMs?: number; env?: NodeJS.ProcessEnv } = {},
): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, [...(options.nodeArgs ?? []), SVC_BIN, ...args], {
      cwd: options.cwd,
      env: options.env ?? process.env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    proc.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    proc.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const timer = setTimeout(() => proc.kill('SIGKILL'), options.timeoutMs ?? CLI_RUN_TIMEOUT_MS);
    proc.once('error', reject);
    proc.once('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
}

/** LongRunning is a svc command that keeps running (cluster, node), its output collected. */
export class LongRunning {
  stdout = '';
  stderr = '';
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  private exitedAlready = false;

  constructor(readonly proc: ChildProcess) {
    proc.stdout?.on('data', (chunk: Buffer) => {
      this.stdout += chunk.toString();
    });
    proc.stderr?.on('data', (chunk: Buffer) => {
      this.stderr += chunk.toString();
    });
    this.exited = new Promise((resolve) =>
      proc.once('close', (code, signal) => {
        this.exitedAlready = true;
        resolve({ code, signal });
      }),
    );
  }

  static start(args: string[], cwd: string): LongRunning {
    return new LongRunning(spawn(process.execPath, [SVC_BIN, ...args], { cwd, stdio: ['ignore', 'pipe', 'pipe'] }));
  }

  get running(): boolean {
    return !this.exitedAlready;
  }

  async waitOutput(pattern: RegExp, what: string, timeoutMs: number): Promise<void> {
    await waitFor(
      () => {
        if (pattern.test(this.stdout) || pattern.test(this.stderr)) return true;
        if (!this.running) throw new Error(`exited before ${what}: stdout ${this.stdout}\nstderr ${this.stderr}`);
        return false;
      },
      what,
      timeoutMs,
      false,
    );
  }

  /** exitWithin resolves with the exit, or null when the process is still running after timeoutMs. */
  async exitWithin(timeoutMs: number): Promise<{ code: number | null; signal: NodeJS.Signals | null } | null> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<null>((resolve) => {
      timer = setTimeout(() => resolve(null), timeoutMs);
    });
    try {
      return await Promise.race([this.exited, late]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** kill ends the process at once (test cleanup). */
  kill(): void {
    if (this.running) this.proc.kill('SIGKILL');
  }
}

/** waitFor polls condition at POLL_INTERVAL_MS until it holds, failing after timeoutMs with what it waited for. */
export function waitFor(
  condition: () => boolean | Promise<boolean>,
  what: string,
  timeoutMs: number,
  swallow = true,
): Promise<void> {
  return pollFor(condition, what, timeoutMs, { intervalMs: POLL_INTERVAL_MS, swallow });
}

export async function tempDir(prefix: string): Promise<string> {
  return mkdtemp(join(tmpdir(), `svc-cli-${prefix}-`));
}

export async function removeDir(dir: string): Promise<void> {
  await rm(dir, { recursive: true, force: true });
}

export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** processesMentioning lists live processes whose command line contains text (e.g. a test's temp dir). */
export function processesMentioning(text: string): Array<{ pid: number; cmdline: string }> {
  const found: Array<{ pid: number; cmdline: string }> = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    try {
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0').join(' ');
      if (cmdline.includes(text)) found.push({ pid: Number(entry), cmdline });
    } catch {
      // gone meanwhile
    }
  }
  return found;
}

/**
 * httpStatus answers a GET's status, 0 when nothing answered. `dispatcher` is an undici Agent for HTTPS with the
 * cluster's own CA (undici's fetch is used: the Agent and the fetch come from one undici).
 */
export async function httpStatus(
  url: string,
  headers: Record<string, string> = {},
  dispatcher?: Dispatcher,
): Promise<number> {
  try {
    const response = await undiciFetch(url, {
      headers,
      signal: AbortSignal.timeout(3_000),
      ...(dispatcher ? { dispatcher } : {}),
    });
    await response.arrayBuffer();
    return response.status;
  } catch {
    return 0;
  }
}
