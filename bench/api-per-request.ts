// Bench (not a test): what one keyed GET /projects creates, counted rather than timed, so that a change to the
// request path shows the same figure on a quiet machine and a loaded one: async resources per request (promises,
// ticks, immediates, timers: async_hooks `init`), bare Express beside the API behind the node's HTTP front
// (helmet's headers), on a ReplicatedStore whose host answers a read index one loop turn later (no cluster), with
// its rate limit leased from a local redis-server. Requests go one at a time, so none shares a read index.
// With --allocations, also the bytes each case allocates per request (V8's sampling heap profiler, objects that
// were collected since included, so it counts what the garbage collector has to sweep), with the functions that
// allocate the most in the API case beyond what they allocate for the bare one (the client's share in this same
// process is the same for both).
// With --cpu, also this process's CPU per request (process.cpuUsage: server and client, the client's share alike for
// both cases) with cpuConcurrency requests in flight, the cases alternating for cpuRounds rounds of `requests` each:
// a same-process A/B of the request path's CPU that needs no cluster (the ratio is diluted by the client's share).
// Usage: tsx bench/api-per-request.ts [requests] [--allocations] [--cpu]
import { createHook } from 'node:async_hooks';
import { Session } from 'node:inspector/promises';
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import express from 'express';
import { Registry } from 'prom-client';
import { createApp } from '../api/app.js';
import { ApiIncomingMessage } from '../api/request-class.js';
import { ApiServerResponse } from '../api/response-class.js';
import { bootstrapAdminKey } from '../api/auth/api-keys.js';
import { silentApiLogger } from '../api/log.js';
import { redisServerAvailable, startLocalRedis } from '../api/redis/local-redis.js';
import { EntryKind } from '../engine/types.js';
import type { StoreHost } from '../store/host.js';
import { ReplicatedStore } from '../store/replicated-store.js';
import { StoreStateMachine } from '../store/state-machine.js';
import { startHttpServer } from '../transports/node/http-server.js';

const requests = Number(process.argv.slice(2).find((arg) => !arg.startsWith('--')) ?? 2000);
const allocations = process.argv.includes('--allocations');
const cpu = process.argv.includes('--cpu');
/** cpuRounds alternate the cases with --cpu; cpuConcurrency requests are in flight at once. */
const cpuRounds = 8;
const cpuConcurrency = 16;
/** allocationSampleBytes: the heap profiler samples one allocation per this many bytes on average. */
const allocationSampleBytes = 512;
/** allocationTopCount functions are listed. */
const allocationTopCount = 25;
/** warmupRequests are sent before counting (the validator's first load, V8's first compilations). */
const warmupRequests = 300;
/** projectCount projects are listed by GET /projects (the bare handler serves the same JSON). */
const projectCount = 10;

const counts = new Map<string, number>();
let counting = false;
const initCounter = createHook({
  init(_asyncId, type) {
    if (counting) counts.set(type, (counts.get(type) ?? 0) + 1);
  },
}).enable();

const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });

function get(port: number, headers: Record<string, string>): Promise<void> {
  return new Promise((resolve, reject) => {
    http
      .get({ host: '127.0.0.1', port, path: '/projects', headers, agent }, (res) => {
        if (res.statusCode !== 200) reject(new Error(`GET /projects answered ${res.statusCode}`));
        res.resume();
        res.on('end', resolve);
      })
      .on('error', reject);
  });
}

async function sequential(port: number, headers: Record<string, string>): Promise<void> {
  for (let index = 0; index < requests; index++) await get(port, headers);
}

const concurrentAgent = new http.Agent({ keepAlive: true, maxSockets: cpuConcurrency });

/** cpuPerRequestUs sends `requests` requests, cpuConcurrency at a time, and gives this process's CPU µs per request. */
async function cpuPerRequestUs(port: number, headers: Record<string, string>): Promise<number> {
  let sent = 0;
  const loop = async (): Promise<void> => {
    while (sent < requests) {
      sent++;
      await new Promise<void>((resolve, reject) => {
        http
          .get({ host: '127.0.0.1', port, path: '/projects', headers, agent: concurrentAgent }, (res) => {
            if (res.statusCode !== 200) reject(new Error(`GET /projects answered ${res.statusCode}`));
            res.resume();
            res.on('end', resolve);
          })
          .on('error', reject);
      });
    }
  };
  const before = process.cpuUsage();
  await Promise.all(Array.from({ length: cpuConcurrency }, loop));
  const used = process.cpuUsage(before);
  return (used.user + used.system) / requests;
}

interface SamplingHeapProfileNode {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  children: SamplingHeapProfileNode[];
}

/** allocated runs `work` under the sampling heap profiler, objects collected meanwhile included. */
async function allocated(work: () => Promise<void>): Promise<{ total: number; byFunction: Map<string, number> }> {
  const session = new Session();
  session.connect();
  try {
    await session.post('HeapProfiler.startSampling', {
      samplingInterval: allocationSampleBytes,
      includeObjectsCollectedByMajorGC: true,
      includeObjectsCollectedByMinorGC: true,
    });
    await work();
    const { profile } = (await session.post('HeapProfiler.stopSampling')) as {
      profile: { head: SamplingHeapProfileNode };
    };
    const byFunction = new Map<string, number>();
    let total = 0;
    const visit = (node: SamplingHeapProfileNode): void => {
      const { functionName, url, lineNumber } = node.callFrame;
      const name = `${functionName || '(anonymous)'} ${url.replace(/^.*\/(node_modules\/|bench\/\.\.\/)/, '')}:${lineNumber + 1}`;
      byFunction.set(name, (byFunction.get(name) ?? 0) + node.selfSize);
      total += node.selfSize;
      for (const child of node.children) visit(child);
    };
    visit(profile.head);
    return { total, byFunction };
  } finally {
    session.disconnect();
  }
}

/** localHost is a one-node store host: commands apply at once, a read index comes one loop turn later. */
function localHost(): StoreHost {
  const stateMachine = new StoreStateMachine();
  let seq = 0;
  return {
    stateMachine,
    commit: (command) => {
      seq++;
      const applied = stateMachine.apply({ seq, term: 1, kind: EntryKind.EventBatch, data: command.bytes });
      return Promise.resolve({ seq, result: applied.result! });
    },
    readIndex: () => new Promise((resolve) => setImmediate(() => resolve(stateMachine.appliedSeq))),
    readsLocally: () => true,
    waitApplied: () => Promise.resolve(),
  };
}

async function main(): Promise<void> {
  if (!redisServerAvailable()) throw new Error('redis-server is not on the PATH (the rate limit leases from it)');
  const dir = mkdtempSync(path.join(os.tmpdir(), 'svc-bench-per-request-'));
  const redis = await startLocalRedis(dir);
  const store = new ReplicatedStore(localHost());
  const admin = await bootstrapAdminKey(store, 'bench');
  const service = createApp({
    store,
    redis: { url: redis.url },
    config: { rateLimitPerSecond: 1_000_000, log: silentApiLogger(), metricsRegistry: new Registry() },
  });
  const front = await startHttpServer({
    host: '127.0.0.1',
    port: 0,
    role: 'api',
    incomingMessage: ApiIncomingMessage,
    serverResponse: ApiServerResponse,
    requestTimeoutMs: 30_000,
    onError: (err) => process.stderr.write(`${err.stack ?? err.message}\n`),
    surface: {
      health: () => null,
      ready: () => null,
      status: () => null,
      metrics: () => Promise.resolve(null),
      api: () => service.app,
    },
  });
  const apiUrl = `http://127.0.0.1:${front.port}`;
  for (let index = 0; index < projectCount; index++) {
    const created = await fetch(`${apiUrl}/projects`, {
      method: 'POST',
      headers: { 'x-api-key': admin.key, 'content-type': 'application/json' },
      body: JSON.stringify({ name: `p${index}`, workspace: dir, command: ['./agent.sh'] }),
    });
    if (!created.ok) throw new Error(`POST /projects answered ${created.status}: ${await created.text()}`);
  }
  const payload: unknown = await (await fetch(`${apiUrl}/projects`, { headers: { 'x-api-key': admin.key } })).json();
  const bare = express();
  bare.get('/projects', (_req, res) => {
    res.json(payload);
  });
  const bareServer = bare.listen(0, '127.0.0.1');
  await new Promise((resolve) => bareServer.once('listening', resolve));
  const cases: Array<{ name: string; port: number; headers: Record<string, string> }> = [
    { name: 'bare Express', port: (bareServer.address() as AddressInfo).port, headers: {} },
    { name: 'API GET /projects (node front)', port: front.port, headers: { 'x-api-key': admin.key } },
  ];
  process.stdout.write(`async resources created per request (${requests} requests, one at a time)\n\n`);
  for (const benchCase of cases) {
    for (let index = 0; index < warmupRequests; index++) await get(benchCase.port, benchCase.headers);
    counts.clear();
    counting = true;
    await sequential(benchCase.port, benchCase.headers);
    counting = false;
    const figures = [...counts]
      .filter(([, count]) => count / requests >= 0.05)
      .sort((a, b) => b[1] - a[1])
      .map(([type, count]) => `${type} ${(count / requests).toFixed(2)}`);
    process.stdout.write(`${benchCase.name}: ${figures.join(', ')}\n`);
  }
  if (cpu) {
    initCounter.disable();
    const ratios: number[] = [];
    const rows: string[] = [];
    for (let round = 0; round < cpuRounds; round++) {
      // ABBA: each pair of rounds starts with the other case.
      const order = round % 2 === 0 ? [0, 1] : [1, 0];
      const us: number[] = [];
      for (const index of order) us[index] = await cpuPerRequestUs(cases[index]!.port, cases[index]!.headers);
      ratios.push(us[0]! / us[1]!);
      rows.push(`${us[0]!.toFixed(0)} vs ${us[1]!.toFixed(0)}`);
    }
    const sorted = [...ratios].sort((a, b) => a - b);
    const median = (sorted[(sorted.length - 1) >> 1]! + sorted[sorted.length >> 1]!) / 2;
    process.stdout.write(
      `\nCPU µs per request, this process (server and client), bare vs API, ${cpuConcurrency} in flight, ${requests} per round: ${rows.join(', ')}; bare/API median ${(median * 100).toFixed(1)}%\n`,
    );
  }
  if (allocations) {
    // The counting hook would allocate for every promise: off while allocations are sampled.
    initCounter.disable();
    const byCase: Array<Map<string, number>> = [];
    for (const benchCase of cases) {
      const { total, byFunction } = await allocated(() => sequential(benchCase.port, benchCase.headers));
      byCase.push(byFunction);
      process.stdout.write(`${benchCase.name}: ${(total / requests).toFixed(0)} bytes allocated per request\n`);
      if (process.env.BENCH_ALLOCATIONS_TOP)
        for (const [name, bytes] of [...byFunction].sort((a, b) => b[1] - a[1]).slice(0, allocationTopCount))
          process.stdout.write(`${(bytes / requests).toFixed(0).padStart(8)} ${name}\n`);
    }
    const [bareBytes, apiBytes] = byCase as [Map<string, number>, Map<string, number>];
    const extra = [...apiBytes]
      .map(([name, bytes]): [string, number] => [name, bytes - (bareBytes.get(name) ?? 0)])
      .sort((a, b) => b[1] - a[1])
      .slice(0, allocationTopCount);
    process.stdout.write(`\nallocating beyond bare (self bytes per request, API - bare):\n`);
    for (const [name, bytes] of extra) process.stdout.write(`${(bytes / requests).toFixed(0).padStart(8)} ${name}\n`);
  }
  agent.destroy();
  concurrentAgent.destroy();
  bareServer.closeAllConnections();
  bareServer.close();
  await front.close();
  await service.close();
  await redis.stop();
  rmSync(dir, { recursive: true, force: true });
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
  process.exitCode = 1;
});
