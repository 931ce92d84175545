// The backup file (cli/backup/backup-file.ts) on real files: a written backup verifies and reads back; a byte
// flipped in any part of it (magic, manifest length, manifest, file bytes, trailer), a cut at any part, bytes
// past its end and a stream that does not match its header are each refused, naming what is wrong.
import assert from 'node:assert/strict';
import { mkdir, readFile, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  BACKUP_FORMAT,
  BACKUP_FORMAT_VERSION,
  BACKUP_MAGIC,
  BackupError,
  BackupWriter,
  readBackupFile,
  verifyBackup,
  type BackupManifest,
} from '../../cli/backup/backup-file.js';
import { blake3Bytes, toHex } from '../../transports/storage/blake3.js';
import { removeDir, tempDir } from './helpers.js';

const STORE = Buffer.from(JSON.stringify({ v: 1, appliedSeq: 7, entries: [['k', 1, { a: 1 }]], dedup: [] }));
const EXTRA = Buffer.alloc(3000, 7);

async function manifest(): Promise<BackupManifest> {
  return {
    format: BACKUP_FORMAT,
    version: BACKUP_FORMAT_VERSION,
    index: 7,
    term: 2,
    clusterId: 'abc123',
    membershipVersion: 1,
    roster: [{ id: 1, name: 'n1', grpcAddr: '127.0.0.1:1', httpAddr: 'http://127.0.0.1:2', role: 'voter' }],
    createdAt: new Date(0).toISOString(),
    buildVersion: '0.1.0',
    servedBy: 'n1',
    files: [
      { path: 'store.json', size: STORE.length, blake3: toHex(await blake3Bytes(STORE)) },
      { path: 'empty', size: 0, blake3: toHex(await blake3Bytes(new Uint8Array())) },
      { path: 'more/extra.bin', size: EXTRA.length, blake3: toHex(await blake3Bytes(EXTRA)) },
    ],
  };
}

describe('backup file: format, verify, refusals', function () {
  let dir: string;
  let good: string;
  let bytes: Buffer;

  before(async function () {
    dir = await tempDir('backup-file');
    good = join(dir, 'good.svcbak');
    const writer = await BackupWriter.create(good, await manifest());
    await writer.append('store.json', 0, STORE.subarray(0, 10));
    await writer.append('store.json', 10, STORE.subarray(10));
    await writer.append('more/extra.bin', 0, EXTRA);
    await writer.commit();
    bytes = await readFile(good);
  });

  after(async function () {
    if (dir) await removeDir(dir);
  });

  it('a written backup verifies, its files read back, and only the file itself is left in the directory', async function () {
    const verified = await verifyBackup(good);
    assert.equal(verified.manifest.index, 7);
    assert.equal(verified.bytes, bytes.length);
    assert.deepEqual(await readBackupFile(verified, 0), STORE);
    assert.deepEqual(await readBackupFile(verified, 2), EXTRA);
    assert.ok(bytes.subarray(0, BACKUP_MAGIC.length).equals(BACKUP_MAGIC));
    assert.deepEqual(await readdir(dir), ['good.svcbak'], 'no temp file is left');
  });

  it('a byte flipped in each part is refused, naming the damage', async function () {
    const manifestLength = bytes.readUInt32BE(BACKUP_MAGIC.length);
    const filesAt = BACKUP_MAGIC.length + 4 + manifestLength;
    const cases: Array<[string, number, RegExp]> = [
      ['magic', 0, /wrong magic/],
      ['manifest length', BACKUP_MAGIC.length + 3, /truncated|manifest|past its end/],
      ['manifest', BACKUP_MAGIC.length + 4 + Math.floor(manifestLength / 2), /manifest|damaged/],
      ['store.json', filesAt + 5, /store\.json has BLAKE3 .* damaged/],
      ['the second file', filesAt + STORE.length + 100, /more\/extra\.bin has BLAKE3/],
      ['trailer', bytes.length - 1, /whole-file BLAKE3 .* damaged/],
    ];
    for (const [part, at, message] of cases) {
      const copy = Buffer.from(bytes);
      copy[at] = copy[at]! ^ 0x40;
      const path = join(dir, `flip-${at}.svcbak`);
      await writeFile(path, copy);
      await assert.rejects(verifyBackup(path), (err: Error) => {
        assert.ok(err instanceof BackupError, `${part}: ${String(err)}`);
        assert.match(err.message, message, part);
        return true;
      });
    }
  });

  it('a cut file (at every part) and bytes past the end are refused', async function () {
    for (const length of [
      0,
      5,
      BACKUP_MAGIC.length + 2,
      BACKUP_MAGIC.length + 20,
      bytes.length - 40,
      bytes.length - 1,
    ]) {
      const path = join(dir, `cut-${length}.svcbak`);
      await writeFile(path, bytes.subarray(0, length));
      await assert.rejects(verifyBackup(path), /truncated|wrong magic/, `cut at ${length}`);
    }
    const longer = join(dir, 'longer.svcbak');
    await writeFile(longer, Buffer.concat([bytes, Buffer.from('x')]));
    await assert.rejects(verifyBackup(longer), /1 bytes past its end/);
    await assert.rejects(verifyBackup(join(dir, 'missing.svcbak')), /cannot read/);
  });

  it('the writer refuses bytes out of order, past a size or with another digest, and leaves no file', async function () {
    const attempts: Array<[string, (w: BackupWriter) => Promise<unknown>, RegExp]> = [
      ['a wrong file first', (w) => w.append('more/extra.bin', 0, EXTRA), /expected "store.json" at offset 0/],
      ['a gap', (w) => w.append('store.json', 3, STORE.subarray(3)), /at offset 0/],
      ['past the size', (w) => w.append('store.json', 0, Buffer.concat([STORE, Buffer.from('x')])), /runs past/],
      ['other bytes', (w) => w.append('store.json', 0, Buffer.alloc(STORE.length, 1)), /received bytes have BLAKE3/],
      ['an early end', (w) => w.commit(), /ended inside store\.json/],
    ];
    for (const [what, act, message] of attempts) {
      const out = join(dir, 'refused', 'x.svcbak');
      await mkdir(join(dir, 'refused'), { recursive: true });
      const writer = await BackupWriter.create(out, await manifest());
      await assert.rejects(
        act(writer).then(() => writer.commit()),
        message,
        what,
      );
      await writer.abort();
      assert.deepEqual(await readdir(join(dir, 'refused')), [], `${what}: nothing is left`);
    }
  });
});
