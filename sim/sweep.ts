// A sweep runs many seeds, in this thread or spread over worker threads (`--jobs N`), and hands back
// each seed's outcome in seed order whatever the order they finish in. A seed's run depends on its
// seed and knobs only (each run builds its own world and PRNGs), so a seed gives the same outcome
// and trace hash in any thread; `test/sim/sweep.test.ts` checks it.
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { CoverageCounts } from './coverage.js';
import { optionsFor, type OverrideValues } from './options.js';
import { runSim } from './run.js';

/** SWEEP_JOBS_MAX bounds --jobs (threads running seeds; each holds one run's world in memory). */
export const SWEEP_JOBS_MAX = 64;

/** SeedOutcome is what a sweep keeps of one run: small, plain data (it crosses from a worker thread). */
export interface SeedOutcome {
  seed: number;
  ok: boolean;
  events: number;
  traceHash: string;
  simulatedMs: number;
  failure: { invariant: string; timeMs: number; message: string } | null;
  coverage: CoverageCounts;
  foreignDelivered: number;
  otherClusterRefused: number;
  /** undecided: the linearizability checker's explanation when it ran out of budget, else null. */
  undecided: string | null;
}

/** runSeed runs one seed of a sweep (the swarm's options for it, with the sweep's knobs). */
export function runSeed(seed: number, overrides: OverrideValues): SeedOutcome {
  const result = runSim(optionsFor(seed, overrides, null));
  return {
    seed,
    ok: result.ok,
    events: result.events,
    traceHash: result.traceHash,
    simulatedMs: result.simulatedMs,
    failure: result.failure
      ? { invariant: result.failure.invariant, timeMs: result.failure.timeMs, message: result.failure.message }
      : null,
    coverage: result.coverage,
    foreignDelivered: result.counts.foreignDelivered,
    otherClusterRefused: result.counts.otherClusterRefused,
    undecided: result.linearizability?.verdict === 'undecided' ? result.linearizability.detail : null,
  };
}

/** Shard picks every `count`-th seed of a range, starting at its `index`-th (0-based). */
export interface Shard {
  index: number;
  count: number;
}

/** shardSeeds lists the seeds of first..last a shard runs: first + index, first + index + count, ... */
export function shardSeeds(first: number, last: number, shard: Shard | null): number[] {
  const { index, count } = shard ?? { index: 0, count: 1 };
  const seeds: number[] = [];
  for (let seed = first + index; seed <= last; seed += count) seeds.push(seed);
  return seeds;
}

/**
 * startWorker starts one worker thread on sweep-worker: its compiled JavaScript when this file is, else
 * `bundle` (workerBundle), else the .ts through tsx. Run from TypeScript (tsx), the thread does not
 * inherit tsx's loader (node 20 applies --import hooks to the main thread only), so a small bootstrap
 * registers tsx in the thread first, then imports the worker's .ts file.
 */
function startWorker(bundle: URL | null, workerData: WorkerJob): Worker {
  if (!import.meta.url.endsWith('.ts'))
    return new Worker(new URL('./sweep-worker.js', import.meta.url), { workerData });
  if (bundle !== null) return new Worker(bundle, { workerData });
  const entry = new URL('./sweep-worker.ts', import.meta.url).href;
  const tsx = tsxApiUrl();
  const bootstrap = `import(${JSON.stringify(tsx)}).then((m) => { m.register(); return import(${JSON.stringify(entry)}); })`;
  return new Worker(bootstrap, { eval: true, workerData });
}

/** WORKER_BUNDLE_DIR: where workerBundle writes, beside the packages the bundle imports (resolved from there). */
const WORKER_BUNDLE_DIR = new URL('../node_modules/.cache/svc-sim/', import.meta.url);

/**
 * workerBundle: run from TypeScript, sweep-worker.ts and the modules it imports bundled into one ES module,
 * built afresh for each sweep (never stale) by esbuild, the compiler tsx itself runs (so it is there
 * whenever tsx is), with packages left as imports. A worker then loads one file instead of compiling
 * about 110 modules through tsx's loader: that cost about 0.5 s of CPU per worker, a large share of a
 * short sweep's. The file is named by its content, so concurrent sweeps never overwrite each other's.
 * null when this is compiled JavaScript already, or bundling fails (the workers then register tsx).
 */
async function workerBundle(): Promise<URL | null> {
  if (!import.meta.url.endsWith('.ts')) return null;
  try {
    const esbuild = (await import(
      pathToFileURL(createRequire(fileURLToPath(tsxApiUrl())).resolve('esbuild')).href
    )) as typeof import('esbuild');
    const built = await esbuild.build({
      entryPoints: [fileURLToPath(new URL('./sweep-worker.ts', import.meta.url))],
      bundle: true,
      platform: 'node',
      format: 'esm',
      target: 'node20',
      packages: 'external',
      keepNames: true,
      write: false,
      logLevel: 'silent',
    });
    const text = built.outputFiles[0]!.text;
    const file = new URL(
      `sweep-worker-${createHash('sha256').update(text).digest('hex').slice(0, 16)}.mjs`,
      WORKER_BUNDLE_DIR,
    );
    if (!existsSync(file)) {
      mkdirSync(WORKER_BUNDLE_DIR, { recursive: true });
      const partial = new URL(`${file.href}.${process.pid}.partial`);
      writeFileSync(partial, text);
      renameSync(partial, file);
      pruneWorkerBundles(file);
    }
    return file;
  } catch {
    return null;
  }
}

/** WORKER_BUNDLE_KEEP_MS: older bundles (of sources since edited) are removed; a sweep starts its workers within seconds. */
const WORKER_BUNDLE_KEEP_MS = 60 * 60 * 1_000;

/** pruneWorkerBundles removes the bundles other than `kept` older than WORKER_BUNDLE_KEEP_MS. */
function pruneWorkerBundles(kept: URL): void {
  const dir = fileURLToPath(WORKER_BUNDLE_DIR);
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (!/^sweep-worker-[0-9a-f]+\.mjs$/.test(name) || path === fileURLToPath(kept)) continue;
    if (Date.now() - statSync(path).mtimeMs > WORKER_BUNDLE_KEEP_MS) rmSync(path, { force: true });
  }
}

/**
 * tsxApiUrl: where tsx's ESM API is. Where tsx loaded this file as CommonJS (mocha under tsx),
 * import.meta.resolve is missing and require resolves the API's CommonJS build; the ESM build sits beside it.
 */
function tsxApiUrl(): string {
  if (typeof import.meta.resolve === 'function') return import.meta.resolve('tsx/esm/api');
  return pathToFileURL(
    createRequire(import.meta.url)
      .resolve('tsx/esm/api')
      .replace(/\.cjs$/, '.mjs'),
  ).href;
}

/**
 * WorkerJob: what a sweep's worker thread is started with (sweep-worker.ts). `next` is a shared counter: each
 * thread, this one included, takes the position of the next seed to run from it (Atomics.add), so seeds go to
 * whichever thread frees up first with no message round trip, and every seed runs exactly once.
 */
export interface WorkerJob {
  seeds: readonly number[];
  overrides: OverrideValues;
  next: Int32Array;
}

/** WorkerReply: a worker's message for each seed it ran (or the error that stopped it), then `done`. */
export type WorkerReply =
  { position: number; outcome: SeedOutcome } | { position: number; error: string } | { done: true };

/** takeSeed claims the next seed's position from a shared counter; -1 once every seed is claimed. */
export function takeSeed(job: Pick<WorkerJob, 'seeds' | 'next'>): number {
  const position = Atomics.add(job.next, 0, 1);
  return position < job.seeds.length ? position : -1;
}

/** yieldToEvents lets this thread's event loop run (worker messages, the bundle build) between two seeds. */
const yieldToEvents = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/**
 * sweepSeeds runs `seeds` on `jobs` threads, this one and jobs - 1 worker threads, and calls onOutcome for
 * each, in the order of `seeds`; onDone(count) hears each finished run as it finishes (for a progress bar).
 * This thread runs seeds too: it starts at once (while the workers load) and it has usually run seeds before
 * (its compiled code is warm, where a new worker's JIT starts cold). A run that throws something other than a
 * violation (a bug in the world) rejects the sweep, as it would stop a sweep in one thread.
 * `thisThreadRuns: false` leaves every seed to jobs workers (a test's way to be sure workers ran them).
 * Resolves to the number of seeds worker threads ran.
 */
export async function sweepSeeds(
  seeds: readonly number[],
  overrides: OverrideValues,
  jobs: number,
  onOutcome: (outcome: SeedOutcome) => void,
  onDone: (doneCount: number) => void = () => {},
  { thisThreadRuns = true }: { thisThreadRuns?: boolean } = {},
): Promise<number> {
  if (!Number.isInteger(jobs) || jobs < 1 || jobs > SWEEP_JOBS_MAX)
    throw new Error(`jobs must be a whole number in [1, ${SWEEP_JOBS_MAX}], got ${jobs}`);
  if (jobs === 1 || seeds.length <= 1) {
    seeds.forEach((seed, i) => {
      onOutcome(runSeed(seed, overrides));
      onDone(i + 1);
    });
    return 0;
  }
  const job: WorkerJob = { seeds, overrides, next: new Int32Array(new SharedArrayBuffer(4)) };
  const results: (SeedOutcome | undefined)[] = new Array(seeds.length);
  let nextToReport = 0;
  let doneCount = 0;
  let failed: Error | null = null;
  const finished = (position: number, outcome: SeedOutcome): void => {
    results[position] = outcome;
    onDone(++doneCount);
    // Report the finished prefix, in seed order.
    while (nextToReport < seeds.length && results[nextToReport] !== undefined) {
      onOutcome(results[nextToReport]!);
      results[nextToReport++] = undefined;
    }
  };
  const workers: Worker[] = [];
  const workerCount = Math.min(jobs, seeds.length) - (thisThreadRuns ? 1 : 0);
  let workerRunCount = 0;
  let closed = false;
  let wake: (() => void) | null = null;
  const fail = (error: Error): void => {
    failed ??= error;
    wake?.();
  };
  const startWorkers = (bundle: URL | null): void => {
    // Too late to help: every seed is claimed already (a short sweep), or the sweep ended.
    if (closed || failed || Atomics.load(job.next, 0) >= seeds.length) return;
    for (let i = 0; i < workerCount; i++) {
      const worker = startWorker(bundle, job);
      let done = false;
      workers.push(worker);
      worker.on('message', (reply: WorkerReply) => {
        if ('done' in reply) done = true;
        else if ('error' in reply) fail(new Error(`seed ${seeds[reply.position]}: ${reply.error}`));
        else {
          workerRunCount++;
          finished(reply.position, reply.outcome);
          wake?.();
        }
      });
      worker.on('error', fail);
      worker.on('exit', (code) => {
        if (!done && !closed) fail(new Error(`a sweep worker exited (code ${code}) before the sweep ended`));
      });
    }
  };
  try {
    // The bundle is built by esbuild's own process while this thread runs its first seeds; the workers start
    // at the first pause between two seeds after it is ready.
    void workerBundle().then(startWorkers, () => startWorkers(null));
    for (let position = thisThreadRuns ? takeSeed(job) : -1; position >= 0 && !failed; position = takeSeed(job)) {
      finished(position, runSeed(seeds[position]!, overrides));
      await yieldToEvents();
    }
    // Every seed is claimed: wait for the workers' last outcomes.
    while (!failed && nextToReport < seeds.length) {
      await new Promise<void>((resolve) => (wake = resolve));
      wake = null;
    }
    if (failed) throw failed;
    return workerRunCount;
  } finally {
    closed = true;
    await Promise.all(workers.map((w) => w.terminate()));
  }
}
