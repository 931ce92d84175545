// npm run build: the svc app as compiled JavaScript in dist/, laid out as the repository is (dist/cli/main.js
// where cli/main.ts is), so every path a module finds relative to itself (../bin/svc.js, ../../agent,
// ./view/…, ../../package.json) holds there too. tsc (tsconfig.build.json) compiles the runtime folders; the few
// files they read at run time are copied beside them. bin/svc.js runs dist's compiled CLI when it sits there
// (dist/bin/svc.js finds ../cli/main.js), and the checkout's TypeScript through tsx otherwise.
// The image (make image) is dist/ with production dependencies only; nothing here needs tsx.
//
// The node's start is mostly module loading (hundreds of files, ours and node_modules', through Node's loader:
// docs/operations.md), so the build also bundles the CLI with esbuild into one file, bundle/svc.mjs, which
// bin/svc.js runs when it is there. The tsc tree stays beside it (the launcher falls back to it, and it is what a
// reader of a stack trace in the unbundled layout finds). A bundled module's import.meta.url is the bundle's, so
// every file the code reads from beside itself is found through layout/app-files.ts, which knows both layouts.
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { build } from 'esbuild';
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

/**
 * unbundled are the production dependencies left as imports of the bundle, resolved from node_modules at run
 * time: native addons (a .node file is no JavaScript to inline) and packages that load files of their own by
 * computed paths the bundler cannot follow.
 */
const unbundled = [
  'sharp', // native (libvips); loads its platform's optional package by a computed name
  'fs-ext-extra-prebuilt', // native (flock); required at run time by transports/storage/data-dir-lock.ts
  'msgpackr-extract', // native (bullmq's msgpackr's decoder); inlined, it would find no .node and fall back to JS
];
await build({
  entryPoints: [join(root, 'cli/main.ts')],
  // Split at the CLI's dynamic imports (one per command, the API's lazy modules): a command loads its own chunks
  // only, as unbundled it loads its own modules only.
  outdir: join(out, 'bundle'),
  entryNames: 'svc',
  chunkNames: 'chunk-[hash]',
  outExtension: { '.js': '.mjs' },
  splitting: true,
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  external: unbundled,
  // layout/app-files.ts: the code runs from the bundle (its import.meta.url is bundle/svc.mjs).
  define: { SVC_BUNDLE: JSON.stringify('bundle/svc.mjs') },
  // The CommonJS packages inlined here call require() for Node's built-ins and the unbundled packages; an ES
  // module has no require, nor __dirname. The inlined packages that use __dirname do so only off the paths this
  // app takes (ioredis to trim error stacks; grpc-js to load channelz's and ORCA's protos, services never
  // registered here; bullmq for sandboxed processor files, never used; pino's transports, never configured), so
  // it is the bundle's folder: such a use would fail on a missing file, not on an undefined name.
  banner: {
    js: [
      "import { createRequire as svcBundleRequire } from 'node:module';",
      "import { dirname as svcBundleDirname } from 'node:path';",
      "import { fileURLToPath as svcBundleFileURLToPath } from 'node:url';",
      'const require = svcBundleRequire(import.meta.url);',
      'const __filename = svcBundleFileURLToPath(import.meta.url);',
      'const __dirname = svcBundleDirname(__filename);',
    ].join('\n'),
  },
  // Whitespace and syntax minified: less text to parse at start (~8% of the CPU by the first 200 here); names are
  // kept, so a stack trace names the functions (its line numbers are the bundle's; the tsc tree beside it reads).
  keepNames: true,
  minifyWhitespace: true,
  minifySyntax: true,
  legalComments: 'linked',
  logLevel: 'warning',
});
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
if (!existsSync(join(out, 'bundle/svc.mjs'))) throw new Error('the build has no bundle/svc.mjs');
console.log(`built ${relative(root, out) || '.'}: ${list(out).length} files`);
