// DataDirLock keeps two node processes off one data directory: two writers on one WAL and one hard
// state would break every promise the node makes (a vote cast twice, entries overwritten).
//
// The lock is a file, <data>/LOCK, created exclusively and holding the owner's pid and a random
// token. A LOCK whose pid is no longer alive (a process killed with -9 never removes it) is stale
// and taken over. The check is by pid on this host: a data directory shared between hosts (a
// network file system) is not something this lock can guard, and operations.md says so.
import { randomUUID } from 'node:crypto';
import { open, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { fsyncDir } from './durable-fs.js';

export const LOCK_FILE = 'LOCK';
/** LOCK_ATTEMPT_COUNT_MAX bounds take-overs of a stale lock racing with another starting process. */
const LOCK_ATTEMPT_COUNT_MAX = 3;

export class DataDirLockedError extends Error {
  constructor(
    readonly dataDir: string,
    readonly ownerPid: number,
  ) {
    super(
      `data directory ${dataDir} is in use by process ${ownerPid} (its ${LOCK_FILE} file); stop that node first, or remove ${LOCK_FILE} if that process is not a node`,
    );
    this.name = 'DataDirLockedError';
  }
}

export interface DataDirLock {
  release(): Promise<void>;
}

/** acquireDataDirLock takes the lock on dataDir (which must exist), or throws DataDirLockedError. */
export async function acquireDataDirLock(
  dataDir: string,
  isAlive: (pid: number) => boolean = pidIsAlive,
): Promise<DataDirLock> {
  const path = join(dataDir, LOCK_FILE);
  const token = randomUUID();
  for (let attempt = 1; attempt <= LOCK_ATTEMPT_COUNT_MAX; attempt++) {
    try {
      const handle = await open(path, 'wx');
      try {
        await handle.writeFile(`${process.pid} ${token}\n`);
        await handle.sync();
      } finally {
        await handle.close();
      }
      await fsyncDir(dataDir);
      return { release: () => releaseIfOurs(path, token) };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    const ownerPid = await lockOwner(path);
    if (ownerPid !== null && (ownerPid === process.pid || isAlive(ownerPid)))
      throw new DataDirLockedError(dataDir, ownerPid);
    // Stale (its process is gone) or unreadable (a crash while it was written): take it over.
    await rm(path, { force: true });
  }
  throw new Error(`could not take ${path}: another process keeps taking it`);
}

async function lockOwner(path: string): Promise<number | null> {
  try {
    const pid = Number((await readFile(path, 'utf8')).split(' ')[0]);
    return Number.isSafeInteger(pid) && pid > 0 ? pid : null;
  } catch {
    return null;
  }
}

async function releaseIfOurs(path: string, token: string): Promise<void> {
  try {
    if ((await readFile(path, 'utf8')).includes(token)) await rm(path, { force: true });
  } catch {
    // already gone: nothing to release
  }
}

function pidIsAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: the process exists but belongs to someone else.
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
