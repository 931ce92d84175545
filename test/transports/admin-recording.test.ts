// The Admin Recording call's reads (transports/admin/recording-reads.ts): it lists segment files, reads a
// bounded chunk of one, and refuses any name that is not a segment file's (no path leaves the directory),
// and a node that records nothing.
import assert from 'node:assert/strict';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { AdminCallError } from '../../transports/admin/admin-client.js';
import { readRecording } from '../../transports/admin/recording-reads.js';
import { ADMIN_RECORDING_CHUNK_BYTES_MAX } from '../../transports/admin/limits.js';
import { removeDir, tempDir } from '../node/harness.js';

describe('admin: Recording reads', function () {
  let dir: string;
  before(async () => {
    dir = await tempDir('admin-recording');
    await mkdir(join(dir, 'recording'));
    await writeFile(
      join(dir, 'recording', 'seg-000000000001.rec'),
      Buffer.alloc(ADMIN_RECORDING_CHUNK_BYTES_MAX + 10, 'a'),
    );
    await writeFile(join(dir, 'recording', 'notes.txt'), 'not a segment');
    await writeFile(join(dir, 'secret.key'), 'key');
  });
  after(async () => removeDir(dir));

  const refusal = (code: number) => (err: unknown) => err instanceof AdminCallError && err.code === code;

  it('lists only segment files, and reads one in chunks of at most ADMIN_RECORDING_CHUNK_BYTES_MAX', async function () {
    const list = await readRecording(join(dir, 'recording'), { name: '', offset: 0, bytesMax: 0 });
    assert.deepEqual(
      list.segments.map((s) => [s.name, s.size]),
      [['seg-000000000001.rec', ADMIN_RECORDING_CHUNK_BYTES_MAX + 10]],
    );
    const first = await readRecording(join(dir, 'recording'), { name: 'seg-000000000001.rec', offset: 0, bytesMax: 0 });
    assert.equal(first.data.length, ADMIN_RECORDING_CHUNK_BYTES_MAX);
    assert.equal(first.eof, false);
    const rest = await readRecording(join(dir, 'recording'), {
      name: 'seg-000000000001.rec',
      offset: first.data.length,
      bytesMax: 100,
    });
    assert.equal(rest.data.length, 10);
    assert.equal(rest.eof, true);
  });

  it('refuses a name that is not a segment file, a missing segment, and a node that records nothing', async function () {
    for (const name of ['../secret.key', 'notes.txt', '/etc/passwd', 'seg-1.rec'])
      await assert.rejects(
        readRecording(join(dir, 'recording'), { name, offset: 0, bytesMax: 10 }),
        refusal(grpc.status.INVALID_ARGUMENT),
        name,
      );
    await assert.rejects(
      readRecording(join(dir, 'recording'), { name: 'seg-000000000009.rec', offset: 0, bytesMax: 10 }),
      refusal(grpc.status.NOT_FOUND),
    );
    await assert.rejects(
      readRecording(null, { name: '', offset: 0, bytesMax: 0 }),
      refusal(grpc.status.FAILED_PRECONDITION),
    );
  });
});
