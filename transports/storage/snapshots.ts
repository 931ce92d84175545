// SnapshotStore owns `<data>/snapshots/`: one directory per artifact, named `<seq>-<entryTerm>`,
// built in a dot-named temp directory and renamed into place (then the parent directory synced),
// so a crash leaves whole artifacts or none. Dot-named leftovers are removed on open.
//
// Which artifact is current: the newest by (seq, entryTerm). Installing a peer's artifact deletes
// any local artifact newer than it: the node has adopted the peer's history, and a restart must
// not come back on the abandoned one.
import { randomBytes } from 'node:crypto';
import { link, mkdir, open, rename, stat } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { SnapshotHeader } from '../../engine/rpc.js';
import type { SnapshotMeta } from '../../engine/types.js';
import { snapshotMetaProblem } from '../../engine/snapshot-install.js';
import type { SnapshotFileChunk } from '../../proto/gen/svc/replication/v1/replication.js';
import { blake3File, createBlake3Hasher, toHex } from './blake3.js';
import { fsyncDir, isNotFound, listDir, makeDirsUnder, removeTree, writeAll, writeFileDurable } from './durable-fs.js';
import { DEFAULT_STORAGE_LIMITS, type StorageLimits } from './limits.js';
import { pacedPause } from './loop-pacer.js';
import { headerProblem, receiveArtifactFiles } from './snapshot-installer.js';
import {
  encodeJson,
  headerOf,
  manifestFromHeader,
  metaProblem,
  newManifest,
  readManifest,
  readMeta,
  type Manifest,
  type ManifestFile,
} from './snapshot-manifest.js';
import { readArtifactChunks } from './snapshot-reader.js';
import { MANIFEST_FILE, META_FILE, pathListProblem, SnapshotError } from './snapshot-paths.js';

export const SNAPSHOTS_DIR = 'snapshots';
const ARTIFACT_NAME = /^(\d+)-(\d+)$/;

/** Artifact is one complete snapshot on disk. */
export interface Artifact {
  name: string;
  dir: string;
  meta: SnapshotMeta;
  manifest: Manifest;
  /** header serves the artifact; the engine overrides term and leaderRegion with its own. */
  header: SnapshotHeader;
}

/**
 * SnapshotFileSource is one state-machine file to stage: its bytes, a file to copy them from, or the same path of
 * an artifact already in this store (`reuseFrom`, its name), hard-linked with its manifest entry (size, BLAKE3)
 * kept: a layered state machine stages only its new layer and reuses the ones below.
 */
export type SnapshotFileSource =
  { path: string; bytes: Uint8Array } | { path: string; sourcePath: string } | { path: string; reuseFrom: string };

export interface StageOptions {
  /** term and leaderRegion fill the returned header (the stager's current term and member id). */
  term: number;
  leaderRegion: number;
}

export class SnapshotStore {
  private artifacts: Artifact[];
  private readonly readers = new Map<string, number>();
  /** Stage, install and prune run one at a time: each renames and deletes in the same directory. */
  private chain: Promise<unknown> = Promise.resolve();

  private constructor(
    readonly dir: string,
    private readonly limits: StorageLimits,
    artifacts: Artifact[],
    /** problems lists artifact directories that could not be read (skipped, not deleted). */
    readonly problems: string[],
  ) {
    this.artifacts = artifacts;
  }

  static async open(dataDir: string, limits: StorageLimits = DEFAULT_STORAGE_LIMITS): Promise<SnapshotStore> {
    const dir = join(dataDir, SNAPSHOTS_DIR);
    await mkdir(dir, { recursive: true });
    const artifacts: Artifact[] = [];
    const problems: string[] = [];
    let removedLeftovers = false;
    for (const name of await listDir(dir)) {
      if (name.startsWith('.')) {
        await removeTree(join(dir, name));
        removedLeftovers = true;
        continue;
      }
      if (!ARTIFACT_NAME.test(name)) continue;
      try {
        artifacts.push(await loadArtifact(dir, name, limits));
      } catch (err) {
        problems.push(`${name}: ${(err as Error).message}`);
      }
    }
    if (removedLeftovers) await fsyncDir(dir);
    return new SnapshotStore(dir, limits, sortNewestFirst(artifacts), problems);
  }

  /** newest is the artifact a restarting node restores from, null when there is none. */
  newest(): Artifact | null {
    return this.artifacts[0] ?? null;
  }

  /** stagingPause is the pause between pieces of a staging's work on the loop, paced to its share of the loop. */
  stagingPause(): () => Promise<void> {
    return pacedPause(this.limits.snapshotStageLoopSharePercent);
  }

  /** list returns the artifacts, newest first. */
  list(): Artifact[] {
    return [...this.artifacts];
  }

  /**
   * stage writes the state machine's files and meta.json into a new artifact, hashing each file
   * once as it is written, and returns the artifact (its header has needed=true).
   */
  stage(meta: SnapshotMeta, files: readonly SnapshotFileSource[], options: StageOptions): Promise<Artifact> {
    return this.exclusive(async () => {
      checkStageInput(meta, files, this.limits);
      const temp = join(this.dir, `.staging-${meta.seq}-${meta.entryTerm}-${randomBytes(6).toString('hex')}`);
      await mkdir(temp);
      try {
        const createdDirs = new Set<string>();
        const pause = this.stagingPause();
        const manifestFiles: ManifestFile[] = [
          await this.writeStagedFile(temp, META_FILE, encodeJson(meta), createdDirs, pause),
        ];
        for (const file of files) {
          manifestFiles.push(
            'bytes' in file
              ? await this.writeStagedFile(temp, file.path, file.bytes, createdDirs, pause)
              : 'reuseFrom' in file
                ? await this.reuseStagedFile(temp, file.path, file.reuseFrom, createdDirs)
                : await this.copyStagedFile(temp, file.path, file.sourcePath, createdDirs),
          );
        }
        const manifest = newManifest(meta, options.term, options.leaderRegion, manifestFiles);
        const artifact = await this.publish(temp, manifest, meta, [...createdDirs]);
        await this.pruneNow();
        return artifact;
      } catch (err) {
        await removeTree(temp);
        throw err;
      }
    });
  }

  /**
   * install receives a peer's artifact (header, then chunks) into a temp directory, verifies every
   * file, then swaps it into place. On any failure the temp directory is removed and the existing
   * artifacts are untouched. It resolves with the installed artifact (meta read from its meta.json).
   */
  install(
    header: SnapshotHeader,
    chunks: AsyncIterable<SnapshotFileChunk>,
    options: { signal?: AbortSignal } = {},
  ): Promise<Artifact> {
    return this.exclusive(async () => {
      const problem = headerProblem(header, this.limits);
      if (problem !== null) throw new SnapshotError(`bad snapshot header: ${problem}`);
      const temp = join(this.dir, `.install-${header.snapshotSeq}-${randomBytes(6).toString('hex')}`);
      await mkdir(temp);
      try {
        const createdDirs = await receiveArtifactFiles(temp, header, chunks, this.limits, options.signal);
        const meta = await readMeta(temp, this.limits).catch((err: Error) => {
          throw new SnapshotError(`bad ${META_FILE}: ${err.message}`);
        });
        const metaProblem = snapshotMetaProblem(meta, header);
        if (metaProblem !== null) throw new SnapshotError(metaProblem);
        const artifact = await this.publish(temp, manifestFromHeader(header, meta.entryTerm), meta, createdDirs);
        await this.deleteNewerThan(artifact);
        await this.pruneNow();
        return artifact;
      } catch (err) {
        await removeTree(temp);
        throw err;
      }
    });
  }

  /**
   * read serves an artifact as chunks of snapshotChunkBytes, in manifest order. While it is being
   * read, prune leaves the artifact alone.
   */
  async *read(artifact: Artifact, chunkBytes = this.limits.snapshotChunkBytes): AsyncGenerator<SnapshotFileChunk> {
    this.readers.set(artifact.name, (this.readers.get(artifact.name) ?? 0) + 1);
    try {
      yield* readArtifactChunks(artifact.dir, artifact.manifest, chunkBytes);
    } finally {
      const left = (this.readers.get(artifact.name) ?? 1) - 1;
      if (left === 0) this.readers.delete(artifact.name);
      else this.readers.set(artifact.name, left);
    }
  }

  /** verify rehashes an artifact's files against its manifest; it returns the first problem, null when whole. */
  async verify(artifact: Artifact): Promise<string | null> {
    for (const file of artifact.manifest.files) {
      try {
        const { digest, size } = await blake3File(join(artifact.dir, file.path), this.limits.snapshotChunkBytes);
        if (size !== file.size) return `${file.path}: ${size} bytes, the manifest says ${file.size}`;
        if (toHex(digest) !== file.blake3) return `${file.path}: BLAKE3 mismatch`;
      } catch (err) {
        return `${file.path}: ${(err as Error).message}`;
      }
    }
    return null;
  }

  /** prune deletes all but the newest snapshotRetainCount artifacts (skipping ones being read); it returns their names. */
  prune(): Promise<string[]> {
    return this.exclusive(() => this.pruneNow());
  }

  private async pruneNow(): Promise<string[]> {
    const doomed = this.artifacts.slice(this.limits.snapshotRetainCount).filter((a) => !this.readers.has(a.name));
    return this.deleteArtifacts(doomed);
  }

  private async deleteNewerThan(installed: Artifact): Promise<void> {
    const newer = this.artifacts.filter((a) => compareArtifacts(a, installed) < 0);
    await this.deleteArtifacts(newer);
  }

  private async deleteArtifacts(doomed: Artifact[]): Promise<string[]> {
    if (doomed.length === 0) return [];
    const names = new Set(doomed.map((a) => a.name));
    this.artifacts = this.artifacts.filter((a) => !names.has(a.name));
    for (const artifact of doomed) {
      // Renamed away first, so a crash mid-delete leaves a dot-named leftover, not half an artifact.
      const trash = join(this.dir, `.trash-${artifact.name}-${randomBytes(6).toString('hex')}`);
      await rename(artifact.dir, trash);
      await fsyncDir(this.dir);
      await removeTree(trash);
    }
    return [...names];
  }

  /** publish writes the manifest, syncs every directory and renames the artifact into place. */
  private async publish(
    temp: string,
    manifest: Manifest,
    meta: SnapshotMeta,
    createdDirs: string[],
  ): Promise<Artifact> {
    await writeFileDurable(join(temp, MANIFEST_FILE), encodeJson(manifest));
    // Deepest first, so each directory's entry is durable in its (still unsynced) parent.
    for (const d of [...createdDirs].sort((a, b) => b.length - a.length)) await fsyncDir(d);
    await fsyncDir(temp);
    const name = `${meta.seq}-${meta.entryTerm}`;
    const dir = join(this.dir, name);
    const replaced = await exists(dir);
    const trash = join(this.dir, `.trash-${name}-${randomBytes(6).toString('hex')}`);
    if (replaced) await rename(dir, trash);
    await rename(temp, dir);
    await fsyncDir(this.dir);
    if (replaced) await removeTree(trash);
    const artifact: Artifact = { name, dir, meta, manifest, header: headerOf(manifest) };
    this.artifacts = sortNewestFirst([...this.artifacts.filter((a) => a.name !== name), artifact]);
    return artifact;
  }

  private async writeStagedFile(
    temp: string,
    path: string,
    bytes: Uint8Array,
    createdDirs: Set<string>,
    pause: () => Promise<void>,
  ): Promise<ManifestFile> {
    const target = join(temp, path);
    await makeDirsUnder(temp, dirname(target), createdDirs);
    const hasher = await createBlake3Hasher();
    // Written and hashed a chunk per loop turn: a staged store.json of 100k keys is ~13 MB, and one update() over
    // it held the loop 13-18 ms (bench/snapshot-encode.ts). An fdatasync every snapshotStageSyncEveryBytes bounds
    // the file's dirty pages: on ext4 (data=ordered) the WAL's own fdatasync commits the journal, which may write
    // out another file's dirty data first, so one 13 MB flush at the end would hold the WAL's syncs behind it.
    const handle = await open(target, 'wx');
    try {
      const chunkBytes = this.limits.snapshotChunkBytes;
      let unsyncedBytes = 0;
      for (let at = 0; at < bytes.length; at += chunkBytes) {
        // Paced like the encoding before it (storageLimits.snapshotStageLoopSharePercent); the wait counts the
        // chunk's write and sync too, which spreads the file's flushes out beside the WAL's.
        if (at > 0) await pause();
        const chunk = bytes.subarray(at, at + chunkBytes);
        const written = writeAll(handle, chunk);
        // Handled here so a failed write is not an unhandled rejection if the hash throws; awaited below all the same.
        written.catch(() => undefined);
        hasher.update(chunk);
        await written;
        unsyncedBytes += chunk.length;
        if (unsyncedBytes >= this.limits.snapshotStageSyncEveryBytes) {
          await handle.datasync();
          unsyncedBytes = 0;
        }
      }
      await handle.sync();
    } finally {
      await handle.close();
    }
    return { path, size: bytes.length, blake3: toHex(hasher.digest()) };
  }

  /**
   * reuseStagedFile hard-links `path` of the artifact named `from` into the new one and returns that artifact's
   * manifest entry for it: no byte is read, written or hashed (the file was hashed when it was staged or
   * installed, and a link shares its inode, so it cannot change under one name alone). Where the file system
   * refuses a hard link the file is copied, and the copy's digest must match the entry.
   */
  private async reuseStagedFile(
    temp: string,
    path: string,
    from: string,
    createdDirs: Set<string>,
  ): Promise<ManifestFile> {
    const source = this.artifacts.find((a) => a.name === from);
    if (!source) throw new SnapshotError(`cannot stage ${path}: the artifact it reuses, ${from}, is gone`);
    const entry = source.manifest.files.find((f) => f.path === path);
    if (!entry) throw new SnapshotError(`cannot stage ${path}: artifact ${from} holds no such file`);
    const target = join(temp, path);
    await makeDirsUnder(temp, dirname(target), createdDirs);
    try {
      await link(join(source.dir, path), target);
      return { ...entry };
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code !== 'EXDEV' && code !== 'EPERM' && code !== 'ENOTSUP' && code !== 'EMLINK') throw err;
    }
    const copied = await this.copyStagedFile(temp, path, join(source.dir, path), createdDirs);
    if (copied.size !== entry.size || copied.blake3 !== entry.blake3)
      throw new SnapshotError(`cannot stage ${path}: its copy from ${from} does not match that artifact's manifest`);
    return copied;
  }

  /** copyStagedFile streams a source file into the artifact, hashing the same buffers it writes. */
  private async copyStagedFile(
    temp: string,
    path: string,
    sourcePath: string,
    createdDirs: Set<string>,
  ): Promise<ManifestFile> {
    const target = join(temp, path);
    await makeDirsUnder(temp, dirname(target), createdDirs);
    const hasher = await createBlake3Hasher();
    const source = await open(sourcePath, 'r');
    try {
      const out = await open(target, 'wx');
      try {
        const buffer = Buffer.allocUnsafe(this.limits.snapshotChunkBytes);
        let size = 0;
        for (;;) {
          const { bytesRead } = await source.read(buffer, 0, buffer.length, null);
          if (bytesRead === 0) break;
          const chunk = buffer.subarray(0, bytesRead);
          hasher.update(chunk);
          await writeAll(out, chunk);
          size += bytesRead;
        }
        await out.sync();
        return { path, size, blake3: toHex(hasher.digest()) };
      } finally {
        await out.close();
      }
    } finally {
      await source.close();
    }
  }

  private exclusive<T>(run: () => Promise<T>): Promise<T> {
    const result = this.chain.then(run);
    this.chain = result.catch(() => undefined);
    return result;
  }
}

function checkStageInput(meta: SnapshotMeta, files: readonly SnapshotFileSource[], limits: StorageLimits): void {
  const problem = metaProblem(meta);
  if (problem !== null) throw new SnapshotError(`cannot stage: ${problem}`);
  if (files.length + 1 > limits.snapshotFileCountMax)
    throw new SnapshotError(
      `cannot stage ${files.length} files: above snapshotFileCountMax (${limits.snapshotFileCountMax})`,
    );
  const paths = files.map((f) => f.path);
  if (paths.includes(META_FILE))
    throw new SnapshotError(`cannot stage: ${META_FILE} is reserved for the snapshot's meta`);
  const pathIssue = pathListProblem([META_FILE, ...paths], limits.snapshotPathBytesMax);
  if (pathIssue !== null) throw new SnapshotError(`cannot stage: ${pathIssue}`);
  for (const file of files) {
    const given = [
      'bytes' in file && file.bytes instanceof Uint8Array,
      'sourcePath' in file && typeof file.sourcePath === 'string',
      'reuseFrom' in file && typeof file.reuseFrom === 'string',
    ].filter(Boolean).length;
    if (given !== 1)
      throw new SnapshotError(`cannot stage ${file.path}: give exactly one of bytes, sourcePath or reuseFrom`);
  }
}

async function loadArtifact(dir: string, name: string, limits: StorageLimits): Promise<Artifact> {
  const artifactDir = join(dir, name);
  const manifest = await readManifest(artifactDir, limits);
  const meta = await readMeta(artifactDir, limits);
  if (`${meta.seq}-${meta.entryTerm}` !== name || manifest.seq !== meta.seq || manifest.entryTerm !== meta.entryTerm) {
    throw new Error(
      `name, manifest (${manifest.seq}-${manifest.entryTerm}) and meta (${meta.seq}-${meta.entryTerm}) disagree`,
    );
  }
  return { name, dir: artifactDir, meta, manifest, header: headerOf(manifest) };
}

/** compareArtifacts orders newest first: higher seq, then higher entryTerm. */
function compareArtifacts(a: Artifact, b: Artifact): number {
  return b.meta.seq - a.meta.seq || b.meta.entryTerm - a.meta.entryTerm;
}

function sortNewestFirst(artifacts: Artifact[]): Artifact[] {
  return artifacts.sort(compareArtifacts);
}

async function exists(path: string): Promise<boolean> {
  try {
    await stat(path);
    return true;
  } catch (err) {
    if (isNotFound(err)) return false;
    throw err;
  }
}
