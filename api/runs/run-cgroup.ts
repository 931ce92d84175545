// Per-run control groups: memory, CPU rate and process count for the whole run (every process it starts and its
// /tmp), where the host lets this process make cgroups. cgroup v2 (the unified hierarchy, with the memory, pids
// and cpu controllers delegated to this process's cgroup) is preferred; a v1 host (one hierarchy per controller,
// writable, as on hybrid hosts) is used the same way; otherwise probeCgroupHost answers null and the run relies on
// rlimits (sandbox.ts says which in the run's `started` event).
//
// `root` stands for `/` when looking for the hierarchies (its proc/self/mountinfo and proc/self/cgroup, and the
// mount points under it): always `/` in service, a directory laid out like a host in tests.
//
// A run's cgroup is created before the sandbox starts; the sandbox's first process moves itself in (the
// wrapper in sandbox.ts writes its pid to `procsFiles`) before it execs anything, so nothing the run starts is
// ever outside it.
import { existsSync, mkdirSync, readFileSync, readdirSync, rmdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';

export interface RunCgroupLimits {
  memoryBytesMax: number;
  processesMax: number;
  cpuCoresMax: number;
}

export interface CgroupHost {
  /** version is 'v2' (unified) or 'v1' (a hierarchy per controller). */
  version: 'v2' | 'v1';
  /** parents are the directories under which run cgroups are made, per controller (v2: one for all). */
  parents: { memory: string; pids: string; cpu: string };
}

export interface RunCgroup {
  /** procsFiles are the cgroup.procs files the sandbox's first process writes its pid to. */
  procsFiles: string[];
  /** killAll sends SIGKILL to every process still in the run's cgroup. */
  killAll(): void;
  /** peakProcesses is the most processes the run had at once, where the host reports it. */
  peakProcesses(): number | null;
  /** memoryEvents says whether the run hit its memory limit (an OOM kill). */
  oomKilled(): boolean;
  /** remove deletes the cgroup once its processes are gone (retried briefly; a leftover is harmless). */
  remove(): Promise<void>;
}

const runsDirName = 'svc-runs';
const cpuPeriodMicros = 100_000;
const removeAttemptsMax = 20;
const removeRetryMs = 50;

/**
 * probeCgroupHost finds where this process may make run cgroups with memory, pids and cpu limits, or null:
 * cgroup v2 where its controllers are available, else writable v1 hierarchies, else none.
 */
export function probeCgroupHost(root = '/'): CgroupHost | null {
  try {
    return probeV2(root) ?? probeV1(root);
  } catch {
    return null;
  }
}

function ownCgroupPaths(root: string): Map<string, string> {
  const paths = new Map<string, string>();
  for (const line of readFileSync(path.join(root, 'proc/self/cgroup'), 'utf8').split('\n')) {
    const match = /^\d+:([^:]*):(.*)$/.exec(line);
    if (!match) continue;
    for (const controller of match[1]!.split(',')) paths.set(controller, match[2]!);
  }
  return paths;
}

interface CgroupMount {
  fsType: 'cgroup' | 'cgroup2';
  mountPoint: string;
  options: string[];
}

function cgroupMounts(root: string): CgroupMount[] {
  const mounts: CgroupMount[] = [];
  for (const line of readFileSync(path.join(root, 'proc/self/mountinfo'), 'utf8').split('\n')) {
    const [before, after] = line.split(' - ');
    if (!before || !after) continue;
    const [fsType, , superOptions] = after.split(' ');
    if (fsType !== 'cgroup' && fsType !== 'cgroup2') continue;
    mounts.push({
      fsType,
      mountPoint: path.join(root, before.split(' ')[4]!),
      options: (superOptions ?? '').split(','),
    });
  }
  return mounts;
}

const wanted = ['memory', 'pids', 'cpu'] as const;

function probeV2(root: string): CgroupHost | null {
  const mount = cgroupMounts(root).find((item) => item.fsType === 'cgroup2');
  const own = ownCgroupPaths(root).get('');
  if (!mount || own === undefined) return null;
  const mine = path.join(mount.mountPoint, own);
  const available = readFileSync(path.join(mine, 'cgroup.controllers'), 'utf8').trim().split(/\s+/);
  if (!wanted.every((controller) => available.includes(controller))) return null;
  const runs = path.join(mine, runsDirName);
  // Controllers are handed to children only by a cgroup without processes of its own (cgroup v2's "no internal
  // processes" rule): if this process's cgroup holds processes, this process moves into a leaf beside the runs.
  if (!enableControllers(mine)) {
    const leaf = path.join(mine, 'svc-worker');
    mkdirSync(leaf, { recursive: true });
    writeFileSync(path.join(leaf, 'cgroup.procs'), String(process.pid));
    if (!enableControllers(mine)) return null;
  }
  mkdirSync(runs, { recursive: true });
  if (!enableControllers(runs)) return null;
  return { version: 'v2', parents: { memory: runs, pids: runs, cpu: runs } };
}

function enableControllers(dir: string): boolean {
  try {
    writeFileSync(path.join(dir, 'cgroup.subtree_control'), wanted.map((controller) => `+${controller}`).join(' '));
    return true;
  } catch {
    return false;
  }
}

function probeV1(root: string): CgroupHost | null {
  const own = ownCgroupPaths(root);
  const mounts = cgroupMounts(root).filter((item) => item.fsType === 'cgroup');
  const parents: Partial<Record<(typeof wanted)[number], string>> = {};
  for (const controller of wanted) {
    const mount = mounts.find((item) => item.options.includes(controller));
    const ownPath = own.get(controller);
    if (!mount || ownPath === undefined) return null;
    const runs = path.join(mount.mountPoint, ownPath, runsDirName);
    mkdirSync(runs, { recursive: true });
    parents[controller] = runs;
  }
  return { version: 'v1', parents: parents as CgroupHost['parents'] };
}

/**
 * createRunCgroup makes the run's cgroup(s) with the limits set; it throws (leaving nothing behind) when the host
 * refuses. A limit that is not finite is written as unlimited (v2 `max`, v1 -1).
 */
export function createRunCgroup(host: CgroupHost, runId: string, limits: RunCgroupLimits): RunCgroup {
  if (!/^[a-z]{3}_[0-9a-z]+$/.test(runId)) throw new Error('a run id names the cgroup and must be plain');
  const dirs = runCgroupDirs(host, runId);
  const made: string[] = [];
  try {
    for (const dir of dirs) {
      mkdirSync(dir);
      made.push(dir);
    }
    writeLimits(host, runId, limits);
  } catch (error) {
    for (const dir of made.reverse()) {
      try {
        rmdirSync(dir);
      } catch {
        // a leftover is harmless
      }
    }
    throw error;
  }
  return runCgroupHandle(host, runId);
}

function writeLimits(host: CgroupHost, runId: string, limits: RunCgroupLimits): void {
  const write = (dir: string, file: string, value: string | number) =>
    writeFileSync(path.join(dir, file), String(value));
  /** writeIfPresent writes a file the kernel offers only with some options (swap accounting). */
  const writeIfPresent = (dir: string, file: string, value: string | number) => {
    try {
      write(dir, file, value);
    } catch (error) {
      if (existsSync(path.join(dir, file))) throw error;
    }
  };
  const cpuLimited = Number.isFinite(limits.cpuCoresMax);
  const quotaMicros = Math.max(1000, Math.round(limits.cpuCoresMax * cpuPeriodMicros));
  if (host.version === 'v2') {
    const v2 = (value: number) => (Number.isFinite(value) ? value : 'max');
    const dir = path.join(host.parents.memory, runId);
    write(dir, 'memory.max', v2(limits.memoryBytesMax));
    // No swap: swapping out would let a run hold more than memory.max.
    writeIfPresent(dir, 'memory.swap.max', 0);
    write(dir, 'pids.max', v2(limits.processesMax));
    write(dir, 'cpu.max', `${cpuLimited ? quotaMicros : 'max'} ${cpuPeriodMicros}`);
  } else {
    const v1 = (value: number) => (Number.isFinite(value) ? value : -1);
    const memory = path.join(host.parents.memory, runId);
    write(memory, 'memory.limit_in_bytes', v1(limits.memoryBytesMax));
    // With swap accounting, memory+swap gets the same cap, so swapping out does not escape the limit.
    if (existsSync(path.join(memory, 'memory.memsw.limit_in_bytes')))
      write(memory, 'memory.memsw.limit_in_bytes', v1(limits.memoryBytesMax));
    write(
      path.join(host.parents.pids, runId),
      'pids.max',
      Number.isFinite(limits.processesMax) ? limits.processesMax : 'max',
    );
    const cpu = path.join(host.parents.cpu, runId);
    write(cpu, 'cpu.cfs_period_us', cpuPeriodMicros);
    write(cpu, 'cpu.cfs_quota_us', cpuLimited ? quotaMicros : -1);
  }
}

/** runCgroupDirs are the directories of a run's cgroup (v2: one; v1: one per hierarchy). */
function runCgroupDirs(host: CgroupHost, runId: string): string[] {
  return host.version === 'v2'
    ? [path.join(host.parents.memory, runId)]
    : [...new Set(wanted.map((controller) => path.join(host.parents[controller], runId)))];
}

/** runCgroupHandle answers for a run cgroup that exists (createRunCgroup's second half). */
export function runCgroupHandle(host: CgroupHost, runId: string): RunCgroup {
  const dirs = runCgroupDirs(host, runId);
  const write = (dir: string, file: string, value: string | number) =>
    writeFileSync(path.join(dir, file), String(value));
  const pidsDir = path.join(host.parents.pids, runId);
  const memoryDir = path.join(host.parents.memory, runId);
  const readNumber = (file: string): number | null => {
    try {
      const value = Number(readFileSync(file, 'utf8').trim());
      return Number.isFinite(value) ? value : null;
    } catch {
      return null;
    }
  };
  const members = (): number[] => {
    const pids = new Set<number>();
    for (const dir of dirs) {
      for (const file of cgroupProcFiles(dir)) {
        try {
          for (const line of readFileSync(file, 'utf8').split('\n')) if (line) pids.add(Number(line));
        } catch {
          // gone already
        }
      }
    }
    return [...pids];
  };
  return {
    procsFiles: dirs.map((dir) => path.join(dir, 'cgroup.procs')),
    killAll() {
      if (host.version === 'v2' && existsSync(path.join(dirs[0]!, 'cgroup.kill'))) {
        try {
          write(dirs[0]!, 'cgroup.kill', 1);
          return;
        } catch {
          // fall through to signalling each process
        }
      }
      for (const pid of members()) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // already gone
        }
      }
    },
    peakProcesses: () => readNumber(path.join(pidsDir, 'pids.peak')),
    oomKilled() {
      if (host.version === 'v2') {
        try {
          return /^oom_kill [1-9]/m.test(readFileSync(path.join(memoryDir, 'memory.events'), 'utf8'));
        } catch {
          return false;
        }
      }
      return (
        (readNumber(path.join(memoryDir, 'memory.failcnt')) ?? 0) > 0 &&
        /^oom_kill [1-9]/m.test(safeRead(path.join(memoryDir, 'memory.oom_control')))
      );
    },
    async remove() {
      for (let attempt = 0; attempt < removeAttemptsMax; attempt++) {
        if (attempt > 0) this.killAll();
        let left = 0;
        for (const dir of dirs) {
          try {
            rmdirSync(dir);
          } catch (error) {
            if ((error as NodeJS.ErrnoException).code !== 'ENOENT') left++;
          }
        }
        if (left === 0) return;
        await new Promise((resolve) => setTimeout(resolve, removeRetryMs));
      }
    },
  };
}

function cgroupProcFiles(dir: string): string[] {
  const files = [path.join(dir, 'cgroup.procs')];
  try {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      if (entry.isDirectory()) files.push(...cgroupProcFiles(path.join(dir, entry.name)));
    }
  } catch {
    // gone already
  }
  return files;
}

function safeRead(file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return '';
  }
}
