// Per-run cgroups (api/runs/run-cgroup.ts) on hosts this machine is not: its hierarchies are cgroup v1, so the
// v2 path runs against a root directory laid out like a v2 host (proc/self/mountinfo, proc/self/cgroup, the
// hierarchy's interface files), and the kernel's own v2 semantics (cgroup.procs, cgroup.kill, rmdir) against a
// real cgroup2 mount where the host lets this process make one. Also the choice between v2, writable v1 and
// none, as the run's `started` event states it.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, rmdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { CgroupHost } from '../../api/runs/run-cgroup.js';
import { createRunCgroup, probeCgroupHost, runCgroupHandle } from '../../api/runs/run-cgroup.js';
import { acquireRunResources, describeSandbox, probeRunIsolation } from '../../api/runs/run-isolation.js';
import { defaultSandboxLimits, sandboxCommand } from '../../api/runs/sandbox.js';

const v2Controllers = 'cpuset cpu io memory hugetlb pids rdma misc';

/** hostRoot lays out a root directory with the given mounts (mountinfo) and own cgroup paths (proc/self/cgroup). */
function hostRoot(mounts: Array<{ at: string; fsType: 'cgroup' | 'cgroup2'; options: string }>, own: string[]): string {
  const root = mkdtempSync(path.join(os.tmpdir(), 'svc-cgroup-root-'));
  mkdirSync(path.join(root, 'proc/self'), { recursive: true });
  const mountinfo = mounts.map(
    (mount, index) =>
      `${30 + index} 25 0:${26 + index} / ${mount.at} rw,nosuid,nodev,noexec,relatime shared:${index + 4} - ${mount.fsType} ${mount.fsType} ${mount.options}`,
  );
  writeFileSync(
    path.join(root, 'proc/self/mountinfo'),
    ['22 1 259:1 / / rw,relatime shared:1 - ext4 /dev/root rw', ...mountinfo, ''].join('\n'),
  );
  writeFileSync(path.join(root, 'proc/self/cgroup'), [...own, ''].join('\n'));
  for (const mount of mounts) mkdirSync(path.join(root, mount.at), { recursive: true });
  return root;
}

/** v2Root is a host with the unified hierarchy at /sys/fs/cgroup and this process in /svc.slice/worker. */
function v2Root(controllers = v2Controllers): { root: string; mine: string } {
  const root = hostRoot(
    [{ at: '/sys/fs/cgroup', fsType: 'cgroup2', options: 'rw,nsdelegate' }],
    ['0::/svc.slice/worker'],
  );
  const mine = path.join(root, 'sys/fs/cgroup/svc.slice/worker');
  mkdirSync(mine, { recursive: true });
  writeFileSync(path.join(mine, 'cgroup.controllers'), `${controllers}\n`);
  writeFileSync(path.join(mine, 'cgroup.subtree_control'), '');
  return { root, mine };
}

/** v1Mounts are the per-controller hierarchies of a v1 (or hybrid) host, this process in /worker in each. */
const v1Mounts = [
  { at: '/sys/fs/cgroup/memory', fsType: 'cgroup' as const, options: 'rw,memory' },
  { at: '/sys/fs/cgroup/pids', fsType: 'cgroup' as const, options: 'rw,pids' },
  { at: '/sys/fs/cgroup/cpu,cpuacct', fsType: 'cgroup' as const, options: 'rw,cpu,cpuacct' },
];
const v1Own = ['4:memory:/worker', '8:pids:/worker', '2:cpu,cpuacct:/worker'];

const read = (file: string) => readFileSync(file, 'utf8');

function exited(child: ChildProcess): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  if (child.exitCode !== null || child.signalCode !== null)
    return Promise.resolve({ code: child.exitCode, signal: child.signalCode });
  return new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
}

/** startPlaced starts a sandbox (bubblewrap, `sh -c 'sleep 30'`) whose wrapper joins procsFiles first, as a run's does. */
function startPlaced(procsFiles: string[], workspace: string): ChildProcess {
  const command = sandboxCommand({
    project: { workspace, command: ['sh', '-c', 'sleep 30'], network: false },
    prompt: '',
    limits: defaultSandboxLimits,
    uid: null,
    cgroupProcsFiles: procsFiles,
    network: 'none',
    secretFileNames: [],
    readOnlyMounts: [],
  });
  return spawn(command.file, command.args, { stdio: 'ignore', detached: true });
}

async function waitForText(file: string, want: string): Promise<void> {
  for (let attempt = 0; attempt < 200; attempt++) {
    if (existsSync(file) && read(file).split('\n').includes(want)) return;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  assert.fail(`${file} never held ${want}: ${existsSync(file) ? JSON.stringify(read(file)) : 'missing'}`);
}

describe('api: per-run cgroups (run-cgroup.ts)', function () {
  this.timeout(60_000);
  const made: string[] = [];
  const workspace = mkdtempSync(path.join(os.tmpdir(), 'svc-cgroup-ws-'));
  after(() => {
    for (const dir of [...made, workspace]) rmSync(dir, { recursive: true, force: true });
  });

  it('cgroup v2: enables memory, pids and cpu for its children, writes the limits in v2 formats, places the run', async () => {
    const { root, mine } = v2Root();
    made.push(root);
    const host = probeCgroupHost(root);
    const runs = path.join(mine, 'svc-runs');
    assert.deepEqual(host, { version: 'v2', parents: { memory: runs, pids: runs, cpu: runs } });
    // Controllers are handed down by the parent: this process's cgroup to svc-runs, svc-runs to each run.
    assert.equal(read(path.join(mine, 'cgroup.subtree_control')), '+memory +pids +cpu');
    assert.equal(read(path.join(runs, 'cgroup.subtree_control')), '+memory +pids +cpu');

    const limits = { memoryBytesMax: 512 * 1024 * 1024, processesMax: 64, cpuCoresMax: 0.5 };
    const cgroup = createRunCgroup(host!, 'run_limited', limits);
    const dir = path.join(runs, 'run_limited');
    assert.equal(read(path.join(dir, 'memory.max')), String(512 * 1024 * 1024));
    assert.equal(read(path.join(dir, 'memory.swap.max')), '0');
    assert.equal(read(path.join(dir, 'pids.max')), '64');
    assert.equal(read(path.join(dir, 'cpu.max')), '50000 100000');
    assert.deepEqual(cgroup.procsFiles, [path.join(dir, 'cgroup.procs')]);

    // The sandbox's wrapper writes its own pid before it execs anything; here no cgroup.kill, so killAll
    // signals each pid the cgroup lists.
    const child = startPlaced(cgroup.procsFiles, workspace);
    await waitForText(cgroup.procsFiles[0]!, String(child.pid));
    assert.equal(child.exitCode, null, 'the placed sandbox runs');
    cgroup.killAll();
    assert.deepEqual(await exited(child), { code: null, signal: 'SIGKILL' });

    const unlimited = { memoryBytesMax: Infinity, processesMax: Infinity, cpuCoresMax: Infinity };
    createRunCgroup(host!, 'run_unlimited', unlimited);
    const open = path.join(runs, 'run_unlimited');
    assert.equal(read(path.join(open, 'memory.max')), 'max');
    assert.equal(read(path.join(open, 'pids.max')), 'max');
    assert.equal(read(path.join(open, 'cpu.max')), 'max 100000');
    // A cgroup that exists already (another run's id) is refused, and names must be plain.
    assert.throws(() => createRunCgroup(host!, 'run_limited', limits), /EEXIST/);
    assert.throws(() => createRunCgroup(host!, '../escape', limits), /plain/);
  });

  it('cgroup v1: one cgroup per hierarchy with the same limits in v1 formats', () => {
    const root = hostRoot(v1Mounts, v1Own);
    made.push(root);
    const host = probeCgroupHost(root);
    const under = (mount: string) => path.join(root, 'sys/fs/cgroup', mount, 'worker/svc-runs');
    assert.deepEqual(host, {
      version: 'v1',
      parents: { memory: under('memory'), pids: under('pids'), cpu: under('cpu,cpuacct') },
    });
    const cgroup = createRunCgroup(host!, 'run_v1', { memoryBytesMax: 1 << 30, processesMax: 32, cpuCoresMax: 2 });
    assert.equal(read(path.join(under('memory'), 'run_v1/memory.limit_in_bytes')), String(1 << 30));
    assert.equal(read(path.join(under('pids'), 'run_v1/pids.max')), '32');
    assert.equal(read(path.join(under('cpu,cpuacct'), 'run_v1/cpu.cfs_period_us')), '100000');
    assert.equal(read(path.join(under('cpu,cpuacct'), 'run_v1/cpu.cfs_quota_us')), '200000');
    assert.equal(cgroup.procsFiles.length, 3, 'the run joins every hierarchy');
  });

  it('chooses v2 where its controllers are available, else writable v1, else none; the started event says which', async () => {
    const limits = { ...defaultSandboxLimits, processesMax: 48 };
    const statement = async (root: string) => {
      const isolation = await probeRunIsolation({ cgroupRoot: root });
      const resources = acquireRunResources(isolation, `run_choice${made.length}`, limits);
      try {
        return { isolation, sandbox: describeSandbox(isolation, resources, limits, false, 60_000) };
      } finally {
        await resources.release();
      }
    };

    const v2 = v2Root();
    made.push(v2.root);
    const onV2 = await statement(v2.root);
    assert.equal(onV2.isolation.cgroups?.version, 'v2');
    assert.match(onV2.sandbox.enforcement.memory, /^cgroup v2 for the run/);
    assert.match(onV2.sandbox.enforcement.processes, /^cgroup v2 pids/);
    assert.match(onV2.sandbox.enforcement.cpu, /^cgroup v2 quota/);
    assert.equal(onV2.sandbox.limits.cpuCores, onV2.isolation.cpuCoresMax);

    // A hybrid host: a unified hierarchy without the memory controller (it is v1's), and writable v1 ones.
    const hybrid = hostRoot(
      [...v1Mounts, { at: '/sys/fs/cgroup/unified', fsType: 'cgroup2', options: 'rw,nsdelegate' }],
      [...v1Own, '0::/worker'],
    );
    made.push(hybrid);
    mkdirSync(path.join(hybrid, 'sys/fs/cgroup/unified/worker'), { recursive: true });
    writeFileSync(path.join(hybrid, 'sys/fs/cgroup/unified/worker/cgroup.controllers'), 'hugetlb\n');
    const onV1 = await statement(hybrid);
    assert.equal(onV1.isolation.cgroups?.version, 'v1');
    assert.match(onV1.sandbox.enforcement.memory, /^cgroup v1 for the run/);
    assert.match(onV1.sandbox.enforcement.processes, /^cgroup v1 pids/);

    // No cgroup hierarchy at all: per-process rlimits (and the run uid's RLIMIT_NPROC as root) are what holds.
    const bare = hostRoot([], ['0::/']);
    made.push(bare);
    const onNone = await statement(bare);
    assert.equal(onNone.isolation.cgroups, null);
    assert.equal(onNone.sandbox.enforcement.memory, 'RLIMIT_DATA per process only');
    assert.equal(onNone.sandbox.enforcement.cpu, 'RLIMIT_CPU per process only');
    assert.equal(onNone.sandbox.limits.cpuCores, null, 'no CPU-rate limit is claimed without a cgroup');
    assert.equal(
      onNone.sandbox.enforcement.processes,
      onNone.isolation.root
        ? 'RLIMIT_NPROC of the run uid'
        : 'none: this host gives the worker neither cgroups nor a run uid',
    );
  });

  it('on a real cgroup2 hierarchy: the run is placed, release kills it with cgroup.kill and removes the cgroup', async function () {
    // This host's controllers are v1's, so its unified hierarchy has no memory, pids or cpu controller: limits
    // cannot be written there, but placement, cgroup.kill and removal are the kernel's.
    const mountPoint = mkdtempSync(path.join(os.tmpdir(), 'svc-cgroup2-'));
    if (spawnSync('mount', ['-t', 'cgroup2', 'none', mountPoint]).status !== 0) {
      rmdirSync(mountPoint);
      this.skip();
    }
    const parent = path.join(mountPoint, `svc-test-${process.pid}`);
    try {
      if (!existsSync(path.join(mountPoint, 'cgroup.kill')) && !existsSync(path.join(mountPoint, 'cgroup.procs')))
        this.skip();
      mkdirSync(parent);
      const host: CgroupHost = { version: 'v2', parents: { memory: parent, pids: parent, cpu: parent } };
      mkdirSync(path.join(parent, 'run_real'));
      const cgroup = runCgroupHandle(host, 'run_real');
      const child = startPlaced(cgroup.procsFiles, workspace);
      await waitForText(cgroup.procsFiles[0]!, String(child.pid));
      assert.match(read(`/proc/${child.pid}/cgroup`), new RegExp(`^0::/svc-test-${process.pid}/run_real$`, 'm'));
      // As a run's release does: kill everything in it, then remove it (rmdir waits out the dying processes).
      cgroup.killAll();
      await cgroup.remove();
      assert.deepEqual(await exited(child), { code: null, signal: 'SIGKILL' });
      assert.equal(existsSync(path.join(parent, 'run_real')), false, 'the run cgroup is gone');
    } finally {
      if (existsSync(parent)) {
        for (const entry of ['run_real']) {
          try {
            rmdirSync(path.join(parent, entry));
          } catch {
            // gone
          }
        }
        rmdirSync(parent);
      }
      spawnSync('umount', [mountPoint]);
      rmdirSync(mountPoint);
    }
  });
});
