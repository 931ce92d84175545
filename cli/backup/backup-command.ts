// `svc backup --out FILE | --out-dir DIR [--keep N]`: a consistent copy of a running cluster's store, taken
// through the Admin service with the admin certificate (the cluster found as `svc status` finds it), written
// as one file (backup-file.ts) atomically: temp file, fsync, rename, fsync the directory.
// `svc backup verify FILE`: every digest and the structure checked; exit 0 with a summary, or 1 naming the problem.
import { readdir, rm, stat } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { status as grpcStatus } from '@grpc/grpc-js';
import { AdminCallError } from '../../transports/admin/admin-client.js';
import { BACKUP_BYTES_MAX, BACKUP_FILE_COUNT_MAX } from '../../transports/admin/limits.js';
import { toHex } from '../../transports/storage/blake3.js';
import type { AdminClientPool } from '../../transports/admin/admin-client.js';
import type { BackupHeader } from '../../proto/gen/svc/admin/v1/admin.js';
import { adminPool, callAnyMember } from '../admin-calls.js';
import { ADMIN_TARGET_FLAGS, adminTarget } from '../admin-target.js';
import { intFlag, parseFlags, stringFlag } from '../flags.js';
import type { Io } from '../io.js';
import { EXIT_FAILED, EXIT_OK } from '../limits.js';
import { BACKUP_USAGE, UsageError } from '../usage.js';
import {
  BACKUP_FORMAT,
  BACKUP_FORMAT_VERSION,
  BackupError,
  BackupWriter,
  verifyBackup,
  type BackupManifest,
  type VerifiedBackup,
} from './backup-file.js';
import { BACKUP_KEEP_MAX, BACKUP_TIMEOUT_MS_DEFAULT } from './limits.js';

/** BACKUP_FILE_SUFFIX ends the names --out-dir gives backups (and the only files --keep deletes). */
export const BACKUP_FILE_SUFFIX = '.svcbak';
const BACKUP_NAME = /^svc-backup-\d{8}T\d{6}Z-\d+\.svcbak$/;

export async function runBackupCommand(args: string[], io: Io): Promise<number> {
  if (args[0] === 'verify') return runVerify(args.slice(1), io);
  const { values } = parseFlags(args, {
    ...ADMIN_TARGET_FLAGS,
    out: { type: 'string' },
    'out-dir': { type: 'string' },
    keep: { type: 'string' },
  });
  if (values.help === true) {
    io.out.write(`${BACKUP_USAGE}\n`);
    return EXIT_OK;
  }
  const out = stringFlag(values, 'out');
  const outDir = stringFlag(values, 'out-dir');
  if ((out === undefined) === (outDir === undefined)) throw new UsageError('give one of --out FILE or --out-dir DIR');
  const keep = intFlag(values, 'keep', 1, BACKUP_KEEP_MAX);
  if (keep !== undefined && outDir === undefined) throw new UsageError('--keep needs --out-dir');
  // Checked before the cluster is asked: a backup with nowhere to go would be taken for nothing.
  await checkDirectory(outDir !== undefined ? resolve(outDir) : dirname(resolve(out!)));
  const target = await adminTarget({
    ...values,
    'timeout-ms': values['timeout-ms'] ?? String(BACKUP_TIMEOUT_MS_DEFAULT),
  });
  const pool = adminPool(target);
  try {
    const { value, address } = await callAnyMember(target, Number.MAX_SAFE_INTEGER, (address, deadlineAt) =>
      receiveBackup(pool, address, deadlineAt, (header) =>
        out !== undefined ? resolve(out) : join(resolve(outDir!), backupFileName(header)),
      ),
    );
    const removed = keep !== undefined ? await pruneBackups(resolve(outDir!), keep) : [];
    const m = value.manifest;
    if (target.json)
      io.out.write(
        `${JSON.stringify({ path: value.path, bytes: value.bytes, blake3: value.digest, from: address, removed, manifest: m })}\n`,
      );
    else {
      io.out.write(
        `wrote ${value.path} (${value.bytes} bytes, BLAKE3 ${value.digest}): cluster ${m.clusterId || '(none)'} at index ${m.index}, term ${m.term}, from ${m.servedBy}\n`,
      );
      for (const name of removed) io.out.write(`removed ${name} (--keep ${keep})\n`);
    }
    return EXIT_OK;
  } catch (err) {
    if (!(err instanceof AdminCallError) && !(err instanceof BackupError)) throw err;
    io.err.write(`svc backup: ${err.message}; nothing was written\n`);
    return EXIT_FAILED;
  } finally {
    pool.close();
  }
}

interface WrittenBackup {
  path: string;
  manifest: BackupManifest;
  digest: string;
  bytes: number;
}

/** receiveBackup reads one Backup stream into a new backup file; on any failure the temp file is removed. */
async function receiveBackup(
  pool: AdminClientPool,
  address: string,
  deadlineAt: number,
  outOf: (header: BackupHeader) => string,
): Promise<WrittenBackup> {
  let writer: BackupWriter | null = null;
  let received = 0;
  try {
    for await (const chunk of pool.backup(address, deadlineAt)) {
      if (writer === null) {
        if (chunk.part?.$case !== 'header')
          throw new AdminCallError(grpcStatus.INTERNAL, `${address} sent a file chunk before the backup header`);
        const header = chunk.part.value;
        writer = await BackupWriter.create(outOf(header), manifestOf(header, address));
        continue;
      }
      if (chunk.part?.$case !== 'file')
        throw new AdminCallError(grpcStatus.INTERNAL, `${address} sent a second backup header`);
      const { path, offset, data } = chunk.part.value;
      received += data.length;
      if (received > BACKUP_BYTES_MAX)
        throw new BackupError(`${address} sent more than BACKUP_BYTES_MAX (${BACKUP_BYTES_MAX}) bytes`);
      await writer.append(path, offset, data);
    }
    if (writer === null) throw new AdminCallError(grpcStatus.INTERNAL, `${address} ended the backup without a header`);
    const { digest, bytes } = await writer.commit();
    return { path: writer.out, manifest: writer.manifest, digest, bytes };
  } catch (err) {
    await writer?.abort();
    throw err;
  }
}

/** manifestOf is the file's manifest from the stream's header (checked again by BackupWriter.create). */
function manifestOf(header: BackupHeader, address: string): BackupManifest {
  if (header.files.length === 0 || header.files.length > BACKUP_FILE_COUNT_MAX)
    throw new BackupError(
      `${address}'s backup header lists ${header.files.length} files (1..${BACKUP_FILE_COUNT_MAX})`,
    );
  return {
    format: BACKUP_FORMAT,
    version: BACKUP_FORMAT_VERSION,
    index: header.index,
    term: header.term,
    clusterId: header.clusterId,
    membershipVersion: header.membershipVersion,
    roster: header.roster.map((m) => ({
      id: m.id,
      name: m.name,
      grpcAddr: m.grpcAddr,
      httpAddr: m.httpAddr,
      role: m.role,
    })),
    createdAt: new Date(header.createdAtUnixMs).toISOString(),
    buildVersion: header.buildVersion,
    servedBy: header.servedBy,
    files: header.files.map((f) => ({ path: f.path, size: f.size, blake3: toHex(f.blake3) })),
  };
}

async function checkDirectory(dir: string): Promise<void> {
  let info;
  try {
    info = await stat(dir);
  } catch (err) {
    throw new UsageError(`cannot write a backup into ${dir}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
  }
  if (!info.isDirectory()) throw new UsageError(`${dir} is not a directory`);
}

/** backupFileName names a backup in --out-dir: its creation time (UTC) and index, so names sort oldest first. */
export function backupFileName(header: { createdAtUnixMs: number; index: number }): string {
  const stamp = new Date(header.createdAtUnixMs)
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d+Z$/, 'Z');
  return `svc-backup-${stamp}-${header.index}${BACKUP_FILE_SUFFIX}`;
}

/** pruneBackups deletes all but the newest `keep` backups --out-dir named in dir; it returns the names it deleted. */
async function pruneBackups(dir: string, keep: number): Promise<string[]> {
  const names = (await readdir(dir)).filter((name) => BACKUP_NAME.test(name)).sort();
  const old = names.slice(0, Math.max(0, names.length - keep));
  for (const name of old) await rm(join(dir, name), { force: true });
  return old;
}

async function runVerify(args: string[], io: Io): Promise<number> {
  const { values, positionals } = parseFlags(args, { json: { type: 'boolean' }, help: { type: 'boolean' } }, 1);
  if (values.help === true) {
    io.out.write(`${BACKUP_USAGE}\n`);
    return EXIT_OK;
  }
  const [file] = positionals;
  if (file === undefined) throw new UsageError('backup verify needs the backup FILE');
  let backup: VerifiedBackup;
  try {
    backup = await verifyBackup(resolve(file));
  } catch (err) {
    if (!(err instanceof BackupError)) throw err;
    io.err.write(`svc backup verify: ${err.message}\n`);
    return EXIT_FAILED;
  }
  const m = backup.manifest;
  if (values.json === true) {
    io.out.write(
      `${JSON.stringify({ ok: true, path: backup.path, bytes: backup.bytes, blake3: backup.digest, manifest: m })}\n`,
    );
    return EXIT_OK;
  }
  const roster = m.roster.map((r) => `${r.name} (id ${r.id}, ${r.role})`).join(', ');
  io.out.write(
    [
      `ok: ${backup.path} (${backup.bytes} bytes, BLAKE3 ${backup.digest})`,
      `  cluster ${m.clusterId || '(none)'}, index ${m.index}, term ${m.term}`,
      `  created ${m.createdAt} by ${m.servedBy}, build ${m.buildVersion || '(unknown)'}`,
      `  roster (membership version ${m.membershipVersion}): ${roster || '(empty)'}`,
      ...m.files.map((f) => `  file ${f.path}: ${f.size} bytes, BLAKE3 ${f.blake3}`),
    ].join('\n') + '\n',
  );
  return EXIT_OK;
}
