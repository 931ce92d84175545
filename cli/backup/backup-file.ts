// The one file `svc backup` writes and `svc backup verify` / `svc restore` read: a snapshot's files and
// their BLAKE3 manifest. Layout (integers big-endian):
//
//   magic      BACKUP_MAGIC, 10 bytes ("SVCBAK\r\n\x1a\n": PNG's trick, a text-mode copy breaks it)
//   u32        the manifest's length in bytes (at most BACKUP_MANIFEST_BYTES_MAX)
//   manifest   JSON, BackupManifest: index, term, cluster id, roster, created-at, build version, and
//              each file's path, size and BLAKE3 digest
//   files      each file's bytes, in manifest order, back to back
//   blake3     32 bytes: the BLAKE3 digest of everything before it (magic, length, manifest, files)
//
// So the file's exact length follows from its first bytes: a cut file, a byte flipped anywhere, a
// wrong magic or trailing bytes are each told apart and refused. Not tar: a tar reader takes links,
// modes, long-name extensions and trailing blocks we would have to refuse one by one, and it has no
// digest; this layout has nothing to refuse but a mismatch.
import { randomBytes } from 'node:crypto';
import { open, rename, rm, stat, type FileHandle } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import { BLAKE3_DIGEST_BYTES, createBlake3Hasher, toHex, type Blake3Hasher } from '../../transports/storage/blake3.js';
import { fsyncDir, writeAll } from '../../transports/storage/durable-fs.js';
import { META_FILE, pathListProblem } from '../../transports/storage/snapshot-paths.js';
import { CLUSTER_ID } from '../../transports/grpc/peer-identity.js';
import { BACKUP_BYTES_MAX, BACKUP_FILE_COUNT_MAX } from '../../transports/admin/limits.js';
import {
  BACKUP_MANIFEST_BYTES_MAX,
  BACKUP_PATH_BYTES_MAX,
  BACKUP_READ_BUFFER_BYTES,
  BACKUP_TEXT_BYTES_MAX,
} from './limits.js';

export const BACKUP_MAGIC = Buffer.from('SVCBAK\r\n\x1a\n', 'latin1');
export const BACKUP_FORMAT = 'svc-backup';
export const BACKUP_FORMAT_VERSION = 1;
const LENGTH_BYTES = 4;

/** BackupError is a backup file that cannot be trusted (or written), with what is wrong in its message. */
export class BackupError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'BackupError';
  }
}

export interface BackupMember {
  id: number;
  name: string;
  grpcAddr: string;
  httpAddr: string;
  /** role is voter, learner or removed. */
  role: string;
}

export interface BackupFileEntry {
  path: string;
  size: number;
  /** blake3 is the file's BLAKE3 digest, lowercase hex. */
  blake3: string;
}

export interface BackupManifest {
  format: typeof BACKUP_FORMAT;
  version: typeof BACKUP_FORMAT_VERSION;
  /** index is the seqno of the last entry the state includes; every entry up to it was committed. */
  index: number;
  /** term is the answering member's term at the capture. */
  term: number;
  clusterId: string;
  membershipVersion: number;
  roster: BackupMember[];
  /** createdAt is the answering member's wall clock at the capture (ISO 8601, UTC). */
  createdAt: string;
  buildVersion: string;
  servedBy: string;
  files: BackupFileEntry[];
}

/** VerifiedBackup is a backup file whose every digest and length checked out. */
export interface VerifiedBackup {
  path: string;
  manifest: BackupManifest;
  /** digest is the whole-file BLAKE3 (the trailer), hex. */
  digest: string;
  bytes: number;
  /** offsets[i] is where manifest.files[i]'s bytes start in the file. */
  offsets: number[];
}

// ---------------------------------------------------------------- writing

/**
 * BackupWriter writes a backup into a temp file beside `out` (file bytes as they arrive, each file and
 * the whole hashed on the way) and, on commit, checks every file arrived whole with its digest, appends
 * the trailer, fsyncs, renames onto `out` and fsyncs the directory. abort() removes the temp file.
 */
export class BackupWriter {
  private fileIndex = 0;
  private fileOffset = 0;
  private fileHasher: Blake3Hasher | null = null;
  private done = false;

  private constructor(
    readonly out: string,
    private readonly tempPath: string,
    private readonly handle: FileHandle,
    private readonly whole: Blake3Hasher,
    readonly manifest: BackupManifest,
  ) {}

  static async create(out: string, manifest: BackupManifest): Promise<BackupWriter> {
    const problem = manifestProblem(manifest);
    if (problem !== null) throw new BackupError(`cannot write this backup: ${problem}`);
    const target = resolve(out);
    const tempPath = join(dirname(target), `.${basename(target)}.tmp-${randomBytes(6).toString('hex')}`);
    const handle = await open(tempPath, 'wx', 0o600);
    const writer = new BackupWriter(target, tempPath, handle, await createBlake3Hasher(), manifest);
    try {
      const json = Buffer.from(JSON.stringify(manifest));
      const length = Buffer.alloc(LENGTH_BYTES);
      length.writeUInt32BE(json.length);
      await writer.put(Buffer.concat([BACKUP_MAGIC, length, json]));
      writer.fileHasher = await createBlake3Hasher();
      await writer.skipEmptyFiles();
    } catch (err) {
      await writer.abort();
      throw err;
    }
    return writer;
  }

  /** append takes the next bytes of file `path` at `offset`: files in manifest order, each from 0, no gaps. */
  async append(path: string, offset: number, data: Uint8Array): Promise<void> {
    const file = this.manifest.files[this.fileIndex];
    if (!file) throw new BackupError(`got bytes of ${JSON.stringify(path)} after the last file`);
    if (path !== file.path || offset !== this.fileOffset)
      throw new BackupError(
        `expected ${JSON.stringify(file.path)} at offset ${this.fileOffset}, got ${JSON.stringify(path)} at ${offset}`,
      );
    if (offset + data.length > file.size) throw new BackupError(`${file.path} runs past its size ${file.size} bytes`);
    this.fileHasher!.update(data);
    await this.put(data);
    this.fileOffset += data.length;
    if (this.fileOffset === file.size) await this.closeFile();
  }

  /** commit finishes the file and renames it onto `out`; it throws (and removes the temp file) when anything is missing or wrong. */
  async commit(): Promise<{ digest: string; bytes: number }> {
    try {
      if (this.fileIndex < this.manifest.files.length) {
        const file = this.manifest.files[this.fileIndex]!;
        throw new BackupError(`the stream ended inside ${file.path} (${this.fileOffset} of ${file.size} bytes)`);
      }
      const digest = this.whole.digest();
      await writeAll(this.handle, digest);
      await this.handle.sync();
      const { size } = await this.handle.stat();
      await this.handle.close();
      this.done = true;
      await rename(this.tempPath, this.out);
      await fsyncDir(dirname(this.out));
      return { digest: toHex(digest), bytes: size };
    } catch (err) {
      await this.abort();
      throw err;
    }
  }

  async abort(): Promise<void> {
    if (!this.done) {
      this.done = true;
      await this.handle.close().catch(() => undefined);
    }
    await rm(this.tempPath, { force: true });
  }

  private async put(bytes: Uint8Array): Promise<void> {
    this.whole.update(bytes);
    await writeAll(this.handle, bytes);
  }

  private async closeFile(): Promise<void> {
    const file = this.manifest.files[this.fileIndex]!;
    const digest = toHex(this.fileHasher!.digest());
    if (digest !== file.blake3)
      throw new BackupError(`${file.path}: received bytes have BLAKE3 ${digest}, the header says ${file.blake3}`);
    this.fileIndex += 1;
    this.fileOffset = 0;
    this.fileHasher = await createBlake3Hasher();
    await this.skipEmptyFiles();
  }

  private async skipEmptyFiles(): Promise<void> {
    // Bounded by the file list: each pass closes one empty file.
    while (this.fileIndex < this.manifest.files.length && this.manifest.files[this.fileIndex]!.size === 0)
      await this.closeFile();
  }
}

// ---------------------------------------------------------------- reading

/**
 * verifyBackup reads a backup file end to end: magic, manifest (shape and limits), exact length, each
 * file's BLAKE3 and the whole file's. It throws BackupError saying what is wrong, and reads nothing twice.
 */
export async function verifyBackup(path: string): Promise<VerifiedBackup> {
  const handle = await openForReading(path);
  try {
    const { size } = await handle.stat();
    const head = await readExactly(handle, 0, Math.min(size, BACKUP_MAGIC.length + LENGTH_BYTES), path);
    if (head.length < BACKUP_MAGIC.length || !head.subarray(0, BACKUP_MAGIC.length).equals(BACKUP_MAGIC))
      throw new BackupError(
        `${path} is not an svc backup (wrong magic: it does not start with ${JSON.stringify(BACKUP_MAGIC.toString('latin1'))})`,
      );
    if (head.length < BACKUP_MAGIC.length + LENGTH_BYTES)
      throw new BackupError(`${path} is truncated: ${size} bytes, it ends inside its header`);
    const manifestBytes = head.readUInt32BE(BACKUP_MAGIC.length);
    if (manifestBytes > BACKUP_MANIFEST_BYTES_MAX)
      throw new BackupError(
        `${path}: its manifest claims ${manifestBytes} bytes, above BACKUP_MANIFEST_BYTES_MAX (${BACKUP_MANIFEST_BYTES_MAX})`,
      );
    const filesAt = head.length + manifestBytes;
    if (size < filesAt) throw new BackupError(`${path} is truncated: ${size} bytes, it ends inside its manifest`);
    const manifestJson = await readExactly(handle, head.length, manifestBytes, path);
    let parsed: unknown;
    try {
      parsed = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(manifestJson));
    } catch (err) {
      throw new BackupError(`${path}: its manifest is not JSON (${(err as Error).message}): the file is damaged`);
    }
    const problem = manifestProblem(parsed);
    if (problem !== null) throw new BackupError(`${path}: bad manifest: ${problem}`);
    const manifest = parsed as BackupManifest;
    const offsets: number[] = [];
    let expected = filesAt;
    for (const file of manifest.files) {
      offsets.push(expected);
      expected += file.size;
    }
    expected += BLAKE3_DIGEST_BYTES;
    if (size < expected)
      throw new BackupError(`${path} is truncated: ${size} bytes, its manifest makes it ${expected}`);
    if (size > expected)
      throw new BackupError(
        `${path} has ${size - expected} bytes past its end (${size} bytes, its manifest makes it ${expected})`,
      );

    const whole = await createBlake3Hasher();
    whole.update(head);
    whole.update(manifestJson);
    const buffer = Buffer.allocUnsafe(BACKUP_READ_BUFFER_BYTES);
    for (const [i, file] of manifest.files.entries()) {
      const hasher = await createBlake3Hasher();
      // Bounded by the file's size: each pass reads the next buffer of it.
      for (let done = 0; done < file.size;) {
        const want = Math.min(buffer.length, file.size - done);
        const { bytesRead } = await handle.read(buffer, 0, want, offsets[i]! + done);
        if (bytesRead === 0) throw new BackupError(`${path} is truncated: it ends inside ${file.path}`);
        const bytes = buffer.subarray(0, bytesRead);
        hasher.update(bytes);
        whole.update(bytes);
        done += bytesRead;
      }
      const digest = toHex(hasher.digest());
      if (digest !== file.blake3)
        throw new BackupError(
          `${path}: ${file.path} has BLAKE3 ${digest}, the manifest says ${file.blake3}: the file is damaged`,
        );
    }
    const trailer = await readExactly(handle, expected - BLAKE3_DIGEST_BYTES, BLAKE3_DIGEST_BYTES, path);
    const digest = toHex(whole.digest());
    if (digest !== toHex(trailer))
      throw new BackupError(
        `${path}: the whole-file BLAKE3 is ${digest}, its trailer says ${toHex(trailer)}: the file is damaged`,
      );
    return { path, manifest, digest, bytes: size, offsets };
  } finally {
    await handle.close();
  }
}

/**
 * readBackupFile reads one file of a verified backup into memory (at most BACKUP_BYTES_MAX) and checks its
 * digest again: the backup may have changed since it was verified.
 */
export async function readBackupFile(backup: VerifiedBackup, index: number): Promise<Buffer> {
  const file = backup.manifest.files[index];
  if (!file) throw new BackupError(`no file ${index} in ${backup.path}`);
  const handle = await openForReading(backup.path);
  try {
    const bytes = await readExactly(handle, backup.offsets[index]!, file.size, backup.path);
    const hasher = await createBlake3Hasher();
    hasher.update(bytes);
    if (toHex(hasher.digest()) !== file.blake3)
      throw new BackupError(`${backup.path}: ${file.path} changed since it was verified`);
    return bytes;
  } finally {
    await handle.close();
  }
}

async function openForReading(path: string): Promise<FileHandle> {
  try {
    const info = await stat(path);
    if (!info.isFile()) throw new BackupError(`${path} is not a file`);
    return await open(path, 'r');
  } catch (err) {
    if (err instanceof BackupError) throw err;
    throw new BackupError(`cannot read ${path}: ${(err as Error).message}`);
  }
}

async function readExactly(handle: FileHandle, position: number, length: number, path: string): Promise<Buffer> {
  const buffer = Buffer.alloc(length);
  // Bounded by length: each pass reads more of it, or the file ends (truncated).
  for (let done = 0; done < length;) {
    const { bytesRead } = await handle.read(buffer, done, length - done, position + done);
    if (bytesRead === 0) throw new BackupError(`${path} is truncated: it ends at byte ${position + done}`);
    done += bytesRead;
  }
  return buffer;
}

// ---------------------------------------------------------------- the manifest's shape

const ROLES = new Set(['voter', 'learner', 'removed']);

/** manifestProblem says why a value is not a BackupManifest this build reads, null when it is one. */
export function manifestProblem(value: unknown): string | null {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return 'not an object';
  const m = value as Record<string, unknown>;
  if (m.format !== BACKUP_FORMAT) return `format is ${JSON.stringify(m.format)}, not ${BACKUP_FORMAT}`;
  if (m.version !== BACKUP_FORMAT_VERSION)
    return `format version ${JSON.stringify(m.version)} (this build reads ${BACKUP_FORMAT_VERSION})`;
  if (!isCount(m.index) || (m.index as number) < 1) return 'index must be a positive integer';
  for (const field of ['term', 'membershipVersion'] as const)
    if (!isCount(m[field])) return `${field} must be a non-negative integer`;
  if (typeof m.clusterId !== 'string' || (m.clusterId !== '' && !CLUSTER_ID.test(m.clusterId)))
    return 'clusterId must be a cluster id (or empty, from a plaintext cluster)';
  for (const field of ['createdAt', 'buildVersion', 'servedBy'] as const)
    if (typeof m[field] !== 'string' || Buffer.byteLength(m[field] as string) > BACKUP_TEXT_BYTES_MAX)
      return `${field} must be a string of at most ${BACKUP_TEXT_BYTES_MAX} bytes`;
  if (Number.isNaN(Date.parse(m.createdAt as string))) return 'createdAt must be an ISO 8601 time';
  if (!Array.isArray(m.roster)) return 'roster must be an array';
  for (const member of m.roster as unknown[]) {
    const r = member as Record<string, unknown>;
    if (
      typeof member !== 'object' ||
      member === null ||
      !isCount(r.id) ||
      typeof r.name !== 'string' ||
      typeof r.grpcAddr !== 'string' ||
      typeof r.httpAddr !== 'string' ||
      !ROLES.has(r.role as string)
    )
      return 'a roster member lacks id, name, grpcAddr, httpAddr or a role (voter, learner, removed)';
  }
  if (!Array.isArray(m.files) || m.files.length === 0 || m.files.length > BACKUP_FILE_COUNT_MAX)
    return `files must list 1..${BACKUP_FILE_COUNT_MAX} files`;
  let total = 0;
  for (const entry of m.files as unknown[]) {
    const f = entry as Record<string, unknown>;
    if (
      typeof entry !== 'object' ||
      entry === null ||
      typeof f.path !== 'string' ||
      !isCount(f.size) ||
      typeof f.blake3 !== 'string' ||
      !/^[0-9a-f]+$/.test(f.blake3) ||
      f.blake3.length !== 2 * BLAKE3_DIGEST_BYTES
    )
      return 'a file entry lacks path, size or a 32-byte hex blake3';
    total += f.size as number;
  }
  if (total > BACKUP_BYTES_MAX)
    return `its files add up to ${total} bytes, above BACKUP_BYTES_MAX (${BACKUP_BYTES_MAX})`;
  const paths = (m.files as BackupFileEntry[]).map((f) => f.path);
  const pathIssue = pathListProblem(paths, BACKUP_PATH_BYTES_MAX);
  if (pathIssue !== null) return `file paths: ${pathIssue}`;
  if (paths.includes(META_FILE)) return `${META_FILE} is the restored artifact's own; a backup may not carry one`;
  return null;
}

function isCount(value: unknown): boolean {
  return Number.isSafeInteger(value) && (value as number) >= 0;
}
