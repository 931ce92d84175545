// `svc debug bundle --out FILE.tar.gz [--since TIME] [--until TIME | --window 10m]`: every member's flight
// recording (docs/operations.md, "Flight recorder"), status, metrics and recent log lines, gathered through
// the admin API with the admin certificate into one gzipped tar (recording/bundle.ts: its layout), which a
// developer replays with `npm run sim -- --replay FILE.tar.gz`. `--out DIR` writes the same tree into a
// folder instead. With a window, only the segments written during it, plus the earlier segments of their
// runs (a run replays from its start), and only the log lines of the window.
import { mkdir, mkdtemp, readdir, rename, rm, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { status as grpcStatus } from '@grpc/grpc-js';
import * as tar from 'tar';
import type { AdminClientPool } from '../transports/admin/admin-client.js';
import { AdminCallError } from '../transports/admin/admin-client.js';
import type { Member, StatusResponse } from '../proto/gen/svc/admin/v1/admin.js';
import {
  BUNDLE_FILE,
  BUNDLE_FORMAT_VERSION,
  BUNDLE_MANIFEST,
  memberFiles,
  type BundleManifest,
} from '../recording/bundle.js';
import { adminPool, callAnyMember } from './admin-calls.js';
import { ADMIN_TARGET_FLAGS, adminTarget } from './admin-target.js';
import { bundleWindow, segmentsForWindow, type BundleWindow, type ListedSegment } from './debug-window.js';
import { parseFlags, stringFlag } from './flags.js';
import type { Io } from './io.js';
import { EXIT_FAILED, EXIT_OK, STATUS_MEMBER_DEADLINE_MS } from './limits.js';
import { DEBUG_USAGE, UsageError } from './usage.js';

/** BUNDLE_CALL_DEADLINE_MS bounds one Recording or Logs call (a chunk of at most 1 MiB). */
const BUNDLE_CALL_DEADLINE_MS = 10_000;
/** SEGMENT_HEAD_BYTES is how much of a segment is read to learn its run (its first line). */
const SEGMENT_HEAD_BYTES = 1024;
/** BUNDLE_METRICS_TIMEOUT_MS bounds the GET of a member's /metrics. */
const BUNDLE_METRICS_TIMEOUT_MS = 3_000;
/** BUNDLE_METRICS_BYTES_MAX bounds the /metrics text kept per member. */
const BUNDLE_METRICS_BYTES_MAX = 4 * 1024 * 1024;

type MemberReport = BundleManifest['members'][number];

export async function runDebugCommand(args: string[], io: Io): Promise<number> {
  const [sub, ...rest] = args;
  const { values } = parseFlags(rest, {
    ...ADMIN_TARGET_FLAGS,
    out: { type: 'string' },
    since: { type: 'string' },
    until: { type: 'string' },
    window: { type: 'string' },
  });
  if (sub !== 'bundle' || values.help === true) {
    io.out.write(`${DEBUG_USAGE}\n`);
    return sub === 'bundle' || sub === undefined || sub === '--help' ? EXIT_OK : EXIT_FAILED;
  }
  const outFlag = stringFlag(values, 'out');
  if (outFlag === undefined) throw new UsageError('svc debug bundle needs --out FILE.tar.gz (or --out DIR)');
  const window = bundleWindow(
    { since: stringFlag(values, 'since'), until: stringFlag(values, 'until'), window: stringFlag(values, 'window') },
    Date.now(),
  );
  const out = resolve(outFlag);
  const archive = BUNDLE_FILE.test(out);
  const target = await adminTarget(values);
  const pool = adminPool(target);
  // An archive is gathered in a folder beside it, then packed and renamed into place: a failed run leaves no half file.
  if (archive) await mkdir(dirname(out), { recursive: true });
  const root = archive ? await mkdtemp(join(dirname(out), '.svc-bundle-')) : out;
  try {
    let first: StatusResponse;
    try {
      ({ value: first } = await callAnyMember(target, STATUS_MEMBER_DEADLINE_MS, (a, d) => pool.status(a, d)));
    } catch (err) {
      if (!(err instanceof AdminCallError)) throw err;
      io.err.write(`svc debug bundle: ${err.message}\n`);
      return EXIT_FAILED;
    }
    await mkdir(root, { recursive: true });
    const manifest: BundleManifest = {
      v: BUNDLE_FORMAT_VERSION,
      createdAt: new Date().toISOString(),
      window: {
        since: window.sinceMs > 0 ? new Date(window.sinceMs).toISOString() : '',
        until: Number.isFinite(window.untilMs) ? new Date(window.untilMs).toISOString() : '',
      },
      members: [],
    };
    let failed = 0;
    for (const member of first.members.filter((m) => m.role !== 'removed')) {
      const report = await gatherMember(pool, member, root, window);
      manifest.members.push(report);
      if (report.error !== '') {
        failed++;
        io.err.write(`svc debug bundle: ${member.name}: ${report.error}\n`);
      } else {
        io.out.write(
          `svc debug bundle: ${member.name}: ${report.segments} segments, ${report.recordingBytes} bytes, ${report.logLines} log lines\n`,
        );
      }
    }
    await writeFile(join(root, BUNDLE_MANIFEST), `${JSON.stringify(manifest, null, 2)}\n`);
    if (archive) {
      const partial = `${out}.partial`;
      await tar.c({ gzip: true, file: partial, cwd: root, portable: true }, (await readdir(root)).sort());
      await rename(partial, out);
    }
    const segments = manifest.members.reduce((n, m) => n + m.segments, 0);
    const bytes = manifest.members.reduce((n, m) => n + m.recordingBytes, 0);
    io.out.write(
      `bundle=${out} members=${manifest.members.length - failed} segments=${segments} bytes=${bytes}` +
        ` (replay: npm run sim -- --replay ${archive ? out : `${out}/*/recording`})\n`,
    );
    return failed === 0 ? EXIT_OK : EXIT_FAILED;
  } finally {
    pool.close();
    if (archive) await rm(root, { recursive: true, force: true });
  }
}

/** gatherMember writes one member's parts under root/<member>/; a failure is reported, not thrown. */
async function gatherMember(
  pool: AdminClientPool,
  member: Member,
  root: string,
  window: BundleWindow,
): Promise<MemberReport> {
  const files = memberFiles(member.name);
  const report: MemberReport = {
    name: member.name,
    segments: 0,
    recordingBytes: 0,
    logLines: 0,
    logsNote: '',
    metrics: '',
    error: '',
  };
  try {
    await mkdir(join(root, files.recording), { recursive: true });
    const status = await pool.status(member.grpcAddr, Date.now() + STATUS_MEMBER_DEADLINE_MS);
    await writeFile(join(root, files.status), `${JSON.stringify(status, null, 2)}\n`);
    const metrics = await metricsOf(status, member.grpcAddr);
    report.metrics = metrics.from;
    await writeFile(join(root, files.metrics), metrics.text);
    const logs = await logsOf(pool, member.grpcAddr, window);
    report.logLines = logs.lines;
    report.logsNote = logs.note;
    await writeFile(join(root, files.logs), logs.text);
    const got = await copyRecording(pool, member.grpcAddr, join(root, files.recording), window);
    report.segments = got.segments;
    report.recordingBytes = got.bytes;
  } catch (err) {
    report.error = err instanceof Error ? err.message : String(err);
  }
  return report;
}

/** metricsAt: where a member's /metrics is, from its status (a wildcard listener host is the member's own host). */
export function metricsAt(metricsAddr: string, grpcAddr: string): string | null {
  if (metricsAddr === '') return null;
  let url: URL;
  try {
    url = new URL(metricsAddr);
  } catch {
    return null;
  }
  if (['0.0.0.0', '[::]', '::', ''].includes(url.hostname)) {
    const host = grpcAddr.replace(/:\d+$/, '');
    url.hostname = host === '' ? '127.0.0.1' : host;
  }
  return `${url.origin}/metrics`;
}

async function metricsOf(status: StatusResponse, grpcAddr: string): Promise<{ text: string; from: string }> {
  const at = metricsAt(status.metricsAddr, grpcAddr);
  // A node of an earlier version does not say where its metrics listener is.
  if (at === null)
    return { text: '# /metrics not gathered: the member does not report its metrics listener\n', from: 'unknown' };
  try {
    const response = await fetch(at, { signal: AbortSignal.timeout(BUNDLE_METRICS_TIMEOUT_MS) });
    if (!response.ok) return { text: `# /metrics not gathered: ${at} answered ${response.status}\n`, from: at };
    const text = await response.text();
    if (Buffer.byteLength(text) > BUNDLE_METRICS_BYTES_MAX)
      return { text: `# /metrics not kept: ${at} answered over ${BUNDLE_METRICS_BYTES_MAX} bytes\n`, from: at };
    return { text, from: at };
  } catch (err) {
    // The metrics listener is loopback by default (metricsListen): from another host it cannot be reached.
    return { text: `# /metrics did not answer at ${at}: ${String(err)}\n`, from: at };
  }
}

async function logsOf(
  pool: AdminClientPool,
  address: string,
  window: BundleWindow,
): Promise<{ text: string; lines: number; note: string }> {
  try {
    const answer = await pool.logs(
      address,
      { sinceUnixMs: window.sinceMs, untilUnixMs: Number.isFinite(window.untilMs) ? window.untilMs : 0 },
      Date.now() + BUNDLE_CALL_DEADLINE_MS,
    );
    const oldest = answer.oldestUnixMs > 0 ? new Date(answer.oldestUnixMs).toISOString() : 'none';
    const note =
      answer.dropped > 0
        ? `the node's log ring let ${answer.dropped} older lines go (it holds lines from ${oldest}); its stdout has them`
        : '';
    return { text: answer.lines.map((l) => `${l}\n`).join(''), lines: answer.lines.length, note };
  } catch (err) {
    // A node of an earlier version has no Logs call: the bundle says so and carries on.
    if (err instanceof AdminCallError) return { text: '', lines: 0, note: `logs not gathered: ${err.message}` };
    throw err;
  }
}

async function copyRecording(
  pool: AdminClientPool,
  address: string,
  dir: string,
  window: BundleWindow,
): Promise<{ segments: number; bytes: number }> {
  const deadline = (): number => Date.now() + BUNDLE_CALL_DEADLINE_MS;
  const listed = (await pool.recording(address, { name: '', offset: 0, bytesMax: 0 }, deadline())).segments;
  const described: Array<ListedSegment & { size: number }> = [];
  for (const segment of listed) {
    const head = await pool.recording(
      address,
      { name: segment.name, offset: 0, bytesMax: SEGMENT_HEAD_BYTES },
      deadline(),
    );
    const line = Buffer.from(head.data).toString('utf8').split('\n')[0] ?? '';
    let run = '';
    try {
      run = String((JSON.parse(line) as { run?: unknown }).run ?? '');
    } catch {
      // a segment just opened (its first line not written yet) or torn: it stands alone
    }
    described.push({ name: segment.name, modifiedUnixMs: segment.modifiedUnixMs, run, size: segment.size });
  }
  const chosen = segmentsForWindow(described, window);
  let bytes = 0;
  let segments = 0;
  for (const segment of chosen) {
    const size = described.find((d) => d.name === segment.name)!.size;
    try {
      bytes += await copySegment(pool, address, dir, segment.name, size, deadline);
      segments++;
    } catch (err) {
      // The ring rotated it out since it was listed: the bundle holds what is left.
      if (!(err instanceof AdminCallError && err.code === grpcStatus.NOT_FOUND)) throw err;
    }
  }
  return { segments, bytes };
}

/** copySegment reads one segment in chunks until its end (bounded: a segment still growing is read up to twice its listed size). */
async function copySegment(
  pool: AdminClientPool,
  address: string,
  dir: string,
  name: string,
  size: number,
  deadline: () => number,
): Promise<number> {
  const chunks: Uint8Array[] = [];
  let offset = 0;
  for (;;) {
    const answer = await pool.recording(address, { name, offset, bytesMax: 0 }, deadline());
    chunks.push(answer.data);
    offset += answer.data.length;
    if (answer.eof || answer.data.length === 0 || offset > 2 * size + 1) break;
  }
  await writeFile(join(dir, name), Buffer.concat(chunks));
  return offset;
}
