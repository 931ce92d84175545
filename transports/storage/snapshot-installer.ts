// receiveArtifactFiles writes a peer's SnapshotFileChunks into a fresh directory, checking as they
// arrive: files in manifest order, offsets contiguous, sizes exact, BLAKE3 streamed and compared at
// each file's last chunk. Any mismatch throws; the caller removes the directory.
import { open, type FileHandle } from 'node:fs/promises';
import { dirname, resolve, sep } from 'node:path';
import type { SnapshotHeader } from '../../engine/rpc.js';
import type { SnapshotFileChunk } from '../../proto/gen/svc/replication/v1/replication.js';
import { BLAKE3_DIGEST_BYTES, createBlake3Hasher, OffThreadBlake3, toHex } from './blake3.js';
import { makeDirsUnder, writeAll } from './durable-fs.js';
import type { StorageLimits } from './limits.js';
import { META_FILE, pathListProblem, SnapshotError } from './snapshot-paths.js';

/** headerProblem checks a peer's header before anything is written, null when it is acceptable. */
export function headerProblem(header: SnapshotHeader, limits: StorageLimits): string | null {
  if (typeof header !== 'object' || header === null) return 'header is not an object';
  if (header.needed !== true) return 'header says no snapshot is needed';
  if (!Number.isSafeInteger(header.snapshotSeq) || header.snapshotSeq < 1)
    return 'snapshot_seq must be a positive integer';
  if (!Number.isSafeInteger(header.term) || header.term < 0) return 'term must be a non-negative integer';
  if (!Number.isSafeInteger(header.leaderRegion) || header.leaderRegion < 0)
    return 'leader_region must be a non-negative integer';
  if (!Array.isArray(header.files)) return 'files must be a list';
  if (header.files.length > limits.snapshotFileCountMax)
    return `header lists ${header.files.length} files, above snapshotFileCountMax (${limits.snapshotFileCountMax})`;
  for (const f of header.files) {
    if (typeof f !== 'object' || f === null) return 'a file entry is not an object';
    if (!Number.isSafeInteger(f.size) || f.size < 0 || f.size > limits.snapshotFileBytesMax)
      return `${String(f.path)}: size must be 0..snapshotFileBytesMax`;
    if (!(f.blake3 instanceof Uint8Array) || f.blake3.length !== BLAKE3_DIGEST_BYTES)
      return `${String(f.path)}: blake3 must be ${BLAKE3_DIGEST_BYTES} bytes`;
  }
  const paths = header.files.map((f) => f.path);
  const pathIssue = pathListProblem(paths, limits.snapshotPathBytesMax);
  if (pathIssue !== null) return pathIssue;
  if (!paths.includes(META_FILE)) return `header does not list ${META_FILE}`;
  return null;
}

/** FileHasher hashes one file, on this thread or in the install's hash worker. */
interface FileHasher {
  update(bytes: Uint8Array): void;
  /** settle waits until what is in flight is within the hash-ahead bound. */
  settle(): Promise<void>;
  digest(): Promise<Uint8Array>;
}

interface OpenFile {
  handle: FileHandle;
  hasher: FileHasher;
  written: number;
  /** writes still running, oldest first, with their sizes: the next chunk arrives while they land. */
  pending: Array<{ done: Promise<void>; bytes: number }>;
  pendingBytes: number;
  /** the background fdatasync running, if any; at most one at a time. */
  syncing: Promise<void> | null;
  /** bytes handed to writes since the last background fdatasync started. */
  unsyncedBytes: number;
}

/** syncBehind starts a background fdatasync; a previous one still running is waited for first, so a slow disk slows the stream. */
async function syncBehind(file: OpenFile): Promise<void> {
  if (file.syncing !== null) await file.syncing;
  file.unsyncedBytes = 0;
  const syncing = file.handle.datasync();
  file.syncing = syncing;
  syncing.then(
    () => {
      if (file.syncing === syncing) file.syncing = null;
    },
    () => undefined,
  ); // failures surface through awaitSync
}

/** awaitSync waits for the background fdatasync, rethrowing its failure. */
async function awaitSync(file: OpenFile): Promise<void> {
  const syncing = file.syncing;
  file.syncing = null;
  if (syncing !== null) await syncing;
}

/** settleWrites waits for every write in flight; the first failure is thrown once all have ended. */
async function settleWrites(file: OpenFile): Promise<void> {
  const pending = file.pending.splice(0);
  file.pendingBytes = 0;
  const outcomes = await Promise.allSettled(pending.map((p) => p.done));
  const failed = outcomes.find((o): o is PromiseRejectedResult => o.status === 'rejected');
  if (failed) throw failed.reason;
}

/**
 * receiveArtifactFiles consumes `chunks` into `dir` (which must exist and be empty). It returns the
 * directories it created (for the caller to fsync) once every listed file arrived whole and verified.
 */
export async function receiveArtifactFiles(
  dir: string,
  header: SnapshotHeader,
  chunks: AsyncIterable<SnapshotFileChunk>,
  limits: StorageLimits,
  signal?: AbortSignal,
): Promise<string[]> {
  const files = header.files;
  const known = new Set(files.map((f) => f.path));
  const createdDirs = new Set<string>();
  const root = resolve(dir);
  let index = 0;
  let current: OpenFile | null = null;
  let worker: OffThreadBlake3 | null = null;
  const hasherFor = async (size: number): Promise<FileHasher> => {
    if (size < limits.snapshotHashOffThreadBytesMin) {
      const inline = await createBlake3Hasher();
      return {
        update: (b) => inline.update(b),
        settle: () => Promise.resolve(),
        digest: () => Promise.resolve(inline.digest()),
      };
    }
    worker ??= OffThreadBlake3.start();
    const w = worker;
    return {
      update: (b) => w.update(b),
      settle: () => w.waitInFlightAtMost(limits.snapshotHashAheadBytesMax),
      digest: () => w.digest(),
    };
  };
  const iterator = chunks[Symbol.asyncIterator]();
  try {
    for (;;) {
      const step = await nextOrAbort(iterator, signal);
      if (step.done) break;
      const chunk = step.value;
      const problem = chunkShapeProblem(chunk, limits);
      if (problem !== null) throw new SnapshotError(problem);
      const file = files[index];
      if (file === undefined)
        throw new SnapshotError(`extra chunk for ${JSON.stringify(chunk.path)} after the last listed file`);
      if (chunk.path !== file.path) {
        throw new SnapshotError(
          known.has(chunk.path)
            ? `chunk for ${JSON.stringify(chunk.path)} out of manifest order (expected ${JSON.stringify(file.path)})`
            : `chunk for unknown path ${JSON.stringify(chunk.path)}`,
        );
      }
      if (current === null) {
        const target = resolve(root, file.path);
        if (!target.startsWith(root + sep))
          throw new SnapshotError(`path ${JSON.stringify(file.path)} escapes the artifact`);
        await makeDirsUnder(root, dirname(target), createdDirs);
        current = {
          handle: await open(target, 'wx'),
          hasher: await hasherFor(file.size),
          written: 0,
          pending: [],
          pendingBytes: 0,
          syncing: null,
          unsyncedBytes: 0,
        };
      }
      if (chunk.offset !== current.written)
        throw new SnapshotError(`${file.path}: chunk at offset ${chunk.offset}, expected ${current.written}`);
      if (current.written + chunk.data.length > file.size)
        throw new SnapshotError(`${file.path}: more than its ${file.size} bytes`);
      // The write runs in the thread pool while this chunk is hashed and the next one arrives;
      // at most snapshotWriteAheadBytesMax are in flight, so a slow disk slows the stream.
      const done = writeAll(current.handle, chunk.data, current.written);
      done.catch(() => undefined); // observed by settleWrites
      current.pending.push({ done, bytes: chunk.data.length });
      current.pendingBytes += chunk.data.length;
      current.hasher.update(chunk.data);
      current.written += chunk.data.length;
      current.unsyncedBytes += chunk.data.length;
      await current.hasher.settle();
      while (current.pendingBytes > limits.snapshotWriteAheadBytesMax) {
        const oldest = current.pending.shift()!;
        current.pendingBytes -= oldest.bytes;
        await oldest.done;
      }
      if (!chunk.last) {
        if (current.unsyncedBytes >= limits.snapshotSyncEveryBytes) await syncBehind(current);
        continue;
      }
      await settleWrites(current);
      await awaitSync(current);
      if (current.written !== file.size)
        throw new SnapshotError(`${file.path}: ended at ${current.written} bytes, the header says ${file.size}`);
      const digest = await current.hasher.digest();
      if (toHex(digest) !== toHex(file.blake3))
        throw new SnapshotError(`${file.path}: BLAKE3 mismatch (got ${toHex(digest)}, header ${toHex(file.blake3)})`);
      await current.handle.sync();
      await current.handle.close();
      current = null;
      index++;
    }
    if (current !== null)
      throw new SnapshotError(
        `stream ended inside ${files[index]!.path} at ${current.written} of ${files[index]!.size} bytes`,
      );
    if (index < files.length)
      throw new SnapshotError(
        `stream ended before ${files.length - index} listed file(s), first ${JSON.stringify(files[index]!.path)}`,
      );
    return [...createdDirs];
  } catch (err) {
    // Stop the producer too (closes a gRPC stream or a file reader); not awaited, since a stalled
    // producer would hold return() behind its pending next().
    void iterator.return?.()?.catch(() => undefined);
    throw err;
  } finally {
    if (current !== null) {
      await settleWrites(current).catch(() => undefined);
      await awaitSync(current).catch(() => undefined);
      await current.handle.close().catch(() => undefined);
    }
    if (worker !== null) await (worker as OffThreadBlake3).close();
  }
}

function chunkShapeProblem(chunk: SnapshotFileChunk, limits: StorageLimits): string | null {
  if (typeof chunk !== 'object' || chunk === null) return 'chunk is not an object';
  if (typeof chunk.path !== 'string') return 'chunk path must be a string';
  if (!Number.isSafeInteger(chunk.offset) || chunk.offset < 0)
    return `${chunk.path}: chunk offset must be a non-negative integer`;
  if (!(chunk.data instanceof Uint8Array)) return `${chunk.path}: chunk data must be bytes`;
  if (chunk.data.length > limits.snapshotChunkBytesMax)
    return `${chunk.path}: chunk of ${chunk.data.length} bytes, above snapshotChunkBytesMax (${limits.snapshotChunkBytesMax})`;
  if (typeof chunk.last !== 'boolean') return `${chunk.path}: chunk last must be a boolean`;
  return null;
}

function nextOrAbort<T>(iterator: AsyncIterator<T>, signal: AbortSignal | undefined): Promise<IteratorResult<T>> {
  if (signal === undefined) return iterator.next();
  if (signal.aborted) return Promise.reject(new SnapshotError(`install aborted: ${String(signal.reason)}`));
  return new Promise((resolvePromise, reject) => {
    const onAbort = (): void => reject(new SnapshotError(`install aborted: ${String(signal.reason)}`));
    signal.addEventListener('abort', onAbort, { once: true });
    iterator.next().then(
      (r) => {
        signal.removeEventListener('abort', onAbort);
        resolvePromise(r);
      },
      (e: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(e instanceof Error ? e : new Error(String(e)));
      },
    );
  });
}
