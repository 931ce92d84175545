// A debug bundle is input (recording/bundle.ts): extraction answers each member's recording folder, and
// refuses, before writing anything, a link, a file outside the bundle's layout, or a path leaving its folder.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdir, readdir, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import * as tar from 'tar';
import { extractBundle, isBundleFile } from '../../recording/bundle.js';
import { removeDir, tempDir } from '../node/harness.js';

describe('recording: a debug bundle file', function () {
  let dir: string;
  before(async () => {
    dir = await tempDir('bundle-file');
  });
  after(async () => removeDir(dir));

  async function pack(
    name: string,
    files: Record<string, string>,
    links: Record<string, string> = {},
  ): Promise<string> {
    const root = join(dir, `${name}-src`);
    for (const [path, text] of Object.entries(files)) {
      await mkdir(join(root, path, '..'), { recursive: true });
      await writeFile(join(root, path), text);
    }
    for (const [path, to] of Object.entries(links)) {
      await mkdir(join(root, path, '..'), { recursive: true });
      await symlink(to, join(root, path));
    }
    const file = join(dir, `${name}.tar.gz`);
    await tar.c({ gzip: true, file, cwd: root, portable: true, preservePaths: true }, await readdir(root));
    return file;
  }

  it("unpacks every member's recording folder", async function () {
    const file = await pack('good', {
      'bundle.json': '{}',
      'r2/recording/seg-000000000001.rec': 'x\n',
      'r2/status.json': '{}',
      'r1/recording/seg-000000000003.rec': 'y\n',
      'r1/logs.jsonl': '',
      'r1/metrics.txt': '',
    });
    assert.ok(isBundleFile(file));
    assert.ok(!isBundleFile(join(dir, 'absent.tar.gz')));
    const into = join(dir, 'good-out');
    await mkdir(into);
    assert.deepEqual(extractBundle(file, into), [join(into, 'r1', 'recording'), join(into, 'r2', 'recording')]);
    assert.ok(existsSync(join(into, 'r1', 'recording', 'seg-000000000003.rec')));
  });

  it('refuses a link, a file outside the layout, and a path leaving its folder, writing nothing', async function () {
    const link = await pack(
      'link',
      { 'r1/recording/seg-000000000001.rec': 'x\n' },
      { 'r1/status.json': '/etc/passwd' },
    );
    const stray = await pack('stray', { 'r1/recording/seg-000000000001.rec': 'x\n', 'r1/run.sh': 'rm -rf /' });
    // A path leaving the folder: an entry named ../escaped.txt.
    const escapeSrc = join(dir, 'escape-src');
    await mkdir(join(escapeSrc, 'r1', 'recording'), { recursive: true });
    await writeFile(join(dir, 'escaped.txt'), 'out');
    const escape = join(dir, 'escape.tar.gz');
    await tar.c({ gzip: true, file: escape, cwd: escapeSrc, preservePaths: true }, ['r1', '../escaped.txt']);
    for (const [name, file] of Object.entries({ link, stray, escape })) {
      const into = join(dir, `${name}-out`);
      await mkdir(into);
      assert.throws(() => extractBundle(file, into), /is not a debug bundle/, name);
      assert.deepEqual(await readdir(into), [], `${name}: nothing written`);
    }
  });
});
