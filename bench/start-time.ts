// Bench (not a test): how soon a node with the developer API serves after its process starts, from the compiled
// build (`npm run build`: dist/, as the image runs it). `runs` times, a fresh lone founder (plaintext, its own
// node-local redis-server when redis-server is on the PATH, as `svc node --api` does) is exec'd while a client
// polls GET /openapi.json every POLL_INTERVAL_MS, and each run prints
//  - exec → first answer: any HTTP answer on an API path (503 NOT_READY while the API is not mounted yet);
//  - exec → first 200 of it, and the node process's CPU time (user + system) by then (Linux /proc; a figure the
//    machine's load moves less than the wall-clock ones);
//  - the node's own `node started` line: apiServingSinceExecMs and startMs per phase.
// Then the median of each. A lone founder's /health waits for its first election (its election timeout), so the
// API path is the figure here; bench/restart.ts times a restarted member of a three-node cluster.
// Usage: tsx bench/start-time.ts [runs=5] [--dist DIR]   (without --dist: `npm run build` first, then dist/)
import { spawn, execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { freeLoopbackPort } from '../api/redis/local-redis.js';

/** POLL_INTERVAL_MS is the client's pause between polls. */
const POLL_INTERVAL_MS = 10;
/** RUN_TIMEOUT_MS bounds one run (exec → first 200 and the node's start line). */
const RUN_TIMEOUT_MS = 60_000;
/** PROBE_TIMEOUT_MS bounds one poll. */
const PROBE_TIMEOUT_MS = 5_000;
/** CLOCK_TICKS_PER_SECOND is /proc's unit for CPU times (USER_HZ, 100 on Linux). */
const CLOCK_TICKS_PER_SECOND = 100;

const root = resolve(new URL('..', import.meta.url).pathname);
const argv = process.argv.slice(2);
const distAt = argv.indexOf('--dist');
const dist = resolve(root, distAt >= 0 ? argv[distAt + 1]! : 'dist');
const runs = Number(argv.filter((arg, i) => !arg.startsWith('--') && argv[i - 1] !== '--dist')[0] ?? 5);

interface Sample {
  firstAnswerMs: number;
  first200Ms: number;
  cpuMs: number | null;
  apiServingSinceExecMs: number | null;
  startMs: Record<string, number>;
}

const median = (xs: number[]): number => {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? NaN;
};

/** cpuMsOf reads a process's user + system CPU time from /proc (null elsewhere or once it is gone). */
function cpuMsOf(pid: number): number | null {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    // After "pid (comm) ", utime and stime are the 12th and 13th fields.
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS_PER_SECOND;
  } catch {
    return null;
  }
}

async function oneRun(): Promise<Sample> {
  const dir = mkdtempSync(join(tmpdir(), 'svc-start-time-'));
  const [grpc, http, metrics] = [await freeLoopbackPort(), await freeLoopbackPort(), await freeLoopbackPort()];
  const started = performance.now();
  const child = spawn(
    process.execPath,
    [
      join(dist, 'bin/svc.js'),
      'node',
      '--insecure',
      '--http-insecure',
      '--api',
      '--name',
      'n1',
      '--data-dir',
      join(dir, 'data'),
      '--grpc-listen',
      `127.0.0.1:${grpc}`,
      '--http-listen',
      `127.0.0.1:${http}`,
      '--metrics-listen',
      `127.0.0.1:${metrics}`,
      '--log-level',
      'info',
      '--founder',
      `n1,127.0.0.1:${grpc},http://127.0.0.1:${http}`,
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let log = '';
  child.stdout.on('data', (chunk: Buffer) => (log += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (log += chunk.toString()));
  try {
    let firstAnswerMs = NaN;
    let first200Ms = NaN;
    let cpuMs: number | null = null;
    while (Number.isNaN(first200Ms)) {
      if (performance.now() - started > RUN_TIMEOUT_MS) throw new Error(`no 200 within ${RUN_TIMEOUT_MS} ms: ${log}`);
      if (child.exitCode !== null) throw new Error(`the node exited (${child.exitCode}): ${log}`);
      const status = await fetch(`http://127.0.0.1:${http}/openapi.json`, {
        signal: AbortSignal.timeout(PROBE_TIMEOUT_MS),
      }).then(
        async (response) => {
          await response.arrayBuffer();
          return response.status;
        },
        () => 0,
      );
      const at = performance.now() - started;
      if (status !== 0 && Number.isNaN(firstAnswerMs)) firstAnswerMs = at;
      if (status === 200) {
        first200Ms = at;
        cpuMs = cpuMsOf(child.pid!);
      } else await new Promise((resolve) => setTimeout(resolve, POLL_INTERVAL_MS));
    }
    while (!log.includes('"node started"')) {
      if (performance.now() - started > RUN_TIMEOUT_MS) throw new Error(`no 'node started' line: ${log}`);
      await new Promise((resolve) => setTimeout(resolve, POLL_INTERVAL_MS));
    }
    const line = JSON.parse(log.split('\n').find((l) => l.includes('"node started"'))!) as {
      startMs: Record<string, number>;
      apiServingSinceExecMs?: number;
    };
    return {
      firstAnswerMs,
      first200Ms,
      cpuMs,
      apiServingSinceExecMs: line.apiServingSinceExecMs ?? null,
      startMs: line.startMs,
    };
  } finally {
    child.kill('SIGTERM');
    if (child.exitCode === null) await new Promise((resolve) => child.once('exit', resolve));
    rmSync(dir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  // Without --dist the checkout's code as it is now is built (a dist/ left from an older build would mislead).
  if (distAt < 0 || !existsSync(join(dist, 'cli/main.js'))) {
    console.log(`building ${dist} (npm run build)`);
    execFileSync(process.execPath, [join(root, 'scripts/build.mjs'), dist], { cwd: root, stdio: 'inherit' });
  }
  const samples: Sample[] = [];
  for (let i = 0; i < runs; i++) {
    const s = await oneRun();
    samples.push(s);
    console.log(
      `run ${i + 1}: first answer ${Math.round(s.firstAnswerMs)} ms, first 200 ${Math.round(s.first200Ms)} ms` +
        ` (cpu ${s.cpuMs ?? '?'} ms), API serving ${s.apiServingSinceExecMs ?? '?'} ms, phases ${JSON.stringify(s.startMs)}`,
    );
  }
  const of = (pick: (s: Sample) => number | null): number =>
    Math.round(median(samples.map(pick).filter((x): x is number => x !== null)));
  console.log(
    `median of ${runs}: exec → first answer ${of((s) => s.firstAnswerMs)} ms, → first 200 ${of((s) => s.first200Ms)} ms, ` +
      `cpu by then ${of((s) => s.cpuMs)} ms, API serving at ${of((s) => s.apiServingSinceExecMs)} ms`,
  );
}

await main();
