// Cuts a release: `npm run release -- X.Y.Z [--image [--latest]] [--image-name NAME] [--date YYYY-MM-DD]`.
//
// It checks everything first and writes nothing when a check fails: a clean work tree (untracked files count),
// a version X.Y.Z above package.json's, no tag vX.Y.Z yet, a CHANGELOG.md whose Unreleased section says
// something. Then it sets the version in package.json, package-lock.json and sdk/package.json, moves
// CHANGELOG.md's Unreleased section into `## [X.Y.Z] - DATE` (today in UTC unless --date), commits
// "release X.Y.Z" and tags vX.Y.Z (annotated). With --image it builds the node image with `make image` as
// NAME:X.Y.Z (NAME defaults to localhost/svc), and with --latest tags it NAME:latest too; podman is needed only
// then, so a release can be cut where there is none and the image built by CI from the tag.
//
// Plain Node with no dependency (not TypeScript run by tsx): it runs in a fresh clone before any npm install.
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const root = fileURLToPath(new URL('..', import.meta.url));
const IMAGE_NAME_DEFAULT = 'localhost/svc';
const UNRELEASED_HEADING = '## [Unreleased]';
const USAGE = `usage: npm run release -- X.Y.Z [--image [--latest]] [--image-name NAME] [--date YYYY-MM-DD]

  X.Y.Z          the new version, above package.json's (no leading v; the tag is vX.Y.Z)
  --image        build the node image NAME:X.Y.Z with make image (podman)
  --latest       tag that image NAME:latest too (only with --image)
  --image-name   the image's repository (default ${IMAGE_NAME_DEFAULT})
  --date         the changelog section's date (default today, UTC)`;

class ReleaseError extends Error {}

const VERSION_PATTERN = /^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)$/;
const DATE_PATTERN = /^\d{4}-\d{2}-\d{2}$/;

function parseVersion(text) {
  const match = VERSION_PATTERN.exec(text);
  return match ? match.slice(1, 4).map(Number) : null;
}

function compareVersions(a, b) {
  for (let i = 0; i < 3; i++) if (a[i] !== b[i]) return a[i] - b[i];
  return 0;
}

function git(args, options = {}) {
  return execFileSync('git', args, { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], ...options });
}

function readText(path) {
  return readFileSync(join(root, path), 'utf8');
}

function parseCommandLine(argv) {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      image: { type: 'boolean', default: false },
      latest: { type: 'boolean', default: false },
      'image-name': { type: 'string', default: IMAGE_NAME_DEFAULT },
      date: { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help) return { help: true };
  if (positionals.length !== 1) throw new ReleaseError('give exactly one version, X.Y.Z');
  const version = positionals[0];
  if (!parseVersion(version)) throw new ReleaseError(`${JSON.stringify(version)} is not a version X.Y.Z (e.g. 0.2.0)`);
  if (values.latest && !values.image) throw new ReleaseError('--latest tags the image, so it needs --image');
  const date = values.date ?? new Date().toISOString().slice(0, 10);
  if (!DATE_PATTERN.test(date) || Number.isNaN(Date.parse(`${date}T00:00:00Z`)))
    throw new ReleaseError(`--date takes YYYY-MM-DD, got ${JSON.stringify(date)}`);
  return { help: false, version, date, image: values.image, latest: values.latest, imageName: values['image-name'] };
}

/** setJsonVersion replaces the top-level "version" of a JSON file's text, keeping every other byte. */
function setJsonVersion(path, text, version) {
  const replaced = text.replace(/^( {2}"version":\s*")[^"]*(")/m, `$1${version}$2`);
  if (JSON.parse(replaced).version !== version) throw new ReleaseError(`${path}: no top-level "version" to set`);
  return replaced;
}

/** setLockVersion sets the root package's version in package-lock.json, written back as npm writes it. */
function setLockVersion(text, version) {
  const lock = JSON.parse(text);
  if (`${JSON.stringify(lock, null, 2)}\n` !== text)
    throw new ReleaseError('package-lock.json is not as npm writes it (2-space JSON); run npm install first');
  if (!lock.packages?.['']) throw new ReleaseError('package-lock.json has no root package entry');
  lock.version = version;
  lock.packages[''].version = version;
  return `${JSON.stringify(lock, null, 2)}\n`;
}

/** moveUnreleased puts the Unreleased section's content under a new dated version heading. */
function moveUnreleased(text, version, date) {
  const lines = text.split('\n');
  const at = lines.indexOf(UNRELEASED_HEADING);
  if (at < 0 || lines.indexOf(UNRELEASED_HEADING, at + 1) >= 0)
    throw new ReleaseError(`CHANGELOG.md needs exactly one "${UNRELEASED_HEADING}" heading`);
  let end = at + 1;
  while (end < lines.length && !lines[end].startsWith('## ')) end++;
  if (!lines.slice(at + 1, end).some((line) => /^\s*[-*] \S/.test(line)))
    throw new ReleaseError("CHANGELOG.md's Unreleased section lists nothing: say what this release changes first");
  if (lines.some((line) => line.startsWith(`## [${version}]`)))
    throw new ReleaseError(`CHANGELOG.md already has a section for ${version}`);
  return [...lines.slice(0, at + 1), '', `## [${version}] - ${date}`, ...lines.slice(at + 1)].join('\n');
}

function release(argv) {
  const options = parseCommandLine(argv);
  if (options.help) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  const { version, date } = options;

  // Every check before any write.
  const dirty = git(['status', '--porcelain']).trimEnd();
  if (dirty !== '') throw new ReleaseError(`the work tree is not clean; commit or remove first:\n${dirty}`);
  const tag = `v${version}`;
  if (git(['tag', '--list', tag]).trim() !== '') throw new ReleaseError(`tag ${tag} exists already`);
  const pkgText = readText('package.json');
  const current = JSON.parse(pkgText).version;
  const currentParsed = parseVersion(String(current));
  if (!currentParsed) throw new ReleaseError(`package.json's version ${JSON.stringify(current)} is not X.Y.Z`);
  if (compareVersions(parseVersion(version), currentParsed) <= 0)
    throw new ReleaseError(`${version} is not above the current version ${current}`);
  const files = {
    'package.json': setJsonVersion('package.json', pkgText, version),
    'package-lock.json': setLockVersion(readText('package-lock.json'), version),
    'sdk/package.json': setJsonVersion('sdk/package.json', readText('sdk/package.json'), version),
    'CHANGELOG.md': moveUnreleased(readText('CHANGELOG.md'), version, date),
  };
  if (options.image) {
    try {
      execFileSync('podman', ['--version'], { stdio: 'ignore' });
    } catch {
      throw new ReleaseError('--image needs podman on the PATH (or cut the release without it: CI builds the tag)');
    }
  }

  for (const [path, text] of Object.entries(files)) writeFileSync(join(root, path), text);
  git(['add', '--', ...Object.keys(files)]);
  git(['commit', '--quiet', '-m', `release ${version}`]);
  git(['tag', '--annotate', tag, '-m', `svc ${version}`]);
  process.stdout.write(
    `release ${version}: committed and tagged ${tag} (${current} -> ${version}, changelog ${date})\n`,
  );

  if (options.image) {
    const image = `${options.imageName}:${version}`;
    try {
      execFileSync('make', ['image', `IMAGE=${image}`], { cwd: root, stdio: 'inherit' });
    } catch (err) {
      throw new Error(
        `${version} is committed and tagged ${tag}, but make image failed (${err.message}); build it again with: make image IMAGE=${image}`,
        { cause: err },
      );
    }
    process.stdout.write(`image ${image}\n`);
    if (options.latest) {
      execFileSync('podman', ['tag', image, `${options.imageName}:latest`], { stdio: 'inherit' });
      process.stdout.write(`image ${options.imageName}:latest\n`);
    }
  }
  process.stdout.write(`push it: git push origin HEAD ${tag}\n`);
}

try {
  release(process.argv.slice(2));
} catch (err) {
  if (err instanceof ReleaseError || err?.code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION') {
    process.stderr.write(`release: ${err.message}\n${err instanceof ReleaseError ? '' : `${USAGE}\n`}`);
    process.exit(2);
  }
  process.stderr.write(`release: ${err instanceof Error ? err.stderr?.toString() || err.message : String(err)}\n`);
  process.exit(1);
}
