// What this host lets the worker do to isolate a run, found once when the worker starts (probeRunIsolation), and
// the per-run half: a uid of its own, a cgroup, the egress rules, the workspace handed to the run's uid and
// back. describe() is what the run's `started` event states, so a user sees which limits hold and how.
import { execFile, spawnSync } from 'node:child_process';
import { readFileSync, statSync } from 'node:fs';
import type { CgroupHost, RunCgroup } from './run-cgroup.js';
import { createRunCgroup, probeCgroupHost } from './run-cgroup.js';
import type { EgressFilter, EgressRule } from './egress-filter.js';
import { installEgressFilter, parseEgressRule, standingDenialsText } from './egress-filter.js';
import type { EgressDenyList, HostResolver, ResolvedDeny } from './egress-deny.js';
import { egressDenyList, ruleText } from './egress-deny.js';
import type { RunUid, RunUidRange } from './run-uid.js';
import { claimRunUid, defaultRunUidRange } from './run-uid.js';
import type { SandboxLimits } from './sandbox.js';
import { runCpuCoresMax, runWorkspaceBytesMax, runWorkspacePollMs } from '../limits.js';

export interface RunIsolationOptions {
  /** uidRange of per-run uids (default run-uid.ts's); only used when the worker is root. */
  uidRange?: RunUidRange;
  /** egressAllow: `ip[/len][:port]` destinations a networked run may reach past the standing denials. */
  egressAllow?: string[];
  /** egressDeny: more destinations no run may reach: `ip[/len][:port]` or `name[:port]` (egress-deny.ts). */
  egressDeny?: string[];
  /** clusterAddresses answers the cluster members' addresses now (a node's live roster); their hosts are denied. */
  clusterAddresses?: () => readonly string[];
  /** redisUrl's host is denied too. */
  redisUrl?: string;
  /** resolveHost resolves the names to deny (default: dns.lookup; tests give their own). */
  resolveHost?: HostResolver;
  /** cgroupRoot stands for `/` when looking for cgroup hierarchies (default `/`; see run-cgroup.ts). */
  cgroupRoot?: string;
  cpuCoresMax?: number;
  workspaceBytesMax?: number;
  workspacePollMs?: number;
  /** probe false skips cgroups, uids and the egress filter (a worker that must not touch the host). */
  probe?: boolean;
}

export interface RunIsolation {
  root: boolean;
  cgroups: CgroupHost | null;
  egress: EgressFilter | null;
  /** egressProblem says why networked runs are refused (no slirp4netns, no iptables, not root), or null. */
  egressProblem: string | null;
  egressAllow: EgressRule[];
  /** egressDeny answers, when a networked run starts, what it may not reach beyond the standing denials. */
  egressDeny: EgressDenyList;
  uidRange: RunUidRange;
  cpuCoresMax: number;
  workspaceBytesMax: number;
  workspacePollMs: number;
}

export async function probeRunIsolation(options: RunIsolationOptions = {}): Promise<RunIsolation> {
  const root = options.probe !== false && process.getuid?.() === 0;
  const uidRange = options.uidRange ?? defaultRunUidRange();
  const egressAllow = (options.egressAllow ?? []).map(parseEgressRule);
  const egressDeny = egressDenyList({
    configured: options.egressDeny ?? [],
    ...(options.clusterAddresses ? { clusterAddresses: options.clusterAddresses } : {}),
    ...(options.redisUrl ? { redisUrl: options.redisUrl } : {}),
    ...(options.resolveHost ? { resolve: options.resolveHost } : {}),
  });
  let egress: EgressFilter | null = null;
  let egressProblem: string | null = null;
  if (!root) egressProblem = 'the worker is not root: no per-run uid to filter by';
  else if (!commandWorks('slirp4netns', ['--version'])) egressProblem = 'slirp4netns is not installed';
  else if (!commandWorks('unshare', ['--version'])) egressProblem = 'unshare (util-linux) is not installed';
  else {
    try {
      egress = await installEgressFilter({
        uidFirst: uidRange.first,
        uidCount: uidRange.count,
        allow: egressAllow,
        dnsServers: hostNameservers(),
      });
    } catch (error) {
      egressProblem = `the egress filter could not be installed: ${(error as Error).message}`;
    }
  }
  return {
    root,
    cgroups: options.probe === false ? null : probeCgroupHost(options.cgroupRoot),
    egress,
    egressProblem,
    egressAllow,
    egressDeny,
    uidRange,
    cpuCoresMax: options.cpuCoresMax ?? runCpuCoresMax,
    workspaceBytesMax: options.workspaceBytesMax ?? runWorkspaceBytesMax,
    workspacePollMs: options.workspacePollMs ?? runWorkspacePollMs,
  };
}

function commandWorks(file: string, args: string[]): boolean {
  return spawnSync(file, args, { stdio: 'ignore', timeout: 5000 }).status === 0;
}

function hostNameservers(): string[] {
  try {
    return readFileSync('/etc/resolv.conf', 'utf8')
      .split('\n')
      .map((line) => /^\s*nameserver\s+(\S+)/.exec(line)?.[1])
      .filter((value): value is string => value !== undefined);
  } catch {
    return [];
  }
}

/** RunResources are what one run holds while it runs; release() gives all of it back (idempotent). */
export interface RunResources {
  uid: number | null;
  cgroup: RunCgroup | null;
  /** egressOpen: the run's uid has its egress rules. */
  egressOpen: boolean;
  /** egressDeny is what a networked run is denied beyond the standing denials (resolved as it starts), or null. */
  egressDeny: ResolvedDeny | null;
  release(): Promise<void>;
}

/** acquireRunResources claims a uid and makes the cgroup; a failure releases what was taken and throws. */
export function acquireRunResources(isolation: RunIsolation, runId: string, limits: SandboxLimits): RunResources {
  let uid: RunUid | null = null;
  let cgroup: RunCgroup | null = null;
  const resources: RunResources = {
    uid: null,
    cgroup: null,
    egressOpen: false,
    egressDeny: null,
    async release() {
      if (resources.egressOpen && uid) await isolation.egress?.close(uid.uid).catch(() => undefined);
      resources.egressOpen = false;
      if (cgroup) {
        cgroup.killAll();
        await cgroup.remove();
        cgroup = null;
      }
      uid?.release();
      uid = null;
    },
  };
  try {
    if (isolation.root) uid = claimRunUid(isolation.uidRange);
    if (isolation.cgroups) {
      cgroup = createRunCgroup(isolation.cgroups, runId, {
        memoryBytesMax: limits.memoryBytesMax,
        processesMax: limits.processesMax,
        cpuCoresMax: isolation.cpuCoresMax,
      });
    }
  } catch (error) {
    void resources.release();
    throw error;
  }
  resources.uid = uid?.uid ?? null;
  resources.cgroup = cgroup;
  return resources;
}

/** SandboxStatement is the `sandbox` field of a run's `started` event. */
export interface SandboxStatement {
  /** backend is where the run ran: `bubblewrap` on the worker's host, or `kubernetes` (a Job per run). */
  backend: string;
  uid: number | null;
  network: 'none' | 'egress-filtered';
  limits: {
    memoryBytes: number;
    processes: number;
    cpuCores: number | null;
    cpuSecondsPerProcess: number;
    tmpBytes: number;
    workspaceBytes: number;
    fileBytes: number;
    openFiles: number;
    wallMs: number;
  };
  /** enforcement says by what each limit holds on this host. */
  enforcement: { memory: string; processes: string; cpu: string; workspace: string; user: string };
  /** egress is what a networked run may and may not reach (bubblewrap runs with network only). */
  egress?: EgressStatement;
}

export interface EgressStatement {
  /** allowed are the allow entries, reachable past the denials. */
  allowed: string[];
  /** deniedServices: the members' advertised ports and the Redis port, which no allow entry opens (IPv4). */
  deniedServices: string[];
  /** denied: the standing denials, then this run's (configured, the cluster's members, Redis), IPv4. */
  denied: string[];
  /** resolved: the names behind denied entries and their addresses when the run started (`stale`: kept). */
  resolved: ResolvedDeny['names'];
  ipv6: string;
}

export function describeSandbox(
  isolation: RunIsolation,
  resources: RunResources,
  limits: SandboxLimits,
  network: boolean,
  wallMs: number,
  backend = 'bubblewrap',
): SandboxStatement {
  const cgroup = resources.cgroup ? `cgroup ${isolation.cgroups!.version}` : null;
  if (backend !== 'bubblewrap') {
    const there = `the ${backend} backend's (its pod's resources and policies)`;
    return {
      backend,
      uid: null,
      network: network ? 'egress-filtered' : 'none',
      limits: {
        memoryBytes: limits.memoryBytesMax,
        processes: limits.processesMax,
        cpuCores: isolation.cpuCoresMax,
        cpuSecondsPerProcess: limits.cpuSecondsMax,
        tmpBytes: limits.tmpBytesMax,
        workspaceBytes: isolation.workspaceBytesMax,
        fileBytes: limits.fileBytesMax,
        openFiles: limits.openFilesMax,
        wallMs,
      },
      enforcement: { memory: there, processes: there, cpu: there, workspace: there, user: there },
    };
  }
  return {
    backend,
    uid: resources.uid,
    network: network ? 'egress-filtered' : 'none',
    limits: {
      memoryBytes: limits.memoryBytesMax,
      processes: limits.processesMax,
      cpuCores: cgroup ? isolation.cpuCoresMax : null,
      cpuSecondsPerProcess: limits.cpuSecondsMax,
      tmpBytes: limits.tmpBytesMax,
      workspaceBytes: isolation.workspaceBytesMax,
      fileBytes: limits.fileBytesMax,
      openFiles: limits.openFilesMax,
      wallMs,
    },
    enforcement: {
      memory: cgroup ? `${cgroup} for the run (and RLIMIT_DATA per process)` : 'RLIMIT_DATA per process only',
      processes:
        [cgroup ? `${cgroup} pids` : null, resources.uid !== null ? 'RLIMIT_NPROC of the run uid' : null]
          .filter(Boolean)
          .join(' and ') || 'none: this host gives the worker neither cgroups nor a run uid',
      cpu: cgroup ? `${cgroup} quota and RLIMIT_CPU per process` : 'RLIMIT_CPU per process only',
      workspace: `measured every ${isolation.workspacePollMs} ms (du); over the quota the run is killed`,
      user:
        resources.uid !== null
          ? 'a host uid of its own in a user namespace'
          : "the worker's own user in a user namespace",
    },
    ...(network && resources.egressDeny
      ? {
          egress: {
            allowed: isolation.egressAllow.map(ruleText),
            deniedServices: resources.egressDeny.services.map(ruleText),
            denied: [...standingDenialsText, ...resources.egressDeny.rules.map(ruleText)],
            resolved: resources.egressDeny.names,
            ipv6: 'none: a run has no IPv6 route (slirp4netns runs without IPv6), so IPv6 addresses need no rule',
          },
        }
      : {}),
  };
}

/** workspaceOwner is the uid and gid a workspace is given back to after a run. */
export function workspaceOwner(workspace: string): { uid: number; gid: number } {
  const stats = statSync(workspace);
  return { uid: stats.uid, gid: stats.gid };
}

/**
 * chownTree gives every entry of the tree to uid:gid without following symbolic links (-P, and -h for a link
 * itself): a link the run left pointing at /etc/shadow changes the link, never its target.
 */
export function chownTree(dir: string, uid: number, gid: number): Promise<void> {
  return new Promise((resolve, reject) => {
    execFile(
      'chown',
      ['-R', '-P', '-h', `${uid}:${gid}`, '--', dir],
      { timeout: 120_000 },
      (error, _stdout, stderr) => {
        if (error) reject(new Error(`chown of the workspace failed: ${String(stderr).trim() || error.message}`));
        else resolve();
      },
    );
  });
}

/** workspaceBytes measures the tree as du does (allocated bytes, one file system, links not followed). */
export function workspaceBytes(dir: string): Promise<number | null> {
  return new Promise((resolve) => {
    execFile('du', ['-s', '-x', '-B1', '--', dir], { timeout: 60_000 }, (_error, stdout) => {
      const bytes = Number(/^(\d+)/.exec(String(stdout))?.[1]);
      resolve(Number.isFinite(bytes) ? bytes : null);
    });
  });
}
