// DiskUsage (transports/node/node-stats.ts): the bytes of the regular files under a data directory, nested
// directories included, symbolic links neither counted nor followed, a hard-linked file once, at most fileCountMax
// entries visited.
import assert from 'node:assert/strict';
import { link, mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DiskUsage } from '../../transports/node/node-stats.js';

describe('node: disk usage of the data directory', function () {
  let root: string;

  beforeEach(async function () {
    root = await mkdtemp(join(tmpdir(), 'svc-disk-usage-'));
  });

  afterEach(async function () {
    await rm(root, { recursive: true, force: true });
  });

  it('sums the regular files of the whole tree and follows no symbolic link', async function () {
    const data = join(root, 'data');
    await mkdir(join(data, 'wal'), { recursive: true });
    await mkdir(join(data, 'recording', 'old'), { recursive: true });
    await mkdir(join(data, 'snapshots'));
    await writeFile(join(data, 'hard-state.json'), 'x'.repeat(10));
    await writeFile(join(data, 'wal', '1.wal'), Buffer.alloc(1000));
    await writeFile(join(data, 'wal', '2.wal'), Buffer.alloc(234));
    for (let i = 0; i < 9; i++) await writeFile(join(data, 'recording', `seg-${i}.rec`), Buffer.alloc(100));
    await writeFile(join(data, 'recording', 'old', 'seg.rec'), Buffer.alloc(5));
    // Outside the tree, reached only through links: neither the file nor the directory counts.
    await mkdir(join(root, 'elsewhere'));
    await writeFile(join(root, 'elsewhere', 'big'), Buffer.alloc(50_000));
    await symlink(join(root, 'elsewhere', 'big'), join(data, 'snapshots', 'link-to-file'));
    await symlink(join(root, 'elsewhere'), join(data, 'link-to-dir'));
    // A hard link (a layered snapshot's reused layer) is one file on disk: counted once.
    await writeFile(join(data, 'snapshots', 'store.json'), Buffer.alloc(3000));
    await link(join(data, 'snapshots', 'store.json'), join(data, 'snapshots', 'store-again.json'));
    const usage = new DiskUsage(data, 1_000);
    assert.equal(usage.bytes, 0);
    await usage.refresh();
    assert.equal(usage.bytes, 10 + 1000 + 234 + 9 * 100 + 5 + 3000);
    // A file removed and another grown: the next walk sees the tree as it is.
    await rm(join(data, 'wal', '1.wal'));
    await writeFile(join(data, 'wal', '2.wal'), Buffer.alloc(300));
    await usage.refresh();
    assert.equal(usage.bytes, 10 + 300 + 9 * 100 + 5 + 3000);
  });

  it('visits at most fileCountMax entries, and a missing directory measures 0', async function () {
    for (let i = 0; i < 10; i++) await writeFile(join(root, `f${i}`), Buffer.alloc(7));
    const bounded = new DiskUsage(root, 4);
    await bounded.refresh();
    assert.equal(bounded.bytes, 4 * 7);
    const missing = new DiskUsage(join(root, 'absent'), 100);
    await missing.refresh();
    assert.equal(missing.bytes, 0);
  });
});
