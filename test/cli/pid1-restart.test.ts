// A node run as PID 1 in its own pid namespace (as the image runs it in a container) restarts after kill -9
// on the same data directory. Before the data directory lock was an OS lock, the LOCK file left behind named
// pid 1, the restarted node was PID 1 again, and it refused to start ("DataDirLockedError: … in use by process
// 1"): a pod crash-looping on its volume. Three founders, each started with `unshare --pid --fork --mount-proc`
// (root; skipped, saying why, without it). A second node started the same way on a live member's directory is
// still refused: the lock is seen across pid namespaces.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { freePorts } from '../../cli/free-ports.js';
import { httpStatus, LongRunning, removeDir, SVC_BIN, tempDir, waitFor } from './helpers.js';

/** READY_TIMEOUT_MS bounds a node's start to /health 200 (tsx compiles on the fly; two shared cores). */
const READY_TIMEOUT_MS = 90_000;
/** REFUSAL_TIMEOUT_MS bounds the refused second node's start to its exit. */
const REFUSAL_TIMEOUT_MS = 60_000;
const MEMBER_COUNT = 3;

function whyNotRunnable(): string | null {
  if (process.platform !== 'linux') return 'not Linux';
  if (process.getuid?.() !== 0) return 'not running as root (unshare --pid needs root)';
  const probe = spawnSync('unshare', ['--pid', '--fork', '--mount-proc', 'true']);
  if (probe.error || probe.status !== 0)
    return `unshare --pid --fork --mount-proc does not run here: ${probe.error?.message ?? probe.stderr.toString()}`;
  return null;
}

interface Member {
  name: string;
  grpc: number;
  http: number;
  dataDir: string;
}

/** startAsPid1 runs `svc node` as PID 1 of a new pid namespace; --kill-child ends it if unshare is killed. */
function startAsPid1(member: Member, founders: string[], cwd: string): LongRunning {
  const args = ['node', '--name', member.name, '--data-dir', member.dataDir, '--insecure', '--log-level', 'warn'];
  args.push('--grpc-listen', `127.0.0.1:${member.grpc}`, '--http-listen', `127.0.0.1:${member.http}`);
  for (const founder of founders) args.push('--founder', founder);
  return new LongRunning(
    spawn('unshare', ['--pid', '--fork', '--mount-proc', '--kill-child', process.execPath, SVC_BIN, ...args], {
      cwd,
      stdio: ['ignore', 'pipe', 'pipe'],
    }),
  );
}

/** nodePid is the host pid of the node under an unshare process (its only child), and its pid in its namespace. */
async function nodePid(unsharePid: number): Promise<{ hostPid: number; nsPid: number }> {
  const children = (await readFile(`/proc/${unsharePid}/task/${unsharePid}/children`, 'utf8')).trim().split(/\s+/);
  assert.equal(children.length, 1, `unshare ${unsharePid} has one child`);
  const hostPid = Number(children[0]);
  const nsPids = /^NSpid:\s+(.*)$/m.exec(await readFile(`/proc/${hostPid}/status`, 'utf8'))?.[1]?.split(/\s+/);
  assert.ok(nsPids, 'NSpid is in /proc/PID/status');
  return { hostPid, nsPid: Number(nsPids[nsPids.length - 1]) };
}

async function waitHealthy(member: Member, proc: LongRunning): Promise<void> {
  await waitFor(
    async () => {
      if (!proc.running) throw new Error(`${member.name} exited: ${proc.stderr}`);
      return (await httpStatus(`http://127.0.0.1:${member.http}/health`)) === 200;
    },
    `${member.name} /health 200`,
    READY_TIMEOUT_MS,
    false,
  );
}

describe('svc node as PID 1 in its own pid namespace: restart after kill -9', function () {
  this.timeout(400_000);
  let dir = '';
  const procs: LongRunning[] = [];

  before(function () {
    const why = whyNotRunnable();
    if (why !== null) {
      console.log(`      skipped: ${why}`);
      this.skip();
    }
  });

  after(async () => {
    for (const proc of procs) proc.kill();
    await Promise.all(procs.map((proc) => proc.exitWithin(10_000)));
    if (dir) await removeDir(dir);
  });

  it('a member killed with -9 starts again as PID 1 on its data directory; a second node there is refused', async () => {
    dir = await tempDir('pid1');
    const ports = await freePorts(MEMBER_COUNT * 2);
    const members: Member[] = Array.from({ length: MEMBER_COUNT }, (_, i) => ({
      name: `n${i + 1}`,
      grpc: ports[2 * i] ?? 0,
      http: ports[2 * i + 1] ?? 0,
      dataDir: join(dir, `n${i + 1}`),
    }));
    const founders = members.map((m) => `${m.name},127.0.0.1:${m.grpc},http://127.0.0.1:${m.http}`);
    const running = members.map((member) => startAsPid1(member, founders, dir));
    procs.push(...running);
    await Promise.all(members.map((member, i) => waitHealthy(member, running[i] as LongRunning)));

    const victim = members[0] as Member;
    const victimProc = running[0] as LongRunning;
    const { hostPid, nsPid } = await nodePid(victimProc.proc.pid ?? 0);
    assert.equal(nsPid, 1, 'the node is PID 1 in its namespace');
    process.kill(hostPid, 'SIGKILL');
    const exit = await victimProc.exitWithin(20_000);
    assert.ok(exit, 'unshare exits once its PID 1 is killed');
    // What the killed node left behind: the lock file naming pid 1, as the restarted node will be.
    assert.equal((await readFile(join(victim.dataDir, 'LOCK'), 'utf8')).split(/\s/)[0], '1');

    const restarted = startAsPid1(victim, founders, dir);
    procs.push(restarted);
    await waitHealthy(victim, restarted);
    assert.equal((await nodePid(restarted.proc.pid ?? 0)).nsPid, 1);
    assert.doesNotMatch(restarted.stderr, /DataDirLockedError|in use by/);

    // Another node on the restarted member's directory, as PID 1 of yet another namespace, is refused.
    const [otherGrpc, otherHttp] = await freePorts(2);
    const intruder = startAsPid1({ ...victim, grpc: otherGrpc ?? 0, http: otherHttp ?? 0 }, founders, dir);
    procs.push(intruder);
    const intruderExit = await intruder.exitWithin(REFUSAL_TIMEOUT_MS);
    assert.ok(intruderExit, 'the second node exits');
    assert.notEqual(intruderExit.code, 0);
    assert.match(intruder.stderr, /is in use by process 1 \(it holds the lock/);
    assert.equal(await httpStatus(`http://127.0.0.1:${victim.http}/health`), 200, 'the restarted member still runs');
  });
});
