// One node process per data directory, by an OS lock that dies with its process: a second opener (in this
// process or another) is refused with the owner's pid; a holder killed with -9 leaves nothing that stops the
// next start, even when the LOCK file it left names the new process's own pid (a container's PID 1 restarted)
// or another live pid (pids reused); close releases it.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { acquireDataDirLock, DataDirLockedError, LOCK_FILE } from '../../../transports/storage/data-dir-lock.js';
import { openNodeStorage } from '../../../transports/storage/node-storage.js';

const HOLDER = fileURLToPath(new URL('./lock-holder.ts', import.meta.url));
/** HOLDER_START_TIMEOUT_MS bounds the holder's start (tsx compiles on the fly; two cores are shared). */
const HOLDER_START_TIMEOUT_MS = 30_000;

/** startHolder runs lock-holder.ts on dir and resolves once it holds the lock. */
async function startHolder(dir: string): Promise<ChildProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', HOLDER, dir], { stdio: ['ignore', 'pipe', 'inherit'] });
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('lock holder did not start')), HOLDER_START_TIMEOUT_MS);
    let out = '';
    child.stdout?.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      if (out.includes('locked\n')) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`lock holder exited with ${code}`));
    });
  });
  return child;
}

async function kill9(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGKILL');
  await exited;
}

describe('storage: the data directory lock', () => {
  let dir = '';
  const children: ChildProcess[] = [];
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'svc-lock-'));
  });
  afterEach(async () => {
    for (const child of children.splice(0)) await kill9(child);
    await rm(dir, { recursive: true, force: true });
  });

  it('refuses a second opener in the same process, naming the owner, until the first closes', async () => {
    const first = await openNodeStorage(dir);
    await assert.rejects(
      openNodeStorage(dir),
      (err: unknown) => err instanceof DataDirLockedError && err.ownerPid === process.pid && err.message.includes(dir),
    );
    await first.close();
    const second = await openNodeStorage(dir);
    await second.close();
    await assert.rejects(readFile(join(dir, LOCK_FILE)), 'close removes the lock file');
  });

  it('refuses while another live process holds it, and takes it once that process is killed with -9', async () => {
    const holder = await startHolder(dir);
    children.push(holder);
    await assert.rejects(
      acquireDataDirLock(dir),
      (err: unknown) => err instanceof DataDirLockedError && err.ownerPid === holder.pid,
    );
    await kill9(holder);
    // The holder never removed its file: it still names the dead pid, and nothing holds the lock.
    assert.equal(await readFile(join(dir, LOCK_FILE), 'utf8'), `${holder.pid}\n`);
    const lock = await acquireDataDirLock(dir);
    assert.equal(await readFile(join(dir, LOCK_FILE), 'utf8'), `${process.pid}\n`);
    await lock.release();
  });

  it('takes a LOCK file left naming its own pid: a container restarted as PID 1 after kill -9', async () => {
    // Before the OS lock, a pid-named LOCK equal to ours was refused ("in use by process 1"): a crash loop.
    await writeFile(join(dir, LOCK_FILE), `${process.pid} token-of-the-killed-run\n`);
    const lock = await acquireDataDirLock(dir);
    await lock.release();
  });

  it('takes a LOCK file naming another live pid that holds no lock (a pid reused, or another pid namespace)', async () => {
    await writeFile(join(dir, LOCK_FILE), `${process.ppid} someone-else\n`);
    const lock = await acquireDataDirLock(dir);
    await lock.release();
  });

  it('takes an unreadable LOCK file, and refuses while held whatever the file says', async () => {
    await writeFile(join(dir, LOCK_FILE), 'garbage');
    const lock = await acquireDataDirLock(dir);
    await writeFile(join(dir, LOCK_FILE), 'garbage again');
    await assert.rejects(
      acquireDataDirLock(dir),
      (err: unknown) => err instanceof DataDirLockedError && err.ownerPid === null,
    );
    await lock.release();
  });

  it('release leaves a LOCK file that replaced ours in place, and is idempotent', async () => {
    const lock = await acquireDataDirLock(dir);
    await writeFile(join(dir, 'other'), 'someone else\n');
    await rename(join(dir, 'other'), join(dir, LOCK_FILE));
    await lock.release();
    await lock.release();
    assert.equal(await readFile(join(dir, LOCK_FILE), 'utf8'), 'someone else\n');
  });
});
