// sandboxCommand builds the argv that runs a project's agent inside bubblewrap, as a browser or a CI runner
// would isolate it:
//   - its own host uid (run-uid.ts) when the worker is root: `setpriv` drops to it (no groups, no capabilities,
//     no new privileges) before bubblewrap, which then makes an unprivileged user namespace; the sandbox's
//     uid is that same uid, never host root;
//   - new user, PID, IPC, UTS, cgroup, mount and network namespaces (a network namespace even with network:
//     the agent's traffic then goes through slirp4netns and the egress filter, egress-filter.ts);
//   - a read-only root, /usr and a few /etc files; a private /tmp of runTmpBytesMax (and small /dev/shm, /run);
//     /run/secrets for credential files; the reference agent read-only at /opt/svc-agent; the workspace bind-mounted read-write as the
//     working directory; no capabilities;
//   - the environment is exactly `env` (PATH, HOME, LANG and the project's credentials): secrets travel in the
//     environment and in pipes, never on an argv (which any local user can read in /proc);
//   - the run's cgroup (run-cgroup.ts): a tiny shell wrapper moves itself into it before it execs anything;
//   - rlimits via prlimit: data segment (not address space: V8 reserves far more than it uses), CPU seconds,
//     file size, open files and, with a run uid, processes.
// Wall-clock time and the workspace quota are the worker's to enforce (it kills the process group).
import { existsSync } from 'node:fs';
import {
  runCpuSecondsMax,
  runFileBytesMax,
  runMemoryBytesMax,
  runOpenFilesMax,
  runProcessesMax,
  runRunDirBytesMax,
  runShmBytesMax,
  runTmpBytesMax,
} from '../limits.js';

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
  processesMax: number;
  tmpBytesMax: number;
}

export const defaultSandboxLimits: SandboxLimits = {
  memoryBytesMax: runMemoryBytesMax,
  cpuSecondsMax: runCpuSecondsMax,
  fileBytesMax: runFileBytesMax,
  openFilesMax: runOpenFilesMax,
  processesMax: runProcessesMax,
  tmpBytesMax: runTmpBytesMax,
};

/** sandboxEtcFiles are the only host /etc entries visible in the sandbox (read-only), when they exist. */
const sandboxEtcFiles = [
  '/etc/alternatives',
  '/etc/ld.so.cache',
  '/etc/ld.so.conf',
  '/etc/ld.so.conf.d',
  '/etc/ssl',
  '/etc/ca-certificates',
  '/etc/localtime',
  '/etc/nsswitch.conf',
  '/etc/passwd',
  '/etc/group',
  '/etc/gitconfig',
];
const networkEtcFiles = ['/etc/hosts'];

/**
 * agentMountPoint is where the reference agent appears in every sandbox: agent/ of this repository at
 * <agentMountPoint>/app (its command in app/bin, on the sandbox's PATH) and the `openai` package it imports at
 * <agentMountPoint>/node_modules/openai, both read-only.
 */
export const agentMountPoint = '/opt/svc-agent';
export const agentBinDir = `${agentMountPoint}/app/bin`;

export interface ReadOnlyMount {
  source: string;
  target: string;
}
/** secretsDir holds credential files in the sandbox (a tmpfs; each file read-only). */
export const secretsDir = '/run/secrets';
/** slirpResolvConf points the sandbox at slirp4netns's DNS forwarder (its 10.0.2.3). */
export const slirpResolvConf = 'nameserver 10.0.2.3\n';

export interface SandboxPlan {
  project: SandboxProject;
  prompt: string;
  limits: SandboxLimits;
  /** uid is the run's own host uid, or null to run as this process's user (a worker that is not root). */
  uid: number | null;
  /** cgroupProcsFiles are written with the sandbox's pid before it starts (empty: no cgroup). */
  cgroupProcsFiles: string[];
  /**
   * network 'slirp' (needs a uid): the sandbox gets a network namespace of its own user namespace, says so on
   * readyFd, and waits for a line on goFd while the worker attaches slirp4netns to it. 'none': loopback only.
   */
  network: 'none' | 'slirp';
  /** secretFileNames get a file each under secretsDir, read from the fds after the fixed ones, in order. */
  secretFileNames: string[];
  /** readOnlyMounts are bound read-only (the reference agent: agent-worker.ts's referenceAgentMounts). */
  readOnlyMounts: ReadOnlyMount[];
}

/** The sandbox command's fds after stdio; unused ones are not opened in the child (`ignore`). */
export const readyFd = 3;
export const goFd = 4;
export const resolvConfFd = 5;
/** firstSecretFd is the fd of the first secret file (then one per file, in secretFileNames order). */
export const firstSecretFd = 6;

export interface SandboxCommand {
  file: string;
  args: string[];
  /** stdio for spawn: stdin ignored, stdout and stderr piped, then the fds above (pipe or ignore). */
  stdio: Array<'ignore' | 'pipe'>;
}

export function sandboxCommand(plan: SandboxPlan): SandboxCommand {
  const { project, limits } = plan;
  if (plan.network === 'slirp' && plan.uid === null) throw new Error('a networked sandbox needs a run uid');
  const bwrap = [
    'bwrap',
    '--unshare-all',
    ...(plan.network === 'slirp' ? ['--share-net'] : []),
    '--die-with-parent',
    '--new-session',
    '--cap-drop',
    'ALL',
    '--ro-bind',
    '/usr',
    '/usr',
    '--symlink',
    'usr/bin',
    '/bin',
    '--symlink',
    'usr/sbin',
    '/sbin',
    '--symlink',
    'usr/lib',
    '/lib',
  ];
  if (existsSync('/usr/lib64')) bwrap.push('--symlink', 'usr/lib64', '/lib64');
  for (const file of [...sandboxEtcFiles, ...(project.network ? networkEtcFiles : [])]) {
    if (existsSync(file)) bwrap.push('--ro-bind', file, file);
  }
  // Every writable place is sized: /tmp, /dev/shm and /run are capped tmpfs mounts, and the sandbox's root and
  // /dev (bubblewrap's own unsized tmpfs mounts) are made read-only once everything is mounted.
  bwrap.push(
    '--proc',
    '/proc',
    '--dev',
    '/dev',
    '--size',
    String(runShmBytesMax),
    '--tmpfs',
    '/dev/shm',
    '--size',
    String(limits.tmpBytesMax),
    '--tmpfs',
    '/tmp',
    '--size',
    String(runRunDirBytesMax),
    '--tmpfs',
    '/run',
    '--dir',
    secretsDir,
  );
  if (plan.network === 'slirp') bwrap.push('--ro-bind-data', String(resolvConfFd), '/etc/resolv.conf');
  plan.secretFileNames.forEach((name, index) => {
    bwrap.push('--ro-bind-data', String(firstSecretFd + index), `${secretsDir}/${name}`);
  });
  for (const mount of plan.readOnlyMounts) bwrap.push('--ro-bind', mount.source, mount.target);
  bwrap.push(
    '--bind',
    project.workspace,
    project.workspace,
    '--chdir',
    project.workspace,
    '--remount-ro',
    '/dev',
    '--remount-ro',
    '/',
    '--setenv',
    'PWD',
    project.workspace,
    '--',
    ...project.command,
    plan.prompt,
  );

  const rlimits = [
    `--data=${limits.memoryBytesMax}`,
    `--cpu=${limits.cpuSecondsMax}`,
    `--fsize=${limits.fileBytesMax}`,
    `--nofile=${limits.openFilesMax}`,
    ...(plan.uid !== null ? [`--nproc=${limits.processesMax}`] : []),
  ];
  const dropToRunUid =
    plan.uid === null
      ? []
      : [
          'setpriv',
          `--reuid=${plan.uid}`,
          `--regid=${plan.uid}`,
          '--clear-groups',
          '--inh-caps=-all',
          '--bounding-set=-all',
          '--no-new-privs',
          '--',
        ];
  // With network, a user namespace (mapping the run uid to itself) and a network namespace owned by it come
  // first, so that slirp4netns, running as the same uid, may join them (bubblewrap's own namespaces nest one
  // user namespace deeper, which slirp4netns cannot enter); the shell says `ready`, waits for `go`, closes both
  // fds and becomes bubblewrap, which shares that network namespace.
  const waitForNetwork =
    plan.network === 'slirp'
      ? [
          'unshare',
          '--user',
          `--map-user=${plan.uid}`,
          `--map-group=${plan.uid}`,
          '--net',
          '--',
          '/bin/sh',
          '-c',
          `echo ready >&${readyFd}; read -r go <&${goFd}; exec ${readyFd}>&- ${goFd}<&-; exec "$@"`,
          'sh',
        ]
      : [];
  const chain = [...dropToRunUid, 'prlimit', ...rlimits, '--', ...waitForNetwork, ...bwrap];
  const networked = plan.network === 'slirp' ? 'pipe' : 'ignore';
  const stdio: SandboxCommand['stdio'] = [
    'ignore',
    'pipe',
    'pipe',
    networked,
    networked,
    networked,
    ...plan.secretFileNames.map(() => 'pipe' as const),
  ];
  if (plan.cgroupProcsFiles.length === 0) return { file: chain[0]!, args: chain.slice(1), stdio };
  // The wrapper joins the run's cgroups first (its pid, so every process it becomes or starts is inside),
  // and gives up (125) rather than run outside them.
  const joinCgroups = 'while [ "$1" != -- ]; do echo $$ > "$1" || exit 125; shift; done; shift; exec "$@"';
  return { file: '/bin/sh', args: ['-c', joinCgroups, 'sh', ...plan.cgroupProcsFiles, '--', ...chain], stdio };
}
