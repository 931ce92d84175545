// The build (npm run build, scripts/build.mjs): the app as compiled JavaScript, run with only the production
// dependencies in sight, as the image runs it. The built tree sits outside the checkout with a node_modules of its
// own that holds only package.json's `dependencies` (linked to the checkout's), so a module of the app that
// needed tsx, TypeScript or a dev dependency would fail to load here. The launcher's choice between compiled and
// TypeScript is checked on its own too.
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import {
  copyFileSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { builtinModules } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { build } from 'esbuild';
import { freePorts } from '../../cli/free-ports.js';
import { SEGMENT_FILE } from '../../recording/format.js';
import { waitFor } from '../node/harness.js';

const run = promisify(execFile);
const repo = path.resolve(import.meta.dirname, '../..');
const pkg = JSON.parse(readFileSync(path.join(repo, 'package.json'), 'utf8')) as {
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
};

const filesUnder = (dir: string): string[] =>
  readdirSync(dir).flatMap((name) => {
    const entry = path.join(dir, name);
    if (name === 'node_modules') return [];
    return statSync(entry).isDirectory() ? filesUnder(entry) : [entry];
  });

/** packageOf names the package a bare import specifier is from (`@scope/name/x` → `@scope/name`). */
const packageOf = (specifier: string): string =>
  specifier
    .split('/')
    .slice(0, specifier.startsWith('@') ? 2 : 1)
    .join('/');

/** BuiltNode says which launcher runs a one-member node, and what of it to wait for. */
interface BuiltNode {
  /** svc is the launcher (a build's bin/svc.js). */
  svc: string;
  dataDir: string;
  /** args are the flags beside the ones every run gives (insecure, its name, loopback ports, its founder). */
  args: string[];
  /** readyPath is the HTTP path that answers 200 once the node serves what the test reads. */
  readyPath: string;
  /** what names the node in failures. */
  what: string;
  /** timeoutMs bounds the wait for readyPath (default 60 s). */
  timeoutMs?: number;
}

/**
 * withBuiltNode starts `svc node` from a build (n1, the founder of its own cluster, on free loopback ports), waits
 * until its readyPath answers 200 (failing at once when it exits), runs `body` with its HTTP base URL, and stops it.
 */
async function withBuiltNode(node: BuiltNode, body: (base: string) => Promise<void>): Promise<void> {
  const [grpcPort, httpPort, metricsPort] = await freePorts(3);
  const child = spawn(
    process.execPath,
    [
      node.svc,
      ...['node', '--insecure', ...node.args, '--name', 'n1', '--data-dir', node.dataDir],
      ...['--grpc-listen', `127.0.0.1:${grpcPort}`, '--http-listen', `127.0.0.1:${httpPort}`],
      ...['--metrics-listen', `127.0.0.1:${metricsPort}`, '--log-level', 'warn'],
      ...['--founder', `n1,127.0.0.1:${grpcPort},http://127.0.0.1:${httpPort}`],
    ],
    { cwd: os.tmpdir(), stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const base = `http://127.0.0.1:${httpPort}`;
  try {
    await waitFor(
      async () => {
        if (child.exitCode !== null) throw new Error(`${node.what} exited ${child.exitCode}: ${stderr}`);
        const answer = await fetch(`${base}${node.readyPath}`).catch(() => null);
        return answer?.status === 200;
      },
      `${node.what} serves ${node.readyPath}`,
      node.timeoutMs ?? 60_000,
      { swallow: false },
    );
    await body(base);
  } finally {
    child.kill('SIGTERM');
    await exited;
  }
}

describe('deploy: the build (compiled JavaScript, production dependencies only)', function () {
  this.timeout(600_000);
  let out: string;

  before(async () => {
    out = path.join(mkdtempSync(path.join(os.tmpdir(), 'svc-build-')), 'app');
    await run(process.execPath, [path.join(repo, 'scripts/build.mjs'), out], { maxBuffer: 16 * 1024 * 1024 });
    for (const name of Object.keys(pkg.dependencies)) {
      mkdirSync(path.dirname(path.join(out, 'node_modules', name)), { recursive: true });
      symlinkSync(path.join(repo, 'node_modules', name), path.join(out, 'node_modules', name));
    }
  });
  after(() => {
    if (out) rmSync(path.dirname(out), { recursive: true, force: true });
  });

  it('holds JavaScript and the files the app reads, no TypeScript', () => {
    const files = filesUnder(out).map((file) => path.relative(out, file));
    assert.deepEqual(
      files.filter((file) => /\.[cm]?ts$/.test(file)),
      [],
    );
    for (const file of [
      'bin/svc.js',
      'bundle/svc.mjs',
      'cli/main.js',
      'package.json',
      'agent/svc-agent.mjs',
      'agent/bin/svc-agent',
    ])
      assert.ok(files.includes(file), file);
    // Every file beside the runtime's modules that is not TypeScript or prose is read at run time (a page's
    // script and style): the build must carry each (the /cluster page's were once left out).
    const runtimeFolders = ['api', 'transports', 'cli', 'engine', 'store', 'recording', 'layout'];
    const beside = runtimeFolders
      .flatMap((folder) => filesUnder(path.join(repo, folder)))
      .map((file) => path.relative(repo, file))
      .filter((file) => !/\.(ts|md)$/.test(file));
    assert.ok(beside.length >= 5, beside.join(', '));
    for (const file of beside) assert.ok(files.includes(file), `${file} is in the build`);
    assert.ok(!existsSync(path.join(out, 'node_modules', 'tsx')));
  });

  it('imports only node built-ins and production dependencies (none of them tsx, TypeScript or a code generator)', () => {
    const imported = new Set<string>();
    // bin/svc.js is left out: it names tsx for a checkout, and the launcher test below shows it never loads it here.
    // The bundle is checked apart (below): the packages inlined in it hold text these patterns misread.
    const modules = filesUnder(out).filter(
      (f) => /\.m?js$/.test(f) && f !== path.join(out, 'bin/svc.js') && !f.startsWith(path.join(out, 'bundle')),
    );
    const patterns = [
      /^\s*(?:import|export)\b[^'"`\n]*?\bfrom\s*['"]([^'"\n]+)['"]/gm, // import … from 'x', export … from 'x'
      /^\s*import\s*['"]([^'"\n]+)['"]/gm, // import 'x'
      /\bimport\(\s*['"]([^'"\n]+)['"]\s*\)/g, // import('x')
      /\.resolve\(\s*['"]([^'"\n]+)['"]\s*\)/g, // createRequire(…).resolve('x')
    ];
    for (const file of modules) {
      const text = readFileSync(file, 'utf8');
      for (const pattern of patterns)
        for (const match of text.matchAll(pattern))
          if (/^[^./][^\s$]*$/.test(match[1]!)) imported.add(packageOf(match[1]!));
    }
    const external = [...imported].filter((name) => !name.startsWith('node:') && !builtinModules.includes(name));
    assert.ok(external.length > 5, external.join(', '));
    for (const name of external) assert.ok(name in pkg.dependencies, `${name} is imported at run time`);
    for (const dev of ['tsx', 'typescript', 'ts-proto', '@noble/hashes', 'rate-limiter-flexible', 'seedrandom']) {
      assert.ok(!(dev in pkg.dependencies), `${dev} is no production dependency`);
      assert.ok(dev in pkg.devDependencies, `${dev} is a dev dependency`);
    }
  });

  it('its bundle imports only node built-ins and production dependencies, and requires no dev dependency', async () => {
    // esbuild reads the bundle's imports as a parser does (not by pattern: the inlined packages hold text like
    // Promise.resolve("OK")): its static and dynamic imports of packages are what was left unbundled.
    const imported = new Set<string>();
    await build({
      entryPoints: [path.join(out, 'bundle/svc.mjs')],
      bundle: true,
      write: false,
      platform: 'node',
      format: 'esm',
      logLevel: 'silent',
      plugins: [
        {
          name: 'record-packages',
          setup(builder) {
            builder.onResolve({ filter: /^[^./]/ }, (args) => {
              imported.add(packageOf(args.path));
              return { path: args.path, external: true };
            });
          },
        },
      ],
    });
    const isBuiltin = (name: string) => name.startsWith('node:') || builtinModules.includes(name);
    const bundleFiles = filesUnder(path.join(out, 'bundle')).filter((f) => f.endsWith('.mjs'));
    assert.ok(bundleFiles.length > 1, 'split at the dynamic imports');
    const required = new Set<string>();
    for (const file of bundleFiles) {
      const text = readFileSync(file, 'utf8');
      // The app's own createRequire(…).resolve('x'), kept as written.
      for (const match of text.matchAll(
        /\b(?:createRequire\d*\([^()]*\)|require\w*)\.resolve\(\s*["']([^"'\n]+)["']\s*\)/g,
      ))
        imported.add(packageOf(match[1]!));
      // The inlined CommonJS packages' require('x') of what was not inlined: the unbundled, and optional packages
      // they require in a try (absent, as they are unbundled).
      for (const match of text.matchAll(/\b__require\(\s*"([^"\n]+)"\s*\)/g)) required.add(packageOf(match[1]!));
    }
    const external = [...imported].filter((name) => !isBuiltin(name));
    assert.ok(external.includes('sharp'), `sharp is left to node_modules: ${external.join(', ')}`);
    for (const name of external) assert.ok(name in pkg.dependencies, `${name} is imported at run time`);
    for (const name of required) {
      if (isBuiltin(name) || name in pkg.dependencies) continue;
      assert.ok(
        !(name in pkg.devDependencies) && !['tsx', 'esbuild'].includes(name),
        `${name} is required at run time`,
      );
    }
  });

  it('runs svc from the build: --help, certificates and manifests', async () => {
    const svc = path.join(out, 'bin/svc.js');
    const help = await run(process.execPath, [svc, '--help'], { cwd: os.tmpdir() });
    assert.match(help.stdout, /usage: svc <command>/);
    const pki = path.join(path.dirname(out), 'pki');
    await run(process.execPath, [svc, 'certs', 'ca', '--out', pki]);
    await run(process.execPath, [
      svc,
      ...['certs', 'node', '--out', pki, '--name', 'n1', '--cluster-id', 'c1'],
      ...['--peers-service', 'p', '--namespace', 'x'],
    ]);
    assert.ok(existsSync(path.join(pki, 'n1.crt')));
    const manifests = await run(process.execPath, [
      svc,
      ...['manifests', 'render', '--namespace', 'x', '--cluster-id', 'c1', '--founders', '1', '--replicas', '1'],
      ...['--image', 'localhost/svc:test'],
    ]);
    assert.match(manifests.stdout, /kind: StatefulSet/);
  });

  it('starts a node from the build: it serves /health and keeps its flight recording', async () => {
    // Every module a running node loads (the recorder's, the admin service's, the API's) must be in the build;
    // --help loads only the CLI, so a folder left out of the build showed only in a container.
    const svc = path.join(out, 'bin/svc.js');
    const dataDir = path.join(path.dirname(out), 'n1-data');
    await withBuiltNode({ svc, dataDir, args: [], readyPath: '/health', what: 'the built node' }, async () => {
      assert.ok(
        readdirSync(path.join(dataDir, 'recording')).some((name) => SEGMENT_FILE.test(name)),
        'the node keeps a flight recording',
      );
    });
  });

  it('runs its node from the bundle: the bundle and the shipped files alone serve the API and its pages', async () => {
    // The build's tree without tsc's modules: only bundle/, the launcher and the files the app reads. A node that
    // serves here ran from the bundle, and found its pages' files and package.json through layout/app-files.ts
    // (a path written relative to its own module would point into bundle/ and fail).
    const only = path.join(path.dirname(out), 'bundle-only');
    const kept = [
      'bundle',
      'bin',
      'package.json',
      'agent',
      'api/albums/view',
      'api/cluster/view',
      'api/view-kit/page-kit.js',
    ];
    for (const entry of kept) cpSync(path.join(out, entry), path.join(only, entry), { recursive: true });
    cpSync(path.join(out, 'node_modules'), path.join(only, 'node_modules'), {
      recursive: true,
      verbatimSymlinks: true,
    });
    assert.ok(!existsSync(path.join(only, 'cli/main.js')) && !existsSync(path.join(only, 'layout')));
    assert.ok(readdirSync(path.join(only, 'bundle')).length > 1, 'the bundle is split at the dynamic imports');
    const node = {
      svc: path.join(only, 'bin/svc.js'),
      dataDir: path.join(path.dirname(out), 'bundle-only-data'),
      args: ['--http-insecure', '--api'],
      readyPath: '/openapi.json',
      what: 'the bundled node',
      timeoutMs: 120_000,
    };
    await withBuiltNode(node, async (base) => {
      for (const [url, file] of [
        ['/cluster-view/cluster-view.js', 'api/cluster/view/cluster-view.js'],
        ['/album-view/album-view.css', 'api/albums/view/album-view.css'],
        ['/album-view/page-kit.js', 'api/view-kit/page-kit.js'],
      ] as const) {
        const answer = await fetch(`${base}${url}`);
        assert.equal(answer.status, 200, url);
        assert.equal(await answer.text(), readFileSync(path.join(repo, file), 'utf8'), url);
      }
    });
  });

  it('the launcher runs compiled code beside it when there is some, and TypeScript through tsx otherwise', async () => {
    // A launcher with a compiled CLI beside it and no node_modules in reach: it must not look for tsx.
    const alone = mkdtempSync(path.join(os.tmpdir(), 'svc-launcher-'));
    try {
      mkdirSync(path.join(alone, 'bin'));
      mkdirSync(path.join(alone, 'cli'));
      copyFileSync(path.join(repo, 'bin/svc.js'), path.join(alone, 'bin/svc.js'));
      writeFileSync(path.join(alone, 'package.json'), '{"type":"module"}');
      writeFileSync(
        path.join(alone, 'cli/main.js'),
        'export async function runMain(args) { console.log(`compiled ${args.join(" ")}`); }\n',
      );
      const compiled = await run(process.execPath, [path.join(alone, 'bin/svc.js'), 'a', 'b']);
      assert.equal(compiled.stdout, 'compiled a b\n');
      // With the bundle beside it too (npm run build makes both), the bundle runs.
      mkdirSync(path.join(alone, 'bundle'));
      writeFileSync(
        path.join(alone, 'bundle/svc.mjs'),
        'export async function runMain(args) { console.log(`bundled ${args.join(" ")}`); }\n',
      );
      const bundled = await run(process.execPath, [path.join(alone, 'bin/svc.js'), 'a', 'b']);
      assert.equal(bundled.stdout, 'bundled a b\n');
    } finally {
      rmSync(alone, { recursive: true, force: true });
    }
    // The checkout has no cli/main.js: its launcher runs cli/main.ts.
    assert.ok(!existsSync(path.join(repo, 'cli/main.js')));
    const checkout = await run(process.execPath, [path.join(repo, 'bin/svc.js'), 'certs', 'cluster-id']);
    assert.match(checkout.stdout, /^[0-9a-f]{16}\n$/);
  });
});
