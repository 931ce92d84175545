// An artifact directory holds the state machine's files, `meta.json` (the SnapshotMeta, itself one
// of the manifest's files, so a peer receives it hashed like any other) and `manifest.json`
// (written once, when the artifact is staged or installed; never sent, never recomputed).
import { filterProblem } from '../../engine/communities.js';
import type { MemberFilter } from '../../engine/types.js';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { SnapshotHeader } from '../../engine/rpc.js';
import type { SnapshotMeta } from '../../engine/types.js';
import { BLAKE3_DIGEST_BYTES, toHex } from './blake3.js';
import { rosterProblem } from './hard-state.js';
import type { StorageLimits } from './limits.js';
import { MANIFEST_FILE, META_FILE, pathListProblem, SnapshotError } from './snapshot-paths.js';

const MANIFEST_VERSION = 1;

export interface ManifestFile {
  path: string;
  size: number;
  /** blake3 is the file's BLAKE3 digest, lowercase hex. */
  blake3: string;
}

export interface Manifest {
  version: number;
  seq: number;
  entryTerm: number;
  /** term and leaderRegion are the header fields the artifact was staged or installed with. */
  term: number;
  leaderRegion: number;
  /** files in serving order; meta.json is one of them. */
  files: ManifestFile[];
}

/** headerOf is the SnapshotHeader that serves the artifact (needed=true, digests as bytes). */
export function headerOf(
  manifest: Manifest,
  term = manifest.term,
  leaderRegion = manifest.leaderRegion,
): SnapshotHeader {
  return {
    needed: true,
    snapshotSeq: manifest.seq,
    term,
    leaderRegion,
    files: manifest.files.map((f) => ({ path: f.path, size: f.size, blake3: Buffer.from(f.blake3, 'hex') })),
  };
}

/** manifestFromHeader turns a peer's (checked) header into the manifest the installed artifact keeps. */
export function manifestFromHeader(header: SnapshotHeader, entryTerm: number): Manifest {
  return {
    version: MANIFEST_VERSION,
    seq: header.snapshotSeq,
    entryTerm,
    term: header.term,
    leaderRegion: header.leaderRegion,
    files: header.files.map((f) => ({ path: f.path, size: f.size, blake3: toHex(f.blake3) })),
  };
}

export function newManifest(meta: SnapshotMeta, term: number, leaderRegion: number, files: ManifestFile[]): Manifest {
  return { version: MANIFEST_VERSION, seq: meta.seq, entryTerm: meta.entryTerm, term, leaderRegion, files };
}

export function encodeJson(value: unknown): Buffer {
  return Buffer.from(`${JSON.stringify(value)}\n`);
}

export async function readManifest(dir: string, limits: StorageLimits): Promise<Manifest> {
  const parsed = await readJson(join(dir, MANIFEST_FILE), limits);
  const problem = manifestProblem(parsed, limits);
  if (problem !== null) throw new SnapshotError(`${join(dir, MANIFEST_FILE)}: ${problem}`);
  return parsed as Manifest;
}

export async function readMeta(dir: string, limits: StorageLimits): Promise<SnapshotMeta> {
  const parsed = await readJson(join(dir, META_FILE), limits);
  const problem = metaProblem(parsed);
  if (problem !== null) throw new SnapshotError(`${join(dir, META_FILE)}: ${problem}`);
  return parsed as SnapshotMeta;
}

/** metaProblem checks a SnapshotMeta's shape, null when it fits. */
export function metaProblem(meta: unknown): string | null {
  if (typeof meta !== 'object' || meta === null) return 'meta is not an object';
  const m = meta as Record<string, unknown>;
  if (!isCount(m.seq) || (m.seq as number) < 1) return 'meta seq must be a positive integer';
  if (!isCount(m.entryTerm)) return 'meta entryTerm must be a non-negative integer';
  const roster = rosterProblem(m.roster);
  if (roster !== null) return `meta roster: ${roster}`;
  if (m.filter !== undefined) {
    // A filtered snapshot (docs/protocol.md, "Filtered snapshots"): the filter it was cut by, and its epoch.
    const cut = m.filter as Record<string, unknown> | null;
    if (typeof cut !== 'object' || cut === null || !isCount(cut.epoch) || (cut.epoch as number) < 1)
      return 'meta filter must name a positive epoch';
    const filter = cut.filter as MemberFilter | null;
    const bad = typeof filter === 'object' && filter !== null ? filterProblem(filter) : 'no filter';
    if (bad !== null) return `meta filter: ${bad}`;
  }
  return null;
}

function manifestProblem(value: unknown, limits: StorageLimits): string | null {
  if (typeof value !== 'object' || value === null) return 'manifest is not an object';
  const m = value as Record<string, unknown>;
  if (m.version !== MANIFEST_VERSION) return `unknown manifest version ${String(m.version)}`;
  for (const field of ['seq', 'entryTerm', 'term', 'leaderRegion'] as const) {
    if (!isCount(m[field])) return `${field} must be a non-negative integer`;
  }
  if (!Array.isArray(m.files) || m.files.length > limits.snapshotFileCountMax)
    return 'files must be an array within snapshotFileCountMax';
  for (const f of m.files as unknown[]) {
    const file = f as Record<string, unknown>;
    if (
      typeof f !== 'object' ||
      f === null ||
      typeof file.path !== 'string' ||
      !isCount(file.size) ||
      typeof file.blake3 !== 'string' ||
      !/^[0-9a-f]+$/.test(file.blake3) ||
      file.blake3.length !== 2 * BLAKE3_DIGEST_BYTES
    ) {
      return 'a file entry lacks path, size or a 32-byte hex blake3';
    }
  }
  const paths = (m.files as ManifestFile[]).map((f) => f.path);
  const pathIssue = pathListProblem(paths, limits.snapshotPathBytesMax);
  if (pathIssue !== null) return pathIssue;
  if (!paths.includes(META_FILE)) return `manifest does not list ${META_FILE}`;
  return null;
}

async function readJson(path: string, limits: StorageLimits): Promise<unknown> {
  const bytes = await readFile(path);
  if (bytes.length > limits.metaFileBytesMax)
    throw new SnapshotError(`${path} is ${bytes.length} bytes, above metaFileBytesMax`);
  try {
    return JSON.parse(bytes.toString('utf8'));
  } catch (err) {
    throw new SnapshotError(`${path} is not JSON: ${(err as Error).message}`);
  }
}

function isCount(value: unknown): boolean {
  return Number.isSafeInteger(value) && (value as number) >= 0;
}
