// sandboxCommand builds the argv that runs a project's agent inside bubblewrap: its own user, PID, IPC, UTS,
// cgroup and (unless the project allows network) network namespaces; a read-only /usr and a few /etc files;
// a private /tmp; the workspace bind-mounted read-write as the working directory; no capabilities; a clean
// environment. prlimit outside bwrap sets the memory, CPU, file-size and open-file limits, which the sandbox
// inherits. Wall-clock time is the worker's to enforce (it kills the process).
import { existsSync } from 'node:fs';
import { runCpuSecondsMax, runFileBytesMax, runMemoryBytesMax, runOpenFilesMax } from '../limits.js';

export interface SandboxProject {
  workspace: string;
  command: string[];
  network: boolean;
}

export interface SandboxLimits {
  memoryBytesMax: number;
  cpuSecondsMax: number;
  fileBytesMax: number;
  openFilesMax: number;
}

export const defaultSandboxLimits: SandboxLimits = {
  memoryBytesMax: runMemoryBytesMax, cpuSecondsMax: runCpuSecondsMax,
  fileBytesMax: runFileBytesMax, openFilesMax: runOpenFilesMax,
};

/** sandboxEtcFiles are the only host /etc entries visible in the sandbox (read-only), when they exist. */
const sandboxEtcFiles = ['/etc/alternatives', '/etc/ld.so.cache', '/etc/ld.so.conf', '/etc/ld.so.conf.d',
  '/etc/ssl', '/etc/ca-certificates', '/etc/localtime', '/etc/nsswitch.conf', '/etc/passwd', '/etc/group'];
const networkEtcFiles = ['/etc/resolv.conf', '/etc/hosts'];

export function sandboxCommand(project: SandboxProject, prompt: string, limits: SandboxLimits = defaultSandboxLimits):
  { file: string; args: string[] } {
  const bwrap = ['bwrap', '--unshare-all', ...(project.network ? ['--share-net'] : []), '--die-with-parent',
    '--new-session', '--cap-drop', 'ALL', '--ro-bind', '/usr', '/usr',
    '--symlink', 'usr/bin', '/bin', '--symlink', 'usr/sbin', '/sbin', '--symlink', 'usr/lib', '/lib'];
  if (existsSync('/usr/lib64')) bwrap.push('--symlink', 'usr/lib64', '/lib64');
  for (const file of [...sandboxEtcFiles, ...(project.network ? networkEtcFiles : [])]) {
    if (existsSync(file)) bwrap.push('--ro-bind', file, file);
  }
  bwrap.push('--proc', '/proc', '--dev', '/dev', '--tmpfs', '/tmp',
    '--bind', project.workspace, project.workspace, '--chdir', project.workspace,
    '--clearenv', '--setenv', 'PATH', '/usr/local/bin:/usr/bin:/bin', '--setenv', 'HOME', '/tmp',
    '--setenv', 'LANG', 'C.UTF-8', '--', ...project.command, prompt);
  return {
    file: 'prlimit',
    args: [`--as=${limits.memoryBytesMax}`, `--cpu=${limits.cpuSecondsMax}`, `--fsize=${limits.fileBytesMax}`,
      `--nofile=${limits.openFilesMax}`, '--', ...bwrap],
  };
}
