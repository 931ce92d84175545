// StoreSnapshots is the store's state machine as the node's snapshot transfer sees it
// (transports/node/snapshot-transfer.ts declares that interface, SnapshotState): the state is captured at
// once, copy-on-write, and encoded later in chunks between loop turns; an installed artifact's layers are read
// back, checked to hold the state at the artifact's seq, and swapped in.
//
// What a staging writes (store/snapshot-layers.ts): when this node holds, in the same epoch, the artifact it last
// staged, installed or restored from (its basis), only a delta layer of the keys changed since, the basis's
// layers reused (hard links, their digests kept); otherwise, or when the stack would pass
// snapshotLayerCountMax layers or snapshotLayerRowsPercentMax percent of the documents in rows, the whole state
// as store.json. The basis is consumed by every capture and set again only when that staging lands on disk, so a
// failed staging (whose changed keys are gone from the next delta's count) makes the next one whole.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { MemberFilter, SnapshotFilter } from '../engine/types.js';
import { DEFAULT_STORE_LIMITS, type StoreLimits } from './limits.js';
import { cutStoreState, strayRecord, wholeStoreState } from './snapshot-cut.js';
import {
  decodeStoreDelta,
  deltaFileName,
  deltaSeqOf,
  encodeDelta,
  stackLayers,
  type StoreDelta,
} from './snapshot-layers.js';
import {
  decodeStoreSnapshot,
  encodeCapture,
  STORE_SNAPSHOT_FILE,
  type StoreState,
  type StoreStateMachine,
} from './state-machine.js';

/** ARTIFACT_META_FILE is the artifact's own meta.json (transports/storage's META_FILE), the one file not the store's. */
const ARTIFACT_META_FILE = 'meta.json';

/** ENCODE_CHUNK_ENTRY_COUNT is how many documents are encoded between yields to the event loop. */
export const ENCODE_CHUNK_ENTRY_COUNT = 2_048;

/** SnapshotArtifactAt names an artifact on disk: its directory, its name, the seq it holds and its files. */
export interface SnapshotArtifactAt {
  dir: string;
  name: string;
  meta: { seq: number; filter?: SnapshotFilter };
  manifest: { files: ReadonlyArray<{ path: string }> };
}

/** StagedFile is one file of a staging: its bytes, or the same path reused from an artifact already on disk. */
export type StagedFile = { path: string; bytes: Uint8Array } | { path: string; reuseFrom: string };

/** StoreCapture is a capture waiting to be encoded; staged tells it which artifact its files became. */
export interface StoreCapture {
  /** layerCount is how many layers the artifact will hold (1: the whole state). */
  readonly layerCount: number;
  encode(pause: () => Promise<void>): Promise<StagedFile[]>;
  staged(artifact: { name: string }): void;
}

/** Layer is one layer of the basis: its file and how many rows it holds. */
interface Layer {
  path: string;
  rowCount: number;
}

/** Basis is the artifact this node's state is known to equal at its seq, with the state machine's epoch then. */
interface Basis {
  artifactName: string;
  seq: number;
  epoch: number;
  layers: Layer[];
}

export class StoreSnapshots {
  private basis: Basis | null = null;
  /** captureCount counts captures: only the newest one's staging may become the basis. */
  private captureCount = 0;
  private readonly limits: Pick<StoreLimits, 'snapshotLayerCountMax' | 'snapshotLayerRowsPercentMax'>;

  constructor(
    private readonly stateMachine: StoreStateMachine,
    limits: Partial<Pick<StoreLimits, 'snapshotLayerCountMax' | 'snapshotLayerRowsPercentMax'>> = {},
    /** chunkEntryCount: documents encoded between pauses (tests make it small, so writes land mid-encoding). */
    private readonly chunkEntryCount = ENCODE_CHUNK_ENTRY_COUNT,
  ) {
    this.limits = {
      snapshotLayerCountMax: limits.snapshotLayerCountMax ?? DEFAULT_STORE_LIMITS.snapshotLayerCountMax,
      snapshotLayerRowsPercentMax:
        limits.snapshotLayerRowsPercentMax ?? DEFAULT_STORE_LIMITS.snapshotLayerRowsPercentMax,
    };
  }

  get appliedSeq(): number {
    return this.stateMachine.appliedSeq;
  }

  /**
   * capture holds the state now (copy-on-write) and decides whole or delta (the file's comment); encode lays it
   * out later, pausing between chunks.
   */
  capture(): StoreCapture {
    const changed = this.stateMachine.markLayer();
    const basis = this.basis;
    this.basis = null;
    this.captureCount += 1;
    const captureNumber = this.captureCount;
    const epoch = this.stateMachine.layerEpoch;
    const seq = this.stateMachine.appliedSeq;
    const becomeBasis = (artifact: { name: string }, layers: Layer[]): void => {
      if (this.captureCount === captureNumber && this.stateMachine.layerEpoch === epoch)
        this.basis = { artifactName: artifact.name, seq, epoch, layers };
    };
    if (basis !== null && this.deltaFits(basis, epoch, changed.size)) {
      const keys = [...changed];
      const capture = this.stateMachine.captureKeys(keys);
      const layers = [...basis.layers, { path: deltaFileName(seq), rowCount: keys.length }];
      return {
        layerCount: layers.length,
        encode: async (pause) => {
          const bytes = await encodeDelta(capture, basis.seq, this.chunkEntryCount, pause);
          return [
            ...basis.layers.map((layer) => ({ path: layer.path, reuseFrom: basis.artifactName })),
            { path: deltaFileName(seq), bytes },
          ];
        },
        staged: (artifact) => becomeBasis(artifact, layers),
      };
    }
    const capture = this.stateMachine.captureSnapshot();
    return {
      layerCount: 1,
      encode: async (pause) => [
        { path: STORE_SNAPSHOT_FILE, bytes: await encodeCapture(capture, this.chunkEntryCount, pause) },
      ],
      staged: (artifact) => becomeBasis(artifact, [{ path: STORE_SNAPSHOT_FILE, rowCount: capture.entryCount }]),
    };
  }

  /**
   * load reads an installed artifact's state; the function it resolves with swaps it in (watchers hear the
   * difference) and makes the artifact this node's basis. A filtered snapshot holding a record outside the
   * filter it names is refused.
   */
  async load(artifact: SnapshotArtifactAt): Promise<() => void> {
    const { state, layers } = await readStoreLayers(artifact);
    const cut = artifact.meta.filter;
    const stray = cut ? strayRecord(state, cut.filter) : null;
    if (stray !== null)
      throw new Error(`snapshot ${artifact.name}: record ${JSON.stringify(stray)} is outside the filter it was cut by`);
    return () => {
      this.stateMachine.restore(state);
      this.captureCount += 1;
      this.basis = {
        artifactName: artifact.name,
        seq: state.appliedSeq,
        epoch: this.stateMachine.layerEpoch,
        layers,
      };
    };
  }

  /**
   * cut reads a staged artifact's state and lays it out as one whole store.json: cut to `filter`'s communities
   * (snapshot-cut.ts), or with filter null all of it (a layered artifact for a binary that reads only store.json).
   */
  async cut(
    artifact: SnapshotArtifactAt,
    filter: MemberFilter | null,
  ): Promise<Array<{ path: string; bytes: Uint8Array }>> {
    const state = await loadStoreState(artifact);
    const pause = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));
    const capture = filter === null ? wholeStoreState(state) : cutStoreState(state, filter);
    return [{ path: STORE_SNAPSHOT_FILE, bytes: await encodeCapture(capture, ENCODE_CHUNK_ENTRY_COUNT, pause) }];
  }

  /** layered says whether an artifact holds delta layers over its store.json (a binary from before layers cannot read it). */
  layered(artifact: SnapshotArtifactAt): boolean {
    return artifact.manifest.files.some((file) => deltaSeqOf(file.path) !== null);
  }

  /** deltaFits says whether a delta of `changedCount` keys over `basis` stays within the layer limits. */
  private deltaFits(basis: Basis, epoch: number, changedCount: number): boolean {
    if (basis.epoch !== epoch || basis.seq >= this.stateMachine.appliedSeq) return false;
    if (basis.layers.length + 1 > this.limits.snapshotLayerCountMax) return false;
    const rowCount = basis.layers.reduce((sum, layer) => sum + layer.rowCount, 0) + changedCount;
    return rowCount * 100 <= Math.max(1, this.stateMachine.size) * this.limits.snapshotLayerRowsPercentMax;
  }
}

/** loadStoreState reads an artifact's layers and checks they hold the state at the artifact's seq. */
export async function loadStoreState(artifact: SnapshotArtifactAt): Promise<StoreState> {
  return (await readStoreLayers(artifact)).state;
}

/**
 * readStoreLayers reads store.json and the delta layers over it (in seq order), stacks them, and checks the
 * result is at the artifact's seq. Any other file but meta.json in the artifact is refused: the store owns them.
 */
async function readStoreLayers(artifact: SnapshotArtifactAt): Promise<{ state: StoreState; layers: Layer[] }> {
  const fail: (reason: string) => never = (reason) => {
    throw new Error(`snapshot ${artifact.name}: ${reason}`);
  };
  const deltaPaths: Array<{ path: string; seq: number }> = [];
  let hasBase = false;
  for (const { path } of artifact.manifest.files) {
    if (path === STORE_SNAPSHOT_FILE) hasBase = true;
    else if (path !== ARTIFACT_META_FILE) {
      const seq = deltaSeqOf(path);
      if (seq === null) fail(`${path} is not a store snapshot layer`);
      else deltaPaths.push({ path, seq });
    }
  }
  if (!hasBase) fail(`it holds no ${STORE_SNAPSHOT_FILE}`);
  deltaPaths.sort((a, b) => a.seq - b.seq);
  const decoded = decodeStoreSnapshot(await readFile(join(artifact.dir, STORE_SNAPSHOT_FILE)));
  if (!decoded.ok) fail(decoded.reason);
  const base = decoded.state;
  const layers: Layer[] = [{ path: STORE_SNAPSHOT_FILE, rowCount: base.sortedKeys.length }];
  const deltas: StoreDelta[] = [];
  for (const { path, seq } of deltaPaths) {
    const read = decodeStoreDelta(await readFile(join(artifact.dir, path)), path);
    if (!read.ok) fail(read.reason);
    const delta = read.delta;
    if (delta.appliedSeq !== seq) fail(`${path} holds the layer at seq ${delta.appliedSeq}`);
    deltas.push(delta);
    layers.push({ path, rowCount: delta.entries.length + delta.deleted.length });
  }
  const stacked = stackLayers(base, deltas);
  if (typeof stacked === 'string') fail(stacked);
  const state = stacked;
  if (state.appliedSeq !== artifact.meta.seq) {
    const top = deltaPaths.length > 0 ? deltaPaths[deltaPaths.length - 1]!.path : STORE_SNAPSHOT_FILE;
    fail(`${top} is at seq ${state.appliedSeq}, its meta says ${artifact.meta.seq}`);
  }
  return { state, layers };
}
