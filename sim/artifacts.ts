// Snapshot artifacts: the files a staged snapshot is made of (meta.json and
// state.json), their BLAKE3 hashes computed once at staging, verification on
// install, and each node's store that keeps only the newest few.
import type { SnapshotFilter, SnapshotMeta } from '../engine/types.js';
import type { SnapshotHeader } from '../engine/rpc.js';
import { blake3Of } from './blake3-memo.js';
import { SIM_LIMITS } from './limits.js';
import { restrictStateJson } from './state-machine.js';

export interface Artifact {
  meta: SnapshotMeta;
  header: SnapshotHeader;
  /** files in manifest order. */
  files: Map<string, Uint8Array>;
  origin: 'staged' | 'installed';
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();
export const META_FILE = 'meta.json';
export const STATE_FILE = 'state.json';

/** captureArtifact freezes a state machine's state as files and hashes each file once. */
export function captureArtifact(meta: SnapshotMeta, stateJson: string, term: number, leaderRegion: number): Artifact {
  const files = new Map<string, Uint8Array>([
    [META_FILE, encoder.encode(JSON.stringify(meta))],
    [STATE_FILE, encoder.encode(stateJson)],
  ]);
  const header: SnapshotHeader = {
    needed: true,
    snapshotSeq: meta.seq,
    term,
    leaderRegion,
    files: [...files].map(([path, bytes]) => ({ path, size: bytes.length, blake3: Buffer.from(blake3Of(bytes)) })),
  };
  return { meta, header, files, origin: 'staged' };
}

/**
 * cutArtifact: the filtered snapshot a leader serves a filtered member (engine serveSnapshot's `filter`): the
 * state cut to its communities, meta.json naming the filter, its own manifest hashed once; seq, entry term and
 * roster those of the full one. Null when the artifact's state cannot be read.
 */
export function cutArtifact(artifact: Artifact, cut: SnapshotFilter): Artifact | null {
  const state = restrictStateJson(readStateText(artifact.files) ?? '', cut.filter);
  if (state === null) return null;
  const meta: SnapshotMeta = { ...artifact.meta, filter: cut };
  return captureArtifact(meta, state, artifact.header.term, artifact.header.leaderRegion);
}

/** verifyFiles checks the manifest against the files: same paths, sizes and BLAKE3; null = good. */
export function verifyFiles(header: SnapshotHeader, files: ReadonlyMap<string, Uint8Array>): string | null {
  if (header.files.length !== files.size) return `manifest lists ${header.files.length} files, ${files.size} arrived`;
  for (const entry of header.files) {
    const bytes = files.get(entry.path);
    if (!bytes) return `file ${entry.path} is missing`;
    if (bytes.length !== entry.size) return `file ${entry.path} has ${bytes.length} bytes, manifest says ${entry.size}`;
    if (!sameBytes(blake3Of(bytes), entry.blake3)) return `file ${entry.path} fails its BLAKE3 check`;
  }
  return null;
}

/** readMeta parses meta.json; null when it is missing or malformed. */
export function readMeta(files: ReadonlyMap<string, Uint8Array>): SnapshotMeta | null {
  const bytes = files.get(META_FILE);
  if (!bytes) return null;
  try {
    const meta = JSON.parse(decoder.decode(bytes)) as SnapshotMeta;
    if (
      typeof meta.seq !== 'number' ||
      typeof meta.entryTerm !== 'number' ||
      typeof meta.roster !== 'object' ||
      meta.roster === null
    )
      return null;
    const cut = meta.filter as Partial<SnapshotFilter> | undefined | null;
    if (
      cut !== undefined &&
      (typeof cut !== 'object' ||
        cut === null ||
        typeof cut.epoch !== 'number' ||
        typeof cut.filter !== 'object' ||
        cut.filter === null)
    )
      return null;
    return meta;
  } catch {
    return null;
  }
}

export function readStateText(files: ReadonlyMap<string, Uint8Array>): string | null {
  const bytes = files.get(STATE_FILE);
  return bytes ? decoder.decode(bytes) : null;
}

export function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  // The checkers mostly compare an entry's bytes with themselves (the log's own entry objects): no walk then.
  if (a === b) return true;
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** ArtifactStore is one node's snapshot directory; artifacts are files, so they survive crashes. */
export class ArtifactStore {
  private artifacts: Artifact[] = [];
  /** cuts: the filtered snapshots served from the held ones, each cut and hashed once (by seq, term and filter). */
  private cuts = new Map<string, Artifact>();

  constructor(private readonly retainCountMax: number = SIM_LIMITS.artifactRetainCountMax) {}

  add(artifact: Artifact): void {
    this.cuts.clear();
    this.artifacts = this.artifacts.filter(
      (a) => a.meta.seq !== artifact.meta.seq || a.header.term !== artifact.header.term,
    );
    this.artifacts.push(artifact);
    this.artifacts.sort((a, b) => a.meta.seq - b.meta.seq);
    if (this.artifacts.length > this.retainCountMax)
      this.artifacts.splice(0, this.artifacts.length - this.retainCountMax);
  }

  /**
   * install adds an artifact fetched from the leader and deletes any held one newer than it, as the node's
   * SnapshotStore.install does (transports/storage/snapshots.ts deleteNewerThan): those hold a state the install
   * replaced, which a restart, loading the newest artifact, would otherwise restore (sim --filtered 4 seed 874:
   * n6 installed a full snapshot at 300 after a wipe and restarted into its filtered one at 301).
   */
  install(artifact: Artifact): void {
    const { seq, entryTerm } = artifact.meta;
    this.artifacts = this.artifacts.filter(
      (a) => a.meta.seq < seq || (a.meta.seq === seq && a.meta.entryTerm <= entryTerm),
    );
    this.add(artifact);
  }

  /** list: the artifacts held, oldest first. */
  list(): readonly Artifact[] {
    return this.artifacts;
  }

  newest(): Artifact | undefined {
    return this.artifacts[this.artifacts.length - 1];
  }

  get count(): number {
    return this.artifacts.length;
  }

  /** cutFor: `artifact` cut to `cut`'s communities (cutArtifact), made once per artifact and filter. */
  cutFor(artifact: Artifact, cut: SnapshotFilter): Artifact | null {
    const key = `${artifact.meta.seq}/${artifact.header.term}/${JSON.stringify(cut)}`;
    let made = this.cuts.get(key);
    if (made === undefined) {
      const fresh = cutArtifact(artifact, cut);
      if (fresh === null) return null;
      made = fresh;
      this.cuts.set(key, made);
    }
    return made;
  }

  /** forHeader finds the artifact a served header names: same seq and the same manifest hashes. */
  forHeader(header: SnapshotHeader): Artifact | undefined {
    return this.artifacts.find(
      (a) =>
        a.meta.seq === header.snapshotSeq &&
        a.header.files.length === header.files.length &&
        a.header.files.every(
          (f, i) => f.path === header.files[i]!.path && sameBytes(f.blake3, header.files[i]!.blake3),
        ),
    );
  }
}
