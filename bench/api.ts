// Bench (not a test): authenticated GET /projects against a bare Express handler, same process, same run.
// Usage: tsx bench/api.ts [seconds-per-case]. autocannon, 64 connections, loopback.
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFile } from 'node:child_process';
import { createRequire } from 'node:module';
import { promisify } from 'node:util';
import type autocannon from 'autocannon';
import express from 'express';
import { createApp } from '../api/app.js';
import { bootstrapAdminKey } from '../api/auth/api-keys.js';
import { MemoryDocumentStore } from '../api/store/memory-store.js';
import { redisServerAvailable, startLocalRedis } from '../api/redis/local-redis.js';

const connections = 64;
const durationSeconds = Number(process.argv[2] ?? 4);

async function listen(app: express.Express): Promise<{ url: string; server: Server }> {
  const server = app.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

// The load generator runs in its own process so that it does not share an event loop with the server.
const autocannonCli = createRequire(import.meta.url).resolve('autocannon/autocannon.js');

async function measure(url: string, headers: Record<string, string>): Promise<autocannon.Result> {
  const headerArgs = Object.entries(headers).flatMap(([name, value]) => ['-H', `${name}=${value}`]);
  const { stdout } = await promisify(execFile)(process.execPath,
    [autocannonCli, '--json', '-c', String(connections), '-d', String(durationSeconds), ...headerArgs, url],
    { maxBuffer: 16 * 1024 * 1024 });
  return JSON.parse(stdout) as autocannon.Result;
}

async function main(): Promise<void> {
  const rows: Array<{ name: string; result: autocannon.Result }> = [];

  const bare = express();
  bare.get('/projects', (_req, res) => { res.json({ items: [], next_cursor: null }); });
  const bareServer = await listen(bare);
  rows.push({ name: 'bare Express res.json', result: await measure(`${bareServer.url}/projects`, {}) });
  bareServer.server.close();

  const cases: Array<{ name: string; redis: boolean }> = [{ name: 'API GET /projects, no Redis', redis: false }];
  if (redisServerAvailable()) cases.push({ name: 'API GET /projects, Redis rate limit', redis: true });
  for (const benchCase of cases) {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'svc-bench-'));
    const redis = benchCase.redis ? await startLocalRedis(dir) : undefined;
    const store = new MemoryDocumentStore();
    const admin = await bootstrapAdminKey(store, 'bench');
    for (let index = 0; index < 10; index++) {
      await store.put(`projects/prj_${String(index).padStart(9, '0')}0000000000000000`, {
        id: `prj_${String(index).padStart(9, '0')}0000000000000000`, name: `p${index}`, workspace: '/w',
        command: ['agent'], network: false, created_by: admin.userId,
        created_at: new Date().toISOString(), updated_at: new Date().toISOString(),
      });
    }
    // The limit is lifted so that the bench measures the request path, not the limiter's refusals.
    const service = createApp({ store, redis: redis ? { url: redis.url } : undefined,
      config: { rateLimitPerSecond: 1_000_000, log: () => undefined } });
    const server = await listen(service.app);
    const result = await measure(`${server.url}/projects`, { 'x-api-key': admin.key });
    rows.push({ name: benchCase.name, result });
    server.server.closeAllConnections();
    server.server.close();
    await service.close();
    await redis?.stop();
    rmSync(dir, { recursive: true, force: true });
  }

  const baseline = rows[0]!.result.requests.average;
  process.stdout.write(`\n${connections} connections, ${durationSeconds}s each, loopback, autocannon in its own process; server in this one\n\n`);
  process.stdout.write('| case | req/s (mean) | vs bare | p50 ms | p99 ms | non-2xx |\n|---|---|---|---|---|---|\n');
  for (const { name, result } of rows) {
    process.stdout.write(`| ${name} | ${Math.round(result.requests.average)} | ` +
      `${(result.requests.average / baseline * 100).toFixed(0)}% | ${result.latency.p50} | ${result.latency.p99} | ` +
      `${result.non2xx} |\n`);
  }
}

main().catch((error: unknown) => { process.stderr.write(`${String(error)}\n`); process.exitCode = 1; });
