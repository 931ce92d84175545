// Lint: typescript-eslint's recommended set everywhere, plus
// - the determinism fence around engine/: the engine may not read a clock, a random source or the
//   environment, schedule a timer, await anything or import I/O modules;
// - the direction of the layers (docs/architecture.md): engine/ imports nothing of ours but its own files
//   and proto/gen; store/ builds on the engine, api/ on the store, transports/ on the engine alone; cli/
//   assembles them all; sim/ runs the engine beside the rest; recording/ (the flight recorder's format,
//   written by transports/ and replayed by sim/) builds on the engine alone; bench/ may use of test/ only its
//   cluster harnesses. test/layout/import-direction.test.ts proves each fence fires;
// - a determinism fence around sim/linearizability/ too (the checker runs inside simulator seeds).
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import globals from 'globals';

const ioModules = [
  'fs',
  'net',
  'http',
  'http2',
  'https',
  'dgram',
  'dns',
  'child_process',
  'crypto',
  'os',
  'worker_threads',
  'cluster',
  'tls',
  'readline',
  'process',
  'timers',
  'perf_hooks',
  'seedrandom',
  '@grpc/grpc-js',
];

/** ourFolders are the repository's top-level folders of code, the units of the layering. */
const ourFolders = [
  'engine',
  'layout',
  'recording',
  'store',
  'api',
  'transports',
  'cli',
  'sim',
  'bench',
  'scripts',
  'test',
  'sdk',
  'bin',
];

/** FORBIDDEN lists, per folder, the top-level folders its files must not import (statically or dynamically). */
const FORBIDDEN = {
  engine: ourFolders.filter((folder) => folder !== 'engine'),
  // The flight recorder's format: written by transports/, read by sim/, so it builds on the engine alone.
  recording: ourFolders.filter((folder) => folder !== 'engine' && folder !== 'recording'),
  // Where the app's shipped files are, in either layout (layout/app-files.ts): below every runtime folder.
  layout: ourFolders.filter((folder) => folder !== 'layout'),
  store: ['transports', 'cli', 'api', 'sim'],
  api: ['transports', 'cli', 'sim'],
  transports: ['api', 'store', 'cli', 'sim'],
  sim: ['transports', 'api', 'store', 'cli'],
};

/** layerPattern matches a relative import that climbs to one of `folders` at the top level (`../../store/x.js`). */
function layerPattern(folders) {
  return `^(\\.\\./)+(${folders.join('|')})(/|$)`;
}

function layerMessage(folder) {
  return `${folder}/ must not import ${FORBIDDEN[folder].join(', ')} (the layers are drawn in docs/architecture.md).`;
}

/** layerImports is the no-restricted-imports pattern of a folder's fence. */
function layerImports(folder) {
  return { regex: layerPattern(FORBIDDEN[folder]), message: layerMessage(folder) };
}

/** layerDynamicImports is the no-restricted-syntax entry for `import('...')`, which no-restricted-imports does not see. */
function layerDynamicImports(folder) {
  const pattern = layerPattern(FORBIDDEN[folder]).replaceAll('/', '\\/');
  return { selector: `ImportExpression[source.value=/${pattern}/]`, message: layerMessage(folder) };
}

/** BENCH_TEST_FIXTURES are the test/ harness modules bench/ may import (paths under test/, without .js). */
const BENCH_TEST_FIXTURES = [
  'node/harness',
  'node/child-harness',
  'node/in-process-cluster',
  'api/harness',
  'cluster-api/api-cluster',
  'store/snapshot-fixtures',
];

/** benchTestImports refuses a bench import of test/ other than its fixtures. */
const benchTestImports = {
  regex: `^(\\.\\./)+test/(?!(${BENCH_TEST_FIXTURES.join('|')})\\.js$)`,
  message: `bench/ may import of test/ only its harnesses (${BENCH_TEST_FIXTURES.join(', ')}).`,
};

const codeFiles = (folder) => [`${folder}/**/*.ts`, `${folder}/**/*.js`, `${folder}/**/*.mjs`];

export default tseslint.config(
  {
    ignores: [
      'proto/gen/**',
      'node_modules/**',
      'sdk/src/gen/**',
      'sdk/dist/**',
      '.cluster/**',
      'dist/**',
      '.image-context/**',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { ...globals.node } },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/no-non-null-assertion': 'off',
    },
  },
  {
    files: ['engine/**/*.ts'],
    rules: {
      'no-restricted-globals': [
        'error',
        { name: 'Date', message: 'engine/ is deterministic: time comes in through tick inputs.' },
        { name: 'setTimeout', message: 'engine/ schedules no timers: count ticks.' },
        { name: 'setInterval', message: 'engine/ schedules no timers: count ticks.' },
        { name: 'setImmediate', message: 'engine/ schedules no timers.' },
        { name: 'queueMicrotask', message: 'engine/ schedules no work.' },
        { name: 'performance', message: 'engine/ reads no clock.' },
        { name: 'process', message: 'engine/ reads no environment.' },
        { name: 'fetch', message: 'engine/ does no I/O.' },
        { name: 'crypto', message: 'engine/ uses the seeded PRNG it is given.' },
        { name: 'require', message: 'engine/ does no I/O.' },
      ],
      'no-restricted-properties': [
        'error',
        { object: 'Math', property: 'random', message: 'engine/ uses the seeded PRNG it is given.' },
      ],
      'no-restricted-imports': [
        'error',
        {
          paths: ioModules.flatMap((m) => [m, `node:${m}`, `${m}/promises`, `node:${m}/promises`]),
          patterns: [{ group: ['node:*'], message: 'engine/ imports no Node modules.' }, layerImports('engine')],
        },
      ],
      'no-restricted-syntax': [
        'error',
        { selector: ':function[async=true]', message: 'engine/ is synchronous.' },
        { selector: 'AwaitExpression', message: 'engine/ is synchronous.' },
        { selector: 'ImportExpression', message: 'engine/ loads nothing at run time.' },
      ],
    },
  },
  ...['layout', 'recording', 'store', 'api', 'transports', 'sim'].map((folder) => ({
    files: codeFiles(folder),
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [layerImports(folder)],
          // The store knows no transport: its errors are plain (store/errors.ts); cli/node/store-link.ts maps them to gRPC.
          ...(folder === 'store'
            ? {
                paths: [
                  {
                    name: '@grpc/grpc-js',
                    message: 'store/ knows no transport: refuse with StoreRefusal (store/errors.ts).',
                  },
                ],
              }
            : {}),
        },
      ],
      'no-restricted-syntax': ['error', layerDynamicImports(folder)],
    },
  })),
  // bench/ measures the product, so it may import any layer; of test/ it may use only the harnesses that
  // start real clusters (BENCH_TEST_FIXTURES), never a test's own code, so a test change cannot quietly
  // change what a benchmark measures.
  {
    files: codeFiles('bench'),
    rules: {
      'no-restricted-imports': ['error', { patterns: [benchTestImports] }],
      'no-restricted-syntax': [
        'error',
        {
          selector: `ImportExpression[source.value=/${benchTestImports.regex.replaceAll('/', '\\/')}/]`,
          message: benchTestImports.message,
        },
      ],
    },
  },
  // After the layer fences, so its stricter import rule is the one that holds for its files.
  // The linearizability checker runs inside simulator seeds, and a history must get the same verdict
  // on every machine (its bound is a step count, not a time): no clock, randomness, I/O or async.
  // It comes after the layer fences: it imports nothing outside its folder, which is stricter.
  {
    files: ['sim/linearizability/**/*.ts'],
    rules: {
      'no-restricted-globals': [
        'error',
        ...[
          'Date',
          'performance',
          'process',
          'setTimeout',
          'setInterval',
          'setImmediate',
          'queueMicrotask',
          'fetch',
          'crypto',
          'require',
        ].map((name) => ({
          name,
          message: 'sim/linearizability is pure: no clock, randomness, environment, timers or I/O.',
        })),
      ],
      'no-restricted-properties': [
        'error',
        { object: 'Math', property: 'random', message: 'sim/linearizability is deterministic.' },
      ],
      'no-restricted-imports': [
        'error',
        {
          paths: ioModules.flatMap((m) => [m, `node:${m}`, `${m}/promises`, `node:${m}/promises`]),
          patterns: [
            { group: ['node:*'], message: 'sim/linearizability imports no Node modules.' },
            { group: ['../*'], message: 'sim/linearizability is self-contained.' },
          ],
        },
      ],
      'no-restricted-syntax': [
        'error',
        { selector: ':function[async=true]', message: 'sim/linearizability is synchronous.' },
        { selector: 'AwaitExpression', message: 'sim/linearizability is synchronous.' },
        { selector: 'ImportExpression', message: 'sim/linearizability loads nothing at run time.' },
      ],
    },
  },
);
