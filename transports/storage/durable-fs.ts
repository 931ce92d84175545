// Small helpers for writes that must survive a crash: a file's bytes are only durable after an
// fsync of the file, and its name (create, rename, unlink) only after an fsync of its directory.
import { writeSync } from 'node:fs';
import { mkdir, open, rename, rm, readdir } from 'node:fs/promises';
import { dirname, join, sep } from 'node:path';

/** fsyncDir makes the directory's entries (creates, renames, unlinks) durable. */
export async function fsyncDir(dir: string): Promise<void> {
  const handle = await open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/**
 * writeFileAtomic replaces `path` with `bytes` so that a crash leaves either the old or the new
 * content, never a mix: temp file, fsync, rename, fsync the directory.
 */
export async function writeFileAtomic(dir: string, name: string, bytes: Uint8Array, mode = 0o644): Promise<void> {
  const tempPath = join(dir, `${name}.tmp`);
  const handle = await open(tempPath, 'w', mode);
  try {
    await writeAll(handle, bytes);
    await handle.sync();
  } finally {
    await handle.close();
  }
  await rename(tempPath, join(dir, name));
  await fsyncDir(dir);
}

/** writeFileDurable writes a new file and fsyncs it (its directory entry is the caller's to sync). */
export async function writeFileDurable(path: string, bytes: Uint8Array): Promise<void> {
  const handle = await open(path, 'wx');
  try {
    await writeAll(handle, bytes);
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/**
 * writeAllSync writes every byte at `position` on the calling thread. For a small write into the
 * page cache this costs microseconds, where the thread-pool round trip of an async write costs a
 * loop turn (milliseconds on a busy machine); callers keep it for small writes.
 */
export function writeAllSync(fd: number, bytes: Uint8Array, position: number): void {
  let offset = 0;
  while (offset < bytes.length) offset += writeSync(fd, bytes, offset, bytes.length - offset, position + offset);
}

/** writeAll loops until every byte is written: a single write may be short. */
export async function writeAll(
  handle: { write(b: Uint8Array, o: number, l: number, p?: number | null): Promise<{ bytesWritten: number }> },
  bytes: Uint8Array,
  position: number | null = null,
): Promise<void> {
  let offset = 0;
  while (offset < bytes.length) {
    const { bytesWritten } = await handle.write(
      bytes,
      offset,
      bytes.length - offset,
      position === null ? null : position + offset,
    );
    if (bytesWritten <= 0) throw new Error(`write made no progress at byte ${offset} of ${bytes.length}`);
    offset += bytesWritten;
  }
}

/** removeTree deletes a directory tree; a missing tree is not an error. */
export async function removeTree(path: string): Promise<void> {
  await rm(path, { recursive: true, force: true });
}

/** listDir lists a directory's names, [] when it does not exist. */
export async function listDir(dir: string): Promise<string[]> {
  try {
    return await readdir(dir);
  } catch (err) {
    if (isNotFound(err)) return [];
    throw err;
  }
}

export function isNotFound(err: unknown): boolean {
  return typeof err === 'object' && err !== null && (err as { code?: unknown }).code === 'ENOENT';
}

/**
 * makeDirsUnder creates `dir` (inside `root`) and records in `created` every directory it may
 * have made, so the caller can fsync them before publishing.
 */
export async function makeDirsUnder(root: string, dir: string, created: Set<string>): Promise<void> {
  if (dir === root || created.has(dir)) return;
  await mkdir(dir, { recursive: true });
  for (let d = dir; d !== root && d.startsWith(root + sep); d = dirname(d)) created.add(d);
}
