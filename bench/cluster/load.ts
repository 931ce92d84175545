// A closed-loop load driver: `writers` loops each await one operation after another for a warm-up
// and then a measured window; every operation that ends inside the window counts, with its latency.
import { performance } from 'node:perf_hooks';

export interface LoadResult {
  writers: number;
  ops: number;
  seconds: number;
  opsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  errors: number;
  firstError: string;
}

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
  await Promise.all(Array.from({ length: writers }, (_, w) => loop(w)));
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
  };
}

/** payload is `bytes` printable characters that differ per seed. */
export function payload(bytes: number, seed: number): string {
  const base = seed.toString(36);
  return base.padEnd(bytes, 'x').slice(0, bytes);
}
