#!/usr/bin/env node
// svc: the launcher of the CLI (cli/main). Built (npm run build: dist/, and the image), the CLI is compiled
// JavaScript beside this file (../cli/main.js) and runs as is: no TypeScript compiler at run time. In a checkout
// it is TypeScript (../cli/main.ts): tsx is registered from this repository's node_modules (resolved relative to
// this file, so it works from any directory) in this same process, so signals reach the CLI directly and there
// is no second process to forward to. A checkout never holds cli/main.js (tsc there only type-checks).
import { existsSync } from 'node:fs';

const compiled = new URL('../cli/main.js', import.meta.url);
let main;
if (existsSync(compiled)) {
  main = await import(compiled.href);
} else {
  const { register } = await import('tsx/esm/api');
  register();
  main = await import('../cli/main.ts');
}
await main.runMain(process.argv.slice(2));
