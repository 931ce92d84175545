// Starting a run's command: on a backend (kubernetes-backend.ts), or here in the bubblewrap sandbox
// (sandbox.ts) with exactly the environment and secret files the run is given, then slirp4netns for a networked
// run. signalGroup stops what was started.
import { ChildProcess as ChildProcessClass, spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import type { Readable, Writable } from 'node:stream';
import { runSlirpReadyTimeoutMs } from '../limits.js';
import type { ResolvedCredential } from './run-credentials.js';
import type { RunIsolation, RunResources } from './run-isolation.js';
import type { ReadOnlyMount, SandboxLimits, SandboxProject } from './sandbox.js';
import { agentBinDir, firstSecretFd, goFd, readyFd, resolvConfFd, sandboxCommand, slirpResolvConf } from './sandbox.js';
import type { RunBackend, RunProcess } from './run-backend.js';

/** RunStart is everything a run's command starts with. */
export interface RunStart {
  runId: string;
  project: SandboxProject;
  prompt: string;
  timeoutMs: number;
  limits: SandboxLimits;
  resources: RunResources;
  credentials: ResolvedCredential[];
  mounts: ReadOnlyMount[];
}

/** StartedRun is the run's process; localChild is it too when it is a sandbox on this host (null on a backend). */
export interface StartedRun {
  child: RunProcess;
  localChild: ChildProcess | null;
}

/**
 * startRunProcess starts the command. A configured backend (Kubernetes) runs it elsewhere, under its own
 * isolation, and injects the credentials itself; the slirp network is the local sandbox's.
 */
export function startRunProcess(backend: RunBackend | undefined, start: RunStart): StartedRun {
  const { runId, project, prompt, limits, timeoutMs, credentials } = start;
  if (backend) {
    const injected = credentials.map(({ as, target, value }) => ({ as, target, value }));
    return {
      child: backend.start({ runId, project, prompt, limits, timeoutMs, credentials: injected }),
      localChild: null,
    };
  }
  const spawned = spawnSandbox(start);
  return { child: spawned, localChild: spawned };
}

function spawnSandbox({ project, prompt, limits, resources, credentials, mounts }: RunStart): ChildProcess {
  const secretFiles = credentials.filter((credential) => credential.as === 'file');
  const command = sandboxCommand({
    project,
    prompt,
    limits,
    uid: resources.uid,
    cgroupProcsFiles: resources.cgroup?.procsFiles ?? [],
    network: project.network ? 'slirp' : 'none',
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
  return spawned;
}

/**
 * attachNetwork waits for the sandbox's namespaces, installs the run uid's egress rules, starts slirp4netns
 * (as the run's uid, so the rules apply to every connection it makes for the run) and lets the sandbox go.
 */
export async function attachNetwork(
  child: ChildProcess,
  resources: RunResources,
  isolation: RunIsolation,
): Promise<ChildProcess> {
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
  const slirp = spawn('setpriv', slirpArgs(uid, child.pid, loopbackAllowed), {
    stdio: ['ignore', 'ignore', 'ignore', 'pipe'],
    detached: true,
  });
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

/** slirpArgs runs slirp4netns for the sandbox whose pid is sandboxPid, as uid, with no capabilities. */
function slirpArgs(uid: number, sandboxPid: number | undefined, loopbackAllowed: boolean): string[] {
  return [
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
    `--userns-path=/proc/${sandboxPid}/ns/user`,
    String(sandboxPid),
    'tap0',
  ];
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

export function signalGroup(child: RunProcess, signal: NodeJS.Signals): void {
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
