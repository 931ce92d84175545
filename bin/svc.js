#!/usr/bin/env node
// svc: a thin launcher for the TypeScript CLI (cli/main.ts). It registers tsx from this
// repository's node_modules (resolved relative to this file, so it works from any directory) in
// this same process, so signals reach the CLI directly and there is no second process to forward to.
const argv = process.argv.slice(2);
if (argv.length === 1 && (argv[0] === '--version' || argv[0] === 'version')) {
  // Answered before tsx loads, in the form cli/main.ts answers it: at once, and in a checkout without
  // node_modules (the release script's test runs it in a fresh clone).
  const { readFileSync } = await import('node:fs');
  const { version } = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
  process.stdout.write(`svc ${typeof version === 'string' && version !== '' ? version : 'version-unknown'}\n`);
} else {
  const { register } = await import('tsx/esm/api');
  register();
  const { runMain } = await import('../cli/main.ts');
  await runMain(argv);
}
