// `npm run bench`: every bench file (bench/*.ts but this one) in sequence, each in its own tsx
// process with its output shown as it runs, each bounded by BENCH_FILE_TIMEOUT_MS; then a short
// summary (file, exit, seconds). Bench files' helpers live in subfolders and are not run.
//   npm run bench                  every bench
//   npm run bench -- cluster api   only these (names without .ts)
import { spawn } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** BENCH_FILE_TIMEOUT_MS bounds one bench file; past it the file is killed and marked timed out. */
const BENCH_FILE_TIMEOUT_MS = 30 * 60_000;
const here = dirname(fileURLToPath(import.meta.url));
const self = basename(fileURLToPath(import.meta.url));

const all = readdirSync(here)
  .filter((f) => f.endsWith('.ts') && f !== self)
  .sort();
const wanted = process.argv.slice(2);
const unknown = wanted.filter((w) => !all.includes(`${w}.ts`) && !all.includes(w));
if (unknown.length > 0) {
  console.error(`unknown bench ${unknown.join(', ')}; known: ${all.map((f) => f.replace(/\.ts$/, '')).join(', ')}`);
  process.exit(2);
}
const files =
  wanted.length === 0 ? all : all.filter((f) => wanted.includes(f) || wanted.includes(f.replace(/\.ts$/, '')));

interface Outcome {
  file: string;
  code: number | null;
  signal: string | null;
  seconds: number;
  timedOut: boolean;
}

function runOne(file: string): Promise<Outcome> {
  const started = Date.now();
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', join(here, file)], { stdio: 'inherit' });
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
    }, BENCH_FILE_TIMEOUT_MS);
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      resolve({ file, code, signal, seconds: (Date.now() - started) / 1000, timedOut });
    });
  });
}

const outcomes: Outcome[] = [];
for (const file of files) {
  console.log(`\n===== bench/${file} =====`);
  outcomes.push(await runOne(file));
}
console.log('\n===== bench summary =====');
console.log('| bench | result | seconds |');
console.log('|---|---|---|');
for (const o of outcomes) {
  const result = o.timedOut
    ? `timed out (${BENCH_FILE_TIMEOUT_MS / 60_000} min)`
    : o.code === 0
      ? 'ok'
      : `failed (${o.signal ?? `exit ${o.code}`})`;
  console.log(`| ${o.file} | ${result} | ${o.seconds.toFixed(1)} |`);
}
process.exitCode = outcomes.every((o) => o.code === 0) ? 0 : 1;
