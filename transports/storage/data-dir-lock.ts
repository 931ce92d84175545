// DataDirLock keeps two node processes off one data directory: two writers on one WAL and one hard
// state would break every promise the node makes (a vote cast twice, entries overwritten).
//
// The lock is an OS lock: flock(LOCK_EX | LOCK_NB) on <data>/LOCK, held by an open file descriptor for the
// process's life. The kernel drops it when its process dies, however it dies (kill -9, OOM), so a restart
// never has to guess whether the previous owner is alive. An earlier version judged a LOCK file by the pid
// written in it, which cannot work in a container: the node runs as PID 1 there, so after a kill -9 the
// restarted container (PID 1 again, in a new pid namespace) found "its own" pid in the file and refused to
// start, and a pid is also meaningless across two containers sharing a volume. An identity that survives pid
// reuse (pid + start time + boot id) still cannot see a live owner in another container's pid namespace; the
// kernel's lock can, as long as both see the same file system on one kernel. Two opens in one process are
// two open file descriptions, so a second opener in the same process is refused too.
//
// Node has no flock of its own; fs-ext-extra-prebuilt ships prebuilt binaries for Linux, macOS and Windows
// (glibc; Node 20 to 25) inside its package, so it needs no install script and no compiler, which npm 11
// skips here and the image has not. The file still holds the owner's pid (as its own pid namespace numbers
// it), for the refusal's message only. A data directory shared between hosts (a network file system) is not
// something this lock is trusted to guard, and operations.md says so.
import {
  closeSync,
  constants,
  fstatSync,
  fsyncSync,
  ftruncateSync,
  openSync,
  statSync,
  unlinkSync,
  writeSync,
} from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fsyncDir } from './durable-fs.js';

export const LOCK_FILE = 'LOCK';
/**
 * LOCK_ATTEMPT_COUNT_MAX bounds retries when the file we locked was unlinked by its releasing owner between our
 * open and our flock (we then hold a lock on a file nobody else will open, and must open the path again).
 */
const LOCK_ATTEMPT_COUNT_MAX = 3;

export class DataDirLockedError extends Error {
  constructor(
    readonly dataDir: string,
    /** ownerPid is the pid the owner wrote (numbered in its own pid namespace), null when it is unreadable. */
    readonly ownerPid: number | null,
  ) {
    super(
      `data directory ${dataDir} is in use by ${ownerPid === null ? 'another process' : `process ${ownerPid}`} (it holds the lock on its ${LOCK_FILE} file); stop that node first`,
    );
    this.name = 'DataDirLockedError';
  }
}

export interface DataDirLock {
  release(): Promise<void>;
}

type Flock = (fd: number, flags: 'exnb') => number;

let flockSync: Flock | null = null;

/** loadFlock loads the native flock once; a platform without a prebuilt binary gets a clear error at acquire. */
function loadFlock(): Flock {
  if (flockSync) return flockSync;
  try {
    const fsExt = createRequire(import.meta.url)('fs-ext-extra-prebuilt') as { flockSync: Flock };
    flockSync = fsExt.flockSync;
    return flockSync;
  } catch (err) {
    throw new Error(
      `cannot lock the data directory: the flock binding (fs-ext-extra-prebuilt) does not load on ${process.platform}-${process.arch} Node ${process.version}: ${err instanceof Error ? err.message : String(err)}`,
      { cause: err },
    );
  }
}

/** acquireDataDirLock takes the lock on dataDir (which must exist), or throws DataDirLockedError. */
export async function acquireDataDirLock(dataDir: string): Promise<DataDirLock> {
  const flock = loadFlock();
  const path = join(dataDir, LOCK_FILE);
  for (let attempt = 1; attempt <= LOCK_ATTEMPT_COUNT_MAX; attempt++) {
    const fd = openSync(path, constants.O_RDWR | constants.O_CREAT, 0o644);
    try {
      flock(fd, 'exnb');
    } catch (err) {
      closeSync(fd);
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'EAGAIN' || code === 'EWOULDBLOCK') throw new DataDirLockedError(dataDir, await lockOwner(path));
      throw err;
    }
    if (!isStillAt(fd, path)) {
      closeSync(fd);
      continue;
    }
    try {
      ftruncateSync(fd, 0);
      writeSync(fd, `${process.pid}\n`, 0);
      fsyncSync(fd);
      await fsyncDir(dataDir);
    } catch (err) {
      closeSync(fd);
      throw err;
    }
    return { release: releaser(fd, path) };
  }
  throw new Error(`could not take ${path}: its file kept being replaced while we locked it`);
}

/** isStillAt says the file open on fd is the one at path (an owner's release unlinks the file it held). */
function isStillAt(fd: number, path: string): boolean {
  try {
    const held = fstatSync(fd);
    const there = statSync(path);
    return held.ino === there.ino && held.dev === there.dev;
  } catch {
    return false;
  }
}

/**
 * releaser removes the file while still holding its lock (so a waiting opener finds the path gone or new, and
 * isStillAt sends it round again), then closes the descriptor, which drops the lock. Idempotent.
 */
function releaser(fd: number, path: string): () => Promise<void> {
  let released = false;
  return () => {
    if (released) return Promise.resolve();
    released = true;
    try {
      if (isStillAt(fd, path)) unlinkSync(path);
    } finally {
      closeSync(fd);
    }
    return Promise.resolve();
  };
}

async function lockOwner(path: string): Promise<number | null> {
  try {
    const pid = Number((await readFile(path, 'utf8')).trim().split(/\s/)[0]);
    return Number.isSafeInteger(pid) && pid > 0 ? pid : null;
  } catch {
    return null;
  }
}
