// preload fills a bench cluster's store before its measured part: `keyCount` distinct keys through the batched
// pool, PRELOAD_WRITERS at a time, each value the 96-byte stored value of bench/cluster.ts.
import { performance } from 'node:perf_hooks';
import { payload, SVC_VALUE_CHARS } from './load.js';
import type { SvcCluster } from './svc-cluster.js';

/** PRELOAD_WRITERS: concurrent batched writers filling the store. */
const PRELOAD_WRITERS = 64;

/** preload writes keys `preload/0` .. `preload/{keyCount - 1}` and resolves the seconds it took. */
export async function preload(svc: SvcCluster, keyCount: number): Promise<number> {
  const began = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: PRELOAD_WRITERS }, async () => {
      // Bounded by keyCount.
      while (next < keyCount) {
        const i = next++;
        await svc.put(`preload/${i}`, payload(SVC_VALUE_CHARS, i));
      }
    }),
  );
  return (performance.now() - began) / 1000;
}
