#!/usr/bin/env node
// svc: the launcher of the CLI (cli/main). Built (npm run build: dist/, and the image), the CLI is compiled
// JavaScript beside this file (../cli/main.js) and runs as is: no TypeScript compiler at run time. In a checkout
// it is TypeScript (../cli/main.ts): tsx is registered from this repository's node_modules (resolved relative to
// this file, so it works from any directory) in this same process, so signals reach the CLI directly and there
// is no second process to forward to. A checkout never holds cli/main.js (tsc there only type-checks).
// The build also holds the CLI bundled (../bundle/svc.mjs, scripts/build.mjs): the same code in a few files
// instead of hundreds, which is most of a node's start; it runs that when it is there.
import { existsSync } from 'node:fs';

const argv = process.argv.slice(2);
const bundle = new URL('../bundle/svc.mjs', import.meta.url);
const compiled = new URL('../cli/main.js', import.meta.url);
if (argv.length === 1 && (argv[0] === '--version' || argv[0] === 'version')) {
  // Answered before anything loads, in the form cli/main.ts answers it: at once, and in a checkout without
  // node_modules (the release script's test runs it in a fresh clone).
  const { readFileSync } = await import('node:fs');
  const { version } = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
  process.stdout.write(`svc ${typeof version === 'string' && version !== '' ? version : 'version-unknown'}\n`);
} else if (existsSync(bundle) || existsSync(compiled)) {
  const { runMain } = await import((existsSync(bundle) ? bundle : compiled).href);
  await runMain(argv);
} else {
  const { register } = await import('tsx/esm/api');
  register();
  const { runMain } = await import('../cli/main.ts');
  await runMain(argv);
}
