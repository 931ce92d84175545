// The reference agent's files, staged where a run's own uid can read them. bubblewrap runs as the run's uid
// (setpriv drops to it first), so every --ro-bind source must be reachable by that uid: a checkout under a home
// directory of mode 0700 or 0750 is not, and the run would fail with "Can't find source path … Permission
// denied". So a worker that gives runs their own uid copies what it binds (agent/ and the `openai` package) into
// a directory of its own under a root every uid may search, with modes every uid may read, and binds the copy:
// nothing a run executes is read from the checkout by the run's uid.
//
// bubblewrap 0.8's --ro-bind-fd does not help: it resolves /proc/self/fd/N back to the path, which the run's
// uid still cannot traverse. The copy leaves out type declarations and source maps (never executed); it is
// made once, in the background as the worker starts (runs wait for it), and removed when the worker closes; a
// worker that died leaves one that the next worker on the host removes (each is named for its process's pid).
import { chmod, cp, lstat, mkdir, mkdtemp, readdir, rm } from 'node:fs/promises';
import { statSync } from 'node:fs';
import path from 'node:path';
import type { ReadOnlyMount } from './sandbox.js';

/** agentStageRootDefault holds the staged copies: /run/svc-agent (a tmpfs only root writes), else the temp dir's. */
export function agentStageRootDefault(tmpDir: string): string {
  return path.join(isDirectory('/run') ? '/run' : tmpDir, 'svc-agent');
}

export interface AgentStage {
  /** mounts are the given mounts with each source replaced by its staged copy. */
  readonly mounts: ReadOnlyMount[];
  readonly dir: string;
  remove(): Promise<void>;
}

/** AgentStageError says what the host must change for a worker to stage the agent (the worker does not start). */
export class AgentStageError extends Error {}

/** neverExecuted names files the copy leaves out: type declarations and source maps. */
const neverExecuted = /\.(d\.[mc]?ts|map)$/;

/**
 * checkAgentStageRoot makes the stage root when missing and checks that it is this user's, written by no one
 * else, and reachable by a run's uid; it throws an AgentStageError that says what to change. A worker calls it
 * as it starts (cheap), then stages in the background (stageAgentMounts: a copy takes seconds on a busy host).
 */
export async function checkAgentStageRoot(stageRoot: string): Promise<void> {
  await mkdir(stageRoot, { recursive: true, mode: 0o755 });
  const root = await lstat(stageRoot);
  // Another user able to write here could swap the agent every run executes: refuse rather than use it.
  if (!root.isDirectory() || root.uid !== process.getuid?.() || (root.mode & 0o022) !== 0)
    throw new AgentStageError(
      `the agent stage ${stageRoot} must be a directory owned by this user (uid ${process.getuid?.()}) that no one else may write (chmod go-w)`,
    );
  await chmod(stageRoot, 0o755);
  const closed = closedAncestor(path.join(stageRoot, 'x'));
  if (closed)
    throw new AgentStageError(
      `a run's own uid cannot reach the agent stage ${stageRoot}: ${closed} is not searchable by others (chmod o+x ${closed}, or point the stage elsewhere)`,
    );
}

/** stageAgentMounts copies each mount's source into a new directory of stageRoot (checked: checkAgentStageRoot). */
export async function stageAgentMounts(mounts: ReadOnlyMount[], stageRoot: string): Promise<AgentStage> {
  await removeLeftovers(stageRoot);
  const dir = await mkdtemp(path.join(stageRoot, `${process.pid}-`));
  try {
    await chmod(dir, 0o755);
    const staged: ReadOnlyMount[] = [];
    for (const [index, mount] of mounts.entries()) {
      const copy = path.join(dir, String(index));
      await cp(mount.source, copy, {
        recursive: true,
        dereference: true,
        filter: (source) => !neverExecuted.test(source),
      });
      await openModes(copy);
      staged.push({ source: copy, target: mount.target });
    }
    return { mounts: staged, dir, remove: () => rm(dir, { recursive: true, force: true }) };
  } catch (error) {
    await rm(dir, { recursive: true, force: true });
    throw error;
  }
}

/** openModes makes the copy readable by every uid (directories 0755, files 0644, or 0755 if any x bit was set). */
async function openModes(entry: string): Promise<void> {
  const stat = await lstat(entry);
  if (stat.isDirectory()) {
    await chmod(entry, 0o755);
    for (const name of await readdir(entry)) await openModes(path.join(entry, name));
  } else if (stat.isFile()) {
    await chmod(entry, (stat.mode & 0o111) !== 0 ? 0o755 : 0o644);
  }
}

/** removeLeftovers removes copies whose process is gone (named `<pid>-…`; a live pid's are left alone). */
async function removeLeftovers(stageRoot: string): Promise<void> {
  for (const name of await readdir(stageRoot)) {
    const pid = Number(/^(\d+)-/.exec(name)?.[1]);
    if (!Number.isInteger(pid) || pid <= 0 || pidAlive(pid)) continue;
    await rm(path.join(stageRoot, name), { recursive: true, force: true });
  }
}

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** closedAncestor names the first directory above entry that others may not search (a run uid is an other), or null. */
export function closedAncestor(entry: string): string | null {
  for (let dir = path.dirname(entry); ; dir = path.dirname(dir)) {
    if ((statSync(dir).mode & 0o001) === 0) return dir;
    if (dir === path.dirname(dir)) return null;
  }
}

function isDirectory(dir: string): boolean {
  try {
    return statSync(dir).isDirectory();
  } catch {
    return false;
  }
}
