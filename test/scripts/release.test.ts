// `npm run release -- X.Y.Z` in a scratch clone of this repository (git clone into a temp dir; no npm install
// there: the script and `svc --version` need no node_modules): the commit, the annotated tag, the versions of the
// package, its lock and the SDK, the changelog section, and `node bin/svc.js --version`. And its refusals, each
// leaving the clone as it was: a bad or not-newer version, --latest without --image, a dirty tree, a tag that
// exists. The image (--image) is not built here: make image-test covers the image.
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const REPO = fileURLToPath(new URL('../..', import.meta.url));
/** RELEASE_TIMEOUT_MS bounds one run of the script (git and npm only; two shared cores). */
const RELEASE_TIMEOUT_MS = 60_000;
const DATE = '2026-01-02';
const GIT_IDENTITY = {
  GIT_AUTHOR_NAME: 'release test',
  GIT_AUTHOR_EMAIL: 'release-test@example.invalid',
  GIT_COMMITTER_NAME: 'release test',
  GIT_COMMITTER_EMAIL: 'release-test@example.invalid',
};

interface Run {
  status: number | null;
  stdout: string;
  stderr: string;
}

describe('npm run release in a scratch clone', function () {
  this.timeout(300_000);
  let dir = '';
  let clone = '';
  let target = '';
  let headBefore = '';

  const inClone = (command: string, args: string[]): Run => {
    const result = spawnSync(command, args, {
      cwd: clone,
      encoding: 'utf8',
      timeout: RELEASE_TIMEOUT_MS,
      env: { ...process.env, ...GIT_IDENTITY },
    });
    return { status: result.status, stdout: result.stdout, stderr: result.stderr };
  };
  const release = (...args: string[]): Run => inClone('npm', ['run', '--silent', 'release', '--', ...args]);
  const git = (...args: string[]): string => execFileSync('git', args, { cwd: clone, encoding: 'utf8' }).trim();
  const versionOf = async (path: string): Promise<string> =>
    (JSON.parse(await readFile(join(clone, path), 'utf8')) as { version: string }).version;

  /** assertUntouched: a refused release wrote, committed and tagged nothing. */
  const assertUntouched = async (): Promise<void> => {
    assert.equal(git('rev-parse', 'HEAD'), headBefore);
    assert.equal(git('tag', '--list', `v${target}`), '');
    assert.equal(git('status', '--porcelain'), '');
  };

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'svc-release-'));
    clone = join(dir, 'clone');
    execFileSync('git', ['clone', '--quiet', REPO, clone]);
    headBefore = git('rev-parse', 'HEAD');
    // v0.2.0, the first release, while the repository is before it; the next minor once it is past it.
    const [major = 0, minor = 0] = (await versionOf('package.json')).split('.').map(Number);
    target = major === 0 && minor < 2 ? '0.2.0' : `${major}.${minor + 1}.0`;
  });

  after(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('refuses a bad version, one not above the current, and --latest without --image, writing nothing', async () => {
    const current = await versionOf('package.json');
    for (const [args, message] of [
      [['0.2'], /is not a version X\.Y\.Z/],
      [[`v${target}`], /is not a version X\.Y\.Z/],
      [[current], /is not above the current version/],
      [[], /give exactly one version/],
      [[target, '--latest'], /--latest tags the image, so it needs --image/],
      [[target, '--date', '2026-13-45'], /--date takes YYYY-MM-DD/],
    ] as const) {
      const run = release(...args);
      assert.equal(run.status, 2, `${args.join(' ')}: ${run.stderr}`);
      assert.match(run.stderr, message);
      await assertUntouched();
    }
  });

  it('refuses a dirty work tree, an untracked file included', async () => {
    await writeFile(join(clone, 'stray.txt'), 'not committed\n');
    const run = release(target);
    assert.equal(run.status, 2, run.stderr);
    assert.match(run.stderr, /the work tree is not clean[\s\S]*stray\.txt/);
    await rm(join(clone, 'stray.txt'));
    await assertUntouched();
  });

  it(`commits, tags, writes the changelog section, and svc --version says the new version`, async () => {
    const changelogBefore = await readFile(join(clone, 'CHANGELOG.md'), 'utf8');
    const unreleased = /^## \[Unreleased\]\n([\s\S]*?)(?=^## |(?![\s\S]))/m.exec(changelogBefore)?.[1] ?? '';
    assert.match(unreleased, /^- /m, 'the Unreleased section lists something');

    const run = release(target, '--date', DATE);
    assert.equal(run.status, 0, run.stderr);
    assert.match(run.stdout, new RegExp(`committed and tagged v${target.replaceAll('.', '\\.')}`));

    assert.equal(git('log', '-1', '--format=%s'), `release ${target}`);
    assert.equal(git('rev-parse', 'HEAD~1'), headBefore, 'one commit on top');
    assert.equal(git('cat-file', '-t', `v${target}`), 'tag', 'an annotated tag');
    assert.equal(git('rev-parse', `v${target}^{commit}`), git('rev-parse', 'HEAD'));
    assert.equal(git('status', '--porcelain'), '');
    assert.deepEqual(git('show', '--name-only', '--format=', 'HEAD').split('\n').sort(), [
      'CHANGELOG.md',
      'package-lock.json',
      'package.json',
      'sdk/package.json',
    ]);

    assert.equal(await versionOf('package.json'), target);
    assert.equal(await versionOf('sdk/package.json'), target);
    const lock = JSON.parse(await readFile(join(clone, 'package-lock.json'), 'utf8')) as {
      version: string;
      packages: Record<string, { version?: string }>;
    };
    assert.equal(lock.version, target);
    assert.equal(lock.packages['']?.version, target);

    const changelog = await readFile(join(clone, 'CHANGELOG.md'), 'utf8');
    assert.ok(
      changelog.includes(`## [Unreleased]\n\n## [${target}] - ${DATE}\n${unreleased}`),
      'the Unreleased content moved under the dated section, and Unreleased is empty',
    );

    const version = inClone(process.execPath, ['bin/svc.js', '--version']);
    assert.equal(version.status, 0, version.stderr);
    assert.equal(version.stdout, `svc ${target}\n`);
  });

  it('refuses the same version again (its tag exists), and an empty Unreleased section', async () => {
    headBefore = git('rev-parse', 'HEAD');
    const again = release(target);
    assert.equal(again.status, 2);
    assert.match(again.stderr, new RegExp(`tag v${target.replaceAll('.', '\\.')} exists already`));
    const [major = 0, minor = 0] = target.split('.').map(Number);
    const next = release(`${major}.${minor + 1}.0`);
    assert.equal(next.status, 2);
    assert.match(next.stderr, /Unreleased section lists nothing/);
    assert.equal(git('rev-parse', 'HEAD'), headBefore);
    assert.equal(git('status', '--porcelain'), '');
  });
});
