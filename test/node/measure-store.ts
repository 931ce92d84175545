// Measures the replicated store on a three-node mTLS cluster (real sockets, real fsyncs):
// sequential put latency through the leader and through a follower, read latency through a
// follower (read index), and put throughput with concurrent writers.
//
//   npx tsx test/node/measure-store.ts processes   # each node in its own process (writes over IPC)
//   npx tsx test/node/measure-store.ts in-process  # all three nodes share this process
//
// Not a test: figures depend on the machine and its load; run it alone.
import { join } from 'node:path';
import type { JsonObject, VersionedValue } from '../../store/document-store.js';
import { ChildNode } from './child-node.js';
import { makePki, nodeConfig, planNodes, removeDir, tempDir, waitFor } from './harness.js';
import { InProcessCluster } from './in-process-cluster.js';

const SECONDS = 4;
const SEQUENTIAL_COUNT = 200;
const CONCURRENCY_LEVELS = [1, 16, 64];
const TICK_MS = 100;

interface Target {
  put(key: string, value: JsonObject): Promise<unknown>;
  get(key: string): Promise<VersionedValue | null>;
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? NaN;
}

async function timed(count: number, run: (i: number) => Promise<unknown>): Promise<number[]> {
  const ms: number[] = [];
  for (let i = 0; i < count; i++) {
    const t = performance.now();
    await run(i);
    ms.push(performance.now() - t);
  }
  return ms.sort((a, b) => a - b);
}

async function load(target: Target, label: string, writers: number): Promise<void> {
  let done = 0;
  const ms: number[] = [];
  const until = Date.now() + SECONDS * 1000;
  await Promise.all(
    Array.from({ length: writers }, async (_, w) => {
      for (let i = 0; Date.now() < until; i++) {
        const t = performance.now();
        await target.put(`${label}/${writers}/${w}/${i}`, { i, pad: 'x'.repeat(64) });
        ms.push(performance.now() - t);
        done++;
      }
    }),
  );
  ms.sort((a, b) => a - b);
  console.log(
    `put via ${label}, ${writers} writers: ${(done / SECONDS).toFixed(0)} puts/s, p50 ${percentile(ms, 0.5).toFixed(1)} ms, p99 ${percentile(ms, 0.99).toFixed(1)} ms`,
  );
}

async function measure(leader: Target, follower: Target): Promise<void> {
  for (const [label, target] of [
    ['leader', leader],
    ['follower', follower],
  ] as const) {
    const ms = await timed(SEQUENTIAL_COUNT, (i) => target.put(`seq-${label}/${i}`, { i, pad: 'x'.repeat(64) }));
    console.log(
      `sequential put via ${label}: p50 ${percentile(ms, 0.5).toFixed(2)} ms, p99 ${percentile(ms, 0.99).toFixed(2)} ms`,
    );
  }
  const reads = await timed(SEQUENTIAL_COUNT, (i) => follower.get(`seq-leader/${i}`));
  console.log(
    `get via follower (read index + local apply): p50 ${percentile(reads, 0.5).toFixed(2)} ms, p99 ${percentile(reads, 0.99).toFixed(2)} ms`,
  );
  for (const writers of CONCURRENCY_LEVELS) await load(leader, 'leader', writers);
  await load(follower, 'follower', CONCURRENCY_LEVELS[CONCURRENCY_LEVELS.length - 1]!);
}

async function inProcess(): Promise<void> {
  const cluster = new InProcessCluster();
  await cluster.start(['m1', 'm2', 'm3'], ['m1', 'm2', 'm3'], { tickMs: TICK_MS });
  try {
    const leader = await cluster.waitLeader();
    await measure(leader.store, cluster.followers()[0]!.store);
  } finally {
    await cluster.stop();
  }
}

async function processes(): Promise<void> {
  const dir = await tempDir('measure');
  const names = ['p1', 'p2', 'p3'];
  const pki = await makePki(dir, names);
  const plans = await planNodes(names);
  const bootstrap = plans.map((p) => p.member);
  const children = await Promise.all(
    plans.map((p) =>
      ChildNode.start(nodeConfig(p, join(dir, p.name), pki.tls(p.name), { bootstrap }, { tickMs: TICK_MS })),
    ),
  );
  try {
    let leader: ChildNode | undefined;
    await waitFor(
      async () => {
        for (const c of children) if ((await c.status()).role === 'leader') leader = c;
        return leader !== undefined;
      },
      'a leader',
      20_000,
    );
    await measure(
      leader!,
      children.find((c) => c !== leader)!,
    );
  } finally {
    await Promise.all(children.map((c) => c.stop()));
    await removeDir(dir);
  }
}

const mode = process.argv[2] ?? 'processes';
(mode === 'in-process' ? inProcess() : processes()).catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
