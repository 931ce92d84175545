// npm run build: the svc app as compiled JavaScript in dist/, laid out as the repository is (dist/cli/main.js
// where cli/main.ts is), so every path a module finds relative to itself (../bin/svc.js, ../../agent,
// ./view/…, ../../package.json) holds there too. tsc (tsconfig.build.json) compiles the runtime folders; the few
// files they read at run time are copied beside them. bin/svc.js runs dist's compiled CLI when it sits there
// (dist/bin/svc.js finds ../cli/main.js), and the checkout's TypeScript through tsx otherwise.
// The image (make image) is dist/ with production dependencies only; nothing here needs tsx.
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, relative, resolve } from 'node:path';

const root = new URL('..', import.meta.url).pathname;
const out = resolve(root, process.argv[2] ?? 'dist');
/** assets are the non-TypeScript files the runtime reads from beside its own modules. */
const assets = [
  'package.json',
  'package-lock.json',
  'bin/svc.js',
  'agent',
  'api/albums/view',
  'api/cluster/view',
  'api/view-kit/page-kit.js',
];

// Only a folder this script built (it leaves a marker) is replaced, never one it did not make (`build .` would
// otherwise delete the repository).
const marker = '.svc-build';
if (existsSync(out) && readdirSync(out).length > 0 && !existsSync(join(out, marker)))
  throw new Error(`${out} exists and was not made by this build: remove it first, or build elsewhere`);
rmSync(out, { recursive: true, force: true });
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
execFileSync(process.execPath, [tsc, '-p', join(root, 'tsconfig.build.json'), '--outDir', out], {
  cwd: root,
  stdio: 'inherit',
});
for (const asset of assets) cpSync(join(root, asset), join(out, asset), { recursive: true });
writeFileSync(join(out, marker), 'made by scripts/build.mjs\n');

// What was built: compiled JavaScript and the assets, never TypeScript (tsx is not there to run it).
const list = (dir) =>
  readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? list(path) : [path];
  });
const typescript = list(out).filter((path) => /\.[cm]?ts$/.test(path));
if (typescript.length > 0) throw new Error(`the build holds TypeScript: ${typescript.map((p) => relative(out, p))}`);
if (!existsSync(join(out, 'cli/main.js'))) throw new Error('the build has no cli/main.js');
console.log(`built ${relative(root, out) || '.'}: ${list(out).length} files`);
