// `svc debug bundle --out DIR [--since TIME]`: every member's flight recording (docs/operations.md,
// "Flight recorder"), status and metrics, gathered through the admin API with the admin certificate into
// one directory a developer replays with `npm run sim -- --replay DIR/*/recording`. With --since, only the
// segments written since then, plus the earlier segments of their runs (a run replays from its start).
import { mkdir, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import type { AdminClientPool } from '../transports/admin/admin-client.js';
import { AdminCallError } from '../transports/admin/admin-client.js';
import type { RecordingSegment, StatusResponse } from '../proto/gen/svc/admin/v1/admin.js';
import { adminPool, callAnyMember } from './admin-calls.js';
import { ADMIN_TARGET_FLAGS, adminTarget } from './admin-target.js';
import { parseFlags, stringFlag } from './flags.js';
import type { Io } from './io.js';
import { EXIT_FAILED, EXIT_OK, STATUS_MEMBER_DEADLINE_MS } from './limits.js';
import { DEBUG_USAGE, UsageError } from './usage.js';

/** BUNDLE_CALL_DEADLINE_MS bounds one Recording call (a chunk of at most 1 MiB). */
const BUNDLE_CALL_DEADLINE_MS = 10_000;
/** SEGMENT_HEAD_BYTES is how much of a segment is read to learn its run (its first line). */
const SEGMENT_HEAD_BYTES = 1024;
/** BUNDLE_METRICS_TIMEOUT_MS bounds the GET of a member's /metrics. */
const BUNDLE_METRICS_TIMEOUT_MS = 3_000;

export async function runDebugCommand(args: string[], io: Io): Promise<number> {
  const [sub, ...rest] = args;
  const { values } = parseFlags(rest, { ...ADMIN_TARGET_FLAGS, out: { type: 'string' }, since: { type: 'string' } });
  if (sub !== 'bundle' || values.help === true) {
    io.out.write(`${DEBUG_USAGE}\n`);
    return sub === 'bundle' || sub === undefined || sub === '--help' ? EXIT_OK : EXIT_FAILED;
  }
  const out = stringFlag(values, 'out');
  if (out === undefined) throw new UsageError('svc debug bundle needs --out DIR');
  const sinceText = stringFlag(values, 'since');
  const since = sinceText === undefined ? 0 : Date.parse(sinceText);
  if (Number.isNaN(since)) throw new UsageError(`--since takes a time such as 2026-11-27T10:00:00Z, got ${sinceText}`);
  const target = await adminTarget(values);
  const pool = adminPool(target);
  try {
    let first: StatusResponse;
    try {
      ({ value: first } = await callAnyMember(target, STATUS_MEMBER_DEADLINE_MS, (a, d) => pool.status(a, d)));
    } catch (err) {
      if (!(err instanceof AdminCallError)) throw err;
      io.err.write(`svc debug bundle: ${err.message}\n`);
      return EXIT_FAILED;
    }
    let failed = 0;
    let total = { segments: 0, bytes: 0 };
    for (const member of first.members.filter((m) => m.role !== 'removed')) {
      const dir = join(resolve(out), member.name);
      try {
        await mkdir(join(dir, 'recording'), { recursive: true });
        const status = await pool.status(member.grpcAddr, Date.now() + STATUS_MEMBER_DEADLINE_MS);
        await writeFile(join(dir, 'status.json'), `${JSON.stringify(status, null, 2)}\n`);
        await writeFile(join(dir, 'metrics.txt'), await metricsOf(member.httpAddr));
        const got = await copyRecording(pool, member.grpcAddr, join(dir, 'recording'), since);
        total = { segments: total.segments + got.segments, bytes: total.bytes + got.bytes };
        io.out.write(`svc debug bundle: ${member.name}: ${got.segments} segments, ${got.bytes} bytes\n`);
      } catch (err) {
        failed++;
        io.err.write(`svc debug bundle: ${member.name}: ${err instanceof Error ? err.message : String(err)}\n`);
      }
    }
    io.out.write(
      `bundle=${resolve(out)} members=${first.members.length - failed} segments=${total.segments} bytes=${total.bytes}` +
        ` (replay: npm run sim -- --replay ${resolve(out)}/*/recording)\n`,
    );
    return failed === 0 ? EXIT_OK : EXIT_FAILED;
  } finally {
    pool.close();
  }
}

async function metricsOf(httpAddr: string): Promise<string> {
  try {
    const response = await fetch(`${httpAddr}/metrics`, { signal: AbortSignal.timeout(BUNDLE_METRICS_TIMEOUT_MS) });
    // A node of this version serves /metrics on its own listener (metricsListen, loopback by default), which
    // the bundle cannot reach through the member's advertised address: say so instead of keeping the refusal.
    if (!response.ok)
      return `# /metrics not gathered: ${httpAddr} answers ${response.status} (a node serves it on its metrics listener, metricsListen; scrape it there)\n`;
    return await response.text();
  } catch (err) {
    return `# /metrics did not answer: ${String(err)}\n`;
  }
}

async function copyRecording(
  pool: AdminClientPool,
  address: string,
  dir: string,
  since: number,
): Promise<{ segments: number; bytes: number }> {
  const deadline = (): number => Date.now() + BUNDLE_CALL_DEADLINE_MS;
  const listed = (await pool.recording(address, { name: '', offset: 0, bytesMax: 0 }, deadline())).segments;
  const runOf = new Map<string, string>();
  for (const segment of listed) {
    const head = await pool.recording(
      address,
      { name: segment.name, offset: 0, bytesMax: SEGMENT_HEAD_BYTES },
      deadline(),
    );
    const line = Buffer.from(head.data).toString('utf8').split('\n')[0] ?? '';
    try {
      runOf.set(segment.name, String((JSON.parse(line) as { run?: unknown }).run ?? ''));
    } catch {
      runOf.set(segment.name, '');
    }
  }
  const wanted = listed.filter((s) => s.modifiedUnixMs >= since);
  const runs = new Set(wanted.map((s) => runOf.get(s.name)));
  const chosen = listed.filter((s) => s.modifiedUnixMs >= since || runs.has(runOf.get(s.name)));
  let bytes = 0;
  for (const segment of chosen) bytes += await copySegment(pool, address, dir, segment, deadline);
  return { segments: chosen.length, bytes };
}

/** copySegment reads one segment in chunks until its end (bounded: a segment still growing is read up to twice its listed size). */
async function copySegment(
  pool: AdminClientPool,
  address: string,
  dir: string,
  segment: RecordingSegment,
  deadline: () => number,
): Promise<number> {
  const chunks: Uint8Array[] = [];
  let offset = 0;
  for (;;) {
    const answer = await pool.recording(address, { name: segment.name, offset, bytesMax: 0 }, deadline());
    chunks.push(answer.data);
    offset += answer.data.length;
    if (answer.eof || answer.data.length === 0 || offset > 2 * segment.size + 1) break;
  }
  await writeFile(join(dir, segment.name), Buffer.concat(chunks));
  return offset;
}
