// docs/configuration.md is generated from the node's configuration schema (`npm run docs:config`): the committed
// file must be what the schema renders now. And every SVC_* variable the repository's code reads is declared in
// the schema, so `svc node` (which refuses undeclared SVC_* variables) never refuses one of ours.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { KNOWN_ENV } from '../../cli/node/config-schema.js';
import { configDocsPath, renderConfigDocs, repoRoot } from '../../scripts/config-docs.js';

/** SCANNED_FOLDERS hold code that may read the environment. */
const SCANNED_FOLDERS = ['api', 'cli', 'transports', 'store', 'bin', 'scripts', 'sdk/src', 'bench', 'test', 'deploy'];
/** ENV_READ finds a variable read or set: after `env.` or `env[`, quoted, before `=` (shell) or after `name: ` (YAML). */
const ENV_READ = /(?:env\.|env\[['"]|['"`]|\bname: |^\s*|\s)(SVC_[A-Z0-9_]+)(?=['"`\]=\s;)]|$)/gm;
/** CONSTANTS are code identifiers that look like variables but are not read from the environment. */
const CONSTANTS = new Set([
  'SVC_BIN',
  'SVC_VALUE_CHARS',
  'SVC_START_TIMEOUT_MS',
  'SVC_STOP_TIMEOUT_MS',
  'SVC_ENV_PREFIX',
]);

function* codeFiles(dir: string): Generator<string> {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) {
      if (entry.name !== 'node_modules' && entry.name !== 'gen' && entry.name !== 'dist') yield* codeFiles(full);
    } else if (/\.(ts|mjs|js|ya?ml)$/.test(entry.name) || entry.name === 'Makefile') yield full;
  }
}

describe('docs/configuration.md and the schema', function () {
  it('the committed docs/configuration.md is what `npm run docs:config` renders from the schema', function () {
    const committed = readFileSync(configDocsPath, 'utf8');
    assert.ok(committed === renderConfigDocs(), 'docs/configuration.md is stale: run npm run docs:config');
  });

  it('declares every SVC_* variable the code reads (so svc node lets each pass or reads it)', function () {
    const found = new Map<string, string>();
    const files = [path.join(repoRoot, 'Makefile')];
    for (const folder of SCANNED_FOLDERS) files.push(...codeFiles(path.join(repoRoot, folder)));
    for (const file of files) {
      for (const match of readFileSync(file, 'utf8').matchAll(ENV_READ)) {
        const name = match[1]!;
        if (!CONSTANTS.has(name) && !found.has(name)) found.set(name, path.relative(repoRoot, file));
      }
    }
    assert.ok(found.size >= 30, `found ${found.size} variables: the scan works`);
    const undeclared = [...found].filter(([name]) => !KNOWN_ENV.has(name));
    assert.deepEqual(undeclared, [], 'declare these in cli/node/config-schema.ts (or api/env-settings.ts)');
  });
});
