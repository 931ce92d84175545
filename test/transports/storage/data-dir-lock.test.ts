// One node process per data directory: a second opener is refused with the owner's pid; a lock
// left by a process that is gone (kill -9) is taken over; close releases it.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { acquireDataDirLock, DataDirLockedError, LOCK_FILE } from '../../../transports/storage/data-dir-lock.js';
import { openNodeStorage } from '../../../transports/storage/node-storage.js';

describe('storage: the data directory lock', () => {
  let dir = '';
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'svc-lock-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('refuses a second opener of the same data directory, naming the owner, until the first closes', async () => {
    const first = await openNodeStorage(dir);
    await assert.rejects(
      openNodeStorage(dir),
      (err: unknown) => err instanceof DataDirLockedError && err.ownerPid === process.pid && err.message.includes(dir),
    );
    await first.close();
    const second = await openNodeStorage(dir);
    await second.close();
    await assert.rejects(readFile(join(dir, LOCK_FILE)), 'close removes the lock');
  });

  it('refuses while another live process holds it', async () => {
    // A live process that is not us: our parent (the test runner's shell or npm) is alive for the whole test.
    await writeFile(join(dir, LOCK_FILE), `${process.ppid} someone-else\n`);
    await assert.rejects(
      acquireDataDirLock(dir),
      (err: unknown) => err instanceof DataDirLockedError && err.ownerPid === process.ppid,
    );
  });

  it('takes over a lock whose process is gone, and one that is unreadable', async () => {
    const gone = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
    const deadPid = Number(gone.stdout);
    assert.ok(deadPid > 0);
    await writeFile(join(dir, LOCK_FILE), `${deadPid} old-token\n`);
    const lock = await acquireDataDirLock(dir);
    assert.match(await readFile(join(dir, LOCK_FILE), 'utf8'), new RegExp(`^${process.pid} `));
    await lock.release();
    await writeFile(join(dir, LOCK_FILE), 'garbage');
    const again = await acquireDataDirLock(dir);
    await again.release();
  });

  it('release leaves a lock that another process took over in place', async () => {
    const lock = await acquireDataDirLock(dir);
    await writeFile(join(dir, LOCK_FILE), `${process.ppid} taken-over\n`);
    await lock.release();
    assert.equal(await readFile(join(dir, LOCK_FILE), 'utf8'), `${process.ppid} taken-over\n`);
  });
});
