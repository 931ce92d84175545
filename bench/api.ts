// Bench (not a test): authenticated GET /projects beside a bare Express handler, in the same run.
// Usage: tsx bench/api.ts [seconds-per-measurement] [rounds]. autocannon (its own process), 64 connections,
// loopback. Cases alternate for `rounds` rounds and the best round of each is kept, so that a noisy
// neighbour on this shared machine hurts every case alike.
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import type autocannon from 'autocannon';
import express from 'express';
import { createApp } from '../api/app.js';
import { silentApiLogger } from '../api/log.js';
import type { ApiService } from '../api/app.js';
import { bootstrapAdminKey } from '../api/auth/api-keys.js';
import { MemoryDocumentStore } from '../store/memory-store.js';
import { redisServerAvailable, startLocalRedis } from '../api/redis/local-redis.js';
import type { LocalRedis } from '../api/redis/local-redis.js';

const connections = 64;
const durationSeconds = Number(process.argv[2] ?? 3);
const rounds = Number(process.argv[3] ?? 2);
const autocannonCli = createRequire(import.meta.url).resolve('autocannon/autocannon.js');

interface BenchCase {
  name: string;
  url: string;
  headers: Record<string, string>;
  best?: autocannon.Result;
}

async function listen(app: express.Express): Promise<{ url: string; server: Server }> {
  const server = app.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

async function measure(url: string, headers: Record<string, string>): Promise<autocannon.Result> {
  const headerArgs = Object.entries(headers).flatMap(([name, value]) => ['-H', `${name}=${value}`]);
  const { stdout } = await promisify(execFile)(
    process.execPath,
    [autocannonCli, '--json', '-c', String(connections), '-d', String(durationSeconds), ...headerArgs, url],
    { maxBuffer: 16 * 1024 * 1024 },
  );
  return JSON.parse(stdout) as autocannon.Result;
}

async function apiServer(
  redis: LocalRedis | undefined,
): Promise<{ url: string; key: string; server: Server; service: ApiService }> {
  const store = new MemoryDocumentStore();
  const admin = await bootstrapAdminKey(store, 'bench');
  for (let index = 0; index < 10; index++) {
    const id = `prj_${String(index).padStart(9, '0')}0000000000000000`;
    await store.put(`projects/${id}`, {
      id,
      name: `p${index}`,
      workspace: '/w',
      command: ['agent'],
      network: false,
      created_by: admin.userId,
      created_at: new Date().toISOString(),
      updated_at: new Date().toISOString(),
    });
  }
  // The limit is lifted so that the bench measures the request path, not the limiter's refusals.
  const service = createApp({
    store,
    redis: redis ? { url: redis.url } : undefined,
    config: { rateLimitPerSecond: 1_000_000, log: silentApiLogger() },
  });
  const { url, server } = await listen(service.app);
  return { url, key: admin.key, server, service };
}

async function main(): Promise<void> {
  // The bare handler answers the same ten projects the API holds, so that both serialize the same payload.
  const sample = await apiServer(undefined);
  const payload = await (await fetch(`${sample.url}/projects`, { headers: { 'x-api-key': sample.key } })).json();
  sample.server.close();
  await sample.service.close();
  const bare = express();
  bare.get('/projects', (_req, res) => {
    res.json(payload);
  });
  const bareServer = await listen(bare);
  const dir = mkdtempSync(path.join(os.tmpdir(), 'svc-bench-'));
  const redis = redisServerAvailable() ? await startLocalRedis(dir) : undefined;
  const plain = await apiServer(undefined);
  const withRedis = redis ? await apiServer(redis) : undefined;
  const cases: BenchCase[] = [
    { name: 'bare Express res.json', url: `${bareServer.url}/projects`, headers: {} },
    {
      name: 'API GET /projects (key, limiter in-process)',
      url: `${plain.url}/projects`,
      headers: { 'x-api-key': plain.key },
    },
  ];
  if (withRedis) {
    cases.push({
      name: 'API GET /projects (key, limiter in Redis)',
      url: `${withRedis.url}/projects`,
      headers: { 'x-api-key': withRedis.key },
    });
  }
  for (let round = 0; round < rounds; round++) {
    for (const benchCase of cases) {
      const result = await measure(benchCase.url, benchCase.headers);
      if (!benchCase.best || result.requests.average > benchCase.best.requests.average) benchCase.best = result;
    }
  }
  for (const running of [plain, withRedis]) {
    if (!running) continue;
    running.server.closeAllConnections();
    running.server.close();
    await running.service.close();
  }
  bareServer.server.closeAllConnections();
  bareServer.server.close();
  await redis?.stop();
  rmSync(dir, { recursive: true, force: true });

  const baseline = cases[0]!.best!.requests.average;
  process.stdout.write(
    `\n${connections} connections, ${durationSeconds}s per measurement, best of ${rounds} rounds, ` +
      `loopback; load average at end ${os
        .loadavg()
        .map((load) => load.toFixed(1))
        .join(' ')}\n\n`,
  );
  process.stdout.write('| case | req/s (mean) | vs bare | p50 ms | p99 ms | non-2xx |\n|---|---|---|---|---|---|\n');
  for (const { name, best } of cases) {
    process.stdout.write(
      `| ${name} | ${Math.round(best!.requests.average)} | ` +
        `${((best!.requests.average / baseline) * 100).toFixed(0)}% | ${best!.latency.p50} | ${best!.latency.p99} | ` +
        `${best!.non2xx} |\n`,
    );
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`${String(error)}\n`);
  process.exitCode = 1;
});
