// Lint: typescript-eslint's recommended set everywhere, plus the determinism
// fence around engine/ — the engine may not read a clock, a random source or
// the environment, schedule a timer, await anything or import I/O modules.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import globals from 'globals';

const ioModules = ['fs', 'net', 'http', 'http2', 'https', 'dgram', 'dns', 'child_process', 'crypto', 'os',
  'worker_threads', 'cluster', 'tls', 'readline', 'process', 'timers', 'perf_hooks', 'seedrandom',
  '@grpc/grpc-js'];

export default tseslint.config(
  { ignores: ['proto/gen/**', 'node_modules/**', 'sdk/src/gen/**', 'sdk/dist/**', '.cluster/**', 'dist/**'] },
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
      'no-restricted-globals': ['error',
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
      'no-restricted-properties': ['error',
        { object: 'Math', property: 'random', message: 'engine/ uses the seeded PRNG it is given.' },
      ],
      'no-restricted-imports': ['error', {
        paths: ioModules.flatMap((m) => [m, `node:${m}`, `${m}/promises`, `node:${m}/promises`]),
        patterns: [{ group: ['node:*'], message: 'engine/ imports no Node modules.' },
          { group: ['**/transports/**', '**/sim/**', '**/api/**'], message: 'engine/ depends on nothing above it.' }],
      }],
      'no-restricted-syntax': ['error',
        { selector: ':function[async=true]', message: 'engine/ is synchronous.' },
        { selector: 'AwaitExpression', message: 'engine/ is synchronous.' },
        { selector: 'ImportExpression', message: 'engine/ loads nothing at run time.' },
      ],
    },
  },
  // The linearizability checker runs inside simulator seeds, and a history must get the same verdict
  // on every machine (its bound is a step count, not a time): no clock, randomness, I/O or async.
  {
    files: ['sim/linearizability/**/*.ts'],
    rules: {
      'no-restricted-globals': ['error',
        ...['Date', 'performance', 'process', 'setTimeout', 'setInterval', 'setImmediate', 'queueMicrotask', 'fetch', 'crypto', 'require']
          .map((name) => ({ name, message: 'sim/linearizability is pure: no clock, randomness, environment, timers or I/O.' }))],
      'no-restricted-properties': ['error', { object: 'Math', property: 'random', message: 'sim/linearizability is deterministic.' }],
      'no-restricted-imports': ['error', {
        paths: ioModules.flatMap((m) => [m, `node:${m}`, `${m}/promises`, `node:${m}/promises`]),
        patterns: [{ group: ['node:*'], message: 'sim/linearizability imports no Node modules.' },
          { group: ['../*'], message: 'sim/linearizability is self-contained.' }],
      }],
      'no-restricted-syntax': ['error',
        { selector: ':function[async=true]', message: 'sim/linearizability is synchronous.' },
        { selector: 'AwaitExpression', message: 'sim/linearizability is synchronous.' },
        { selector: 'ImportExpression', message: 'sim/linearizability loads nothing at run time.' },
      ],
    },
  },
);
