// A closed-loop load driver: `writers` loops each await one operation after another for a warm-up
// and then a measured window; every operation that ends inside the window counts, with its latency.
import { PerformanceObserver, performance } from 'node:perf_hooks';

export interface LoadResult {
  writers: number;
  ops: number;
  seconds: number;
  opsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  errors: number;
  firstError: string;
  /**
   * clientGcMs and clientGcPausesOver10Ms: this process's GC pauses (wall time) that began in the measured window. In
   * a closed loop every pause of the client stalls all its in-flight operations at once, so they bound its tail.
   */
  clientGcMs: number;
  clientGcPausesOver10Ms: number;
}

/** GC_PAUSE_LONG_MS: a client GC pause longer than this is counted on its own (clientGcPausesOver10Ms). */
const GC_PAUSE_LONG_MS = 10;

/** ERROR_COUNT_MAX ends a run early: a target that fails this often is not being measured. */
const ERROR_COUNT_MAX = 100;

export async function closedLoop(
  writers: number,
  warmupSeconds: number,
  seconds: number,
  op: (writer: number, i: number) => Promise<void>,
): Promise<LoadResult> {
  const start = performance.now();
  const measureFrom = start + warmupSeconds * 1000;
  const measureTo = measureFrom + seconds * 1000;
  const latencies: number[] = [];
  const gcPausesMs: number[] = [];
  const gcObserver = new PerformanceObserver((list) => {
    for (const e of list.getEntries())
      if (e.startTime >= measureFrom && e.startTime <= measureTo) gcPausesMs.push(e.duration);
  });
  gcObserver.observe({ entryTypes: ['gc'] });
  let errors = 0;
  let firstError = '';
  const loop = async (writer: number): Promise<void> => {
    // Bounded by measureTo and by ERROR_COUNT_MAX.
    for (let i = 0; performance.now() < measureTo && errors < ERROR_COUNT_MAX; i++) {
      const began = performance.now();
      try {
        await op(writer, i);
      } catch (err) {
        errors++;
        firstError ||= err instanceof Error ? err.message : String(err);
        continue;
      }
      const ended = performance.now();
      if (began >= measureFrom && ended <= measureTo) latencies.push(ended - began);
    }
  };
  try {
    await Promise.all(Array.from({ length: writers }, (_, w) => loop(w)));
  } finally {
    gcObserver.disconnect();
  }
  latencies.sort((a, b) => a - b);
  const pick = (q: number): number =>
    latencies.length === 0 ? NaN : latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))]!;
  return {
    writers,
    ops: latencies.length,
    seconds,
    opsPerSecond: latencies.length / seconds,
    p50Ms: pick(0.5),
    p99Ms: pick(0.99),
    errors,
    firstError,
    clientGcMs: gcPausesMs.reduce((sum, ms) => sum + ms, 0),
    clientGcPausesOver10Ms: gcPausesMs.filter((ms) => ms > GC_PAUSE_LONG_MS).length,
  };
}

/** VALUE_BYTES: the stored value of every write bench (etcd's value, and svc's `{"d":"…"}` as JSON). */
export const VALUE_BYTES = 96;
/** SVC_VALUE_CHARS makes svc's stored value {"d":"…"} exactly VALUE_BYTES of JSON. */
export const SVC_VALUE_CHARS = VALUE_BYTES - '{"d":""}'.length;

/** payload is `bytes` printable characters that differ per seed. */
export function payload(bytes: number, seed: number): string {
  const base = seed.toString(36);
  return base.padEnd(bytes, 'x').slice(0, bytes);
}
