// Members' /metrics for the cluster benches: scraped before and after a measured window, so nothing is added to
// their path, and read as what happened in between (GC pauses, event-loop delay, WAL syncs, snapshots staged or
// installed). prom-client resets its event-loop delay monitor at each scrape, so its max is the window's.
import { processCpuMs } from './proc-cpu.js';

/** Scrape: one member's /metrics text, read into sample name{labels} → value. */
export type Scrape = Map<string, number>;

/** GC_KINDS: prom-client's GC duration histogram's kinds. */
const GC_KINDS = ['minor', 'major', 'incremental', 'weakcb'] as const;

/** gcPauses: how many GC pauses of a kind, and how many over `le` seconds, in the window (delta: after − before). */
function gcPauses(delta: (key: string) => number, kind: string, le: string): { count: number; over: number } {
  const count = delta(`svc_process_nodejs_gc_duration_seconds_count{kind="${kind}"}`);
  return { count, over: count - delta(`svc_process_nodejs_gc_duration_seconds_bucket{le="${le}",kind="${kind}"}`) };
}

export function parseMetrics(text: string): Scrape {
  const samples = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const at = line.lastIndexOf(' ');
    samples.set(line.slice(0, at), Number(line.slice(at + 1)));
  }
  return samples;
}

/** memberLine: one member's GC, event-loop delay and WAL syncs in the window (before → after scrapes). */
export function memberLine(name: string, before: Scrape, after: Scrape): string {
  const delta = (key: string): number => (after.get(key) ?? 0) - (before.get(key) ?? 0);
  const gc = GC_KINDS.map((kind) => {
    const { count, over: over10Ms } = gcPauses(delta, kind, '0.01');
    const ms = delta(`svc_process_nodejs_gc_duration_seconds_sum{kind="${kind}"}`) * 1000;
    return count === 0
      ? ''
      : `${kind} ${count} (${ms.toFixed(0)} ms, >10 ms ${over10Ms}, >100 ms ${gcPauses(delta, kind, '0.1').over})`;
  })
    .filter((s) => s !== '')
    .join(', ');
  const syncs = delta('svc_wal_sync_seconds_count');
  const over = (le: string): number => syncs - delta(`svc_wal_sync_seconds_bucket{le="${le}"}`);
  const lag = (q: string): string =>
    ((after.get(`svc_process_nodejs_eventloop_lag_${q}_seconds`) ?? NaN) * 1000).toFixed(1);
  const staged = delta('svc_snapshot_events_total{event="staged"}');
  const installed = delta('svc_snapshot_events_total{event="installed"}');
  const cpuMs = delta(CPU_MS_KEY);
  const cpu = Number.isNaN(cpuMs) || !after.has(CPU_MS_KEY) ? '' : `CPU ${cpuMs.toFixed(0)} ms; `;
  const heap = `heap used ${heapUsedMb(after).toFixed(0)} MB (${(heapUsedMb(after) - heapUsedMb(before)).toFixed(0)} in the window)`;
  return `  ${name}: ${staged > 0 ? `SNAPSHOT STAGED ${staged}; ` : ''}${installed > 0 ? `SNAPSHOT INSTALLED ${installed}; ` : ''}${cpu}GC ${gc || 'none'}; event-loop delay max ${lag('max')} ms, p99 ${lag('p99')} ms; WAL syncs ${syncs} (${((delta('svc_wal_sync_seconds_sum') * 1000) / Math.max(1, syncs)).toFixed(1)} ms mean, >20 ms ${over('0.02')}, >50 ms ${over('0.05')}); ${heap}`;
}

/** heapUsedMb: the V8 heap in use at a scrape, MB. */
const heapUsedMb = (scrape: Scrape): number => (scrape.get('svc_process_nodejs_heap_size_used_bytes') ?? NaN) / 1e6;

/** MemberAddresses: where a member's /metrics is, and its process (for its CPU time). */
type MemberAddresses = ReadonlyArray<{ metricsAddr?: string; httpAddr: string; pid?: number }>;

/**
 * scrapeMembers reads every member's /metrics now (an unreachable member reads as no samples), with its process's
 * CPU time so far under the key CPU_MS_KEY (from /proc: Linux only).
 */
export function scrapeMembers(members: MemberAddresses): Promise<Scrape[]> {
  return Promise.all(
    members.map(async (m) => {
      const scrape = parseMetrics(await (await fetch(`${m.metricsAddr ?? m.httpAddr}/metrics`)).text().catch(() => ''));
      if (m.pid !== undefined) scrape.set(CPU_MS_KEY, processCpuMs([m.pid]));
      return scrape;
    }),
  );
}

const CPU_MS_KEY = 'bench_process_cpu_ms';

/**
 * roundNote sums up the members in one round for a line of bench/cluster.ts, in member order: their CPU time in the
 * round, snapshots staged, GC pauses over 10 ms, the event loop's longest delay, and their heap in use at its end.
 */
export function roundNote(before: Scrape[], after: Scrape[]): string {
  const perMember = after.map((a, i) => {
    const b = before[i] ?? new Map<string, number>();
    const delta = (key: string): number => (a.get(key) ?? 0) - (b.get(key) ?? 0);
    const over10Ms = GC_KINDS.reduce((sum, kind) => sum + gcPauses(delta, kind, '0.01').over, 0);
    return {
      cpuMs: delta(CPU_MS_KEY),
      staged: delta('svc_snapshot_events_total{event="staged"}'),
      over10Ms,
      lagMaxMs: (a.get('svc_process_nodejs_eventloop_lag_max_seconds') ?? NaN) * 1000,
      heapMb: heapUsedMb(a),
    };
  });
  const list = (pick: (m: (typeof perMember)[number]) => string): string => perMember.map(pick).join('/');
  return `members: CPU ${list((m) => m.cpuMs.toFixed(0))} ms, staged ${list((m) => String(m.staged))}, GC pauses > 10 ms ${list((m) => String(m.over10Ms))}, loop delay max ${list((m) => m.lagMaxMs.toFixed(0))} ms, heap ${list((m) => m.heapMb.toFixed(0))} MB`;
}
