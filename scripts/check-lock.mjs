// npm run check:lock (make test): fails when `npm install` would change package-lock.json, as it did when the lock
// lacked the other platforms' optional packages (buf's darwin/win32 builds): then a fresh clone's `npm install`
// rewrites it, and `npm ci` on another platform installs without them. npm resolves the lock again in a scratch
// folder (--package-lock-only: registry metadata, nothing installed, the work tree untouched) and the result
// must be the committed file, byte for byte.
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const root = new URL('..', import.meta.url).pathname;
const scratch = mkdtempSync(join(tmpdir(), 'svc-lock-'));
try {
  for (const file of ['package.json', 'package-lock.json']) copyFileSync(join(root, file), join(scratch, file));
  const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
  execFileSync(npm, ['install', '--package-lock-only', '--ignore-scripts', '--no-audit', '--no-fund'], {
    cwd: scratch,
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const committed = readFileSync(join(root, 'package-lock.json'), 'utf8');
  const resolved = readFileSync(join(scratch, 'package-lock.json'), 'utf8');
  if (resolved !== committed) {
    const packages = (text) => new Set(Object.keys(JSON.parse(text).packages ?? {}));
    const [before, after] = [packages(committed), packages(resolved)];
    const added = [...after].filter((name) => !before.has(name));
    const removed = [...before].filter((name) => !after.has(name));
    console.error('package-lock.json is not what npm install makes of package.json: run `npm install` and commit it.');
    if (added.length > 0) console.error(`  npm would add: ${added.join(', ')}`);
    if (removed.length > 0) console.error(`  npm would remove: ${removed.join(', ')}`);
    if (added.length + removed.length === 0) console.error('  (the same packages; versions, flags or order differ)');
    process.exit(1);
  }
  console.log('package-lock.json is what npm install makes of package.json');
} finally {
  rmSync(scratch, { recursive: true, force: true });
}
