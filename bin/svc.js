#!/usr/bin/env node
// svc: a thin launcher for the TypeScript CLI (cli/main.ts). It registers tsx from this
// repository's node_modules (resolved relative to this file, so it works from any directory) in
// this same process, so signals reach the CLI directly and there is no second process to forward to.
import { register } from 'tsx/esm/api';

register();
const { runMain } = await import('../cli/main.ts');
await runMain(process.argv.slice(2));
