// TEMP probe: 64 one-call writers with write-trace on; client latency over time and the leader's rounds.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startSvcCluster } from './cluster/svc-cluster.js';
import { readTraces } from './cluster/trace-files.js';
import { monotonicUs } from '../transports/node/write-trace.js';
import { WRITE_TRACE_DIR_ENV } from '../cli/node-command.js';

const writers = Number(process.env.WRITERS ?? 64);
const seconds = Number(process.env.SECONDS_ ?? 4);
const dir = await mkdtemp(join(tmpdir(), 'svc-tail-'));
const traceDir = join(dir, 'trace');
mkdirSync(traceDir);
if (process.env.TRACE !== '0') process.env[WRITE_TRACE_DIR_ENV] = traceDir;
import { PerformanceObserver, performance } from "node:perf_hooks";
const perfOffsetUs = monotonicUs() - performance.now() * 1000;
const gcs: Array<{ at: number; ms: number; kind: number }> = [];
new PerformanceObserver((l) => { for (const e of l.getEntries()) gcs.push({ at: e.startTime * 1000 + perfOffsetUs, ms: e.duration, kind: (e as any).detail?.kind ?? 0 }); }).observe({ entryTypes: ["gc"] });
const cluster = await startSvcCluster(join(dir, 'c'), (process.env.NODEOPTS ?? '').split(' ').filter(Boolean), [], false, []);
const writes: Array<{ w: number; sentUs: number; answeredUs: number }> = [];
try {
  const value = 'x'.repeat(88);
  const warmTo = monotonicUs() + 1e6;
  const endUs = warmTo + seconds * 1e6;
  await Promise.all(
    Array.from({ length: writers }, async (_, w) => {
      for (let i = 0; monotonicUs() < endUs; i++) {
        const sentUs = monotonicUs();
        await cluster.putAlone(`k/${w}/${i}`, value);
        const answeredUs = monotonicUs();
        if (sentUs >= warmTo) writes.push({ w, sentUs, answeredUs });
      }
    }),
  );
} finally {
  await cluster.stop();
}
const traces = process.env.TRACE !== '0' ? await readTraces(traceDir) : [];
await writeFile('/tmp/tail64/probe.json', JSON.stringify({ gcs, leader: cluster.leaderName, writes, traces: traces.map((t) => ({ name: t.name, byPhase: Object.fromEntries(t.byPhase) })) }));
const gcMs = gcs.reduce((s, g) => s + g.ms, 0); const bigGc = gcs.filter((g) => g.ms > 5).map((g) => `${g.kind}:${g.ms.toFixed(1)}`); const byKind: Record<number, number> = {}; for (const g of gcs) byKind[g.kind] = (byKind[g.kind] ?? 0) + g.ms; console.log(JSON.stringify(byKind), process.memoryUsage());
console.log(`client gc: ${gcs.length} events, ${gcMs.toFixed(0)} ms total, >5ms: ${bigGc.join(" ")}`);
const lat = writes.map((x) => (x.answeredUs - x.sentUs) / 1000).sort((a, b) => a - b);
const q = (p: number) => lat[Math.min(lat.length - 1, Math.floor(p * lat.length))]!.toFixed(1);
console.log(`${writes.length} writes, ${(writes.length / seconds).toFixed(0)}/s p50 ${q(0.5)} p90 ${q(0.9)} p99 ${q(0.99)} max ${q(1)}`);
if (process.env.KEEP) console.log('kept', dir); else await rm(dir, { recursive: true, force: true });
