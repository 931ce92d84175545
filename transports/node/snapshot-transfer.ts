// SnapshotTransfer carries out the engine's snapshot effects against the disk layer:
//
// - stage: the state machine is captured at once by reference (appliedSeq = meta.seq), encoded as
//   its files in chunks that yield to the event loop (a large state must not stall the node's
//   writes), then written, hashed once and renamed into place by SnapshotStore in the background;
//   the engine hears snapshotStaged.
// - fetch: FetchSnapshot from the leader, every file verified (size, BLAKE3) and the artifact
//   renamed into place by SnapshotStore.install, the state read back, then — inside the driver's
//   queue, right before the engine hears snapshotInstalled — the state machine is swapped, unless
//   it has applied the snapshot's seq by then (snapshotFailed `stale: …`). That last step, and what
//   the engine hears, are engine/snapshot-install.ts, which the simulator runs too.
//   Any failure leaves the old state and the engine hears snapshotFailed (it pulls again).
// - serve: the staged artifact's files, read only as fast as the peer takes them.
//
// The state machine is whatever implements SnapshotState (the store's is store/snapshot-files.ts).
import type { SnapshotHeader } from '../../engine/rpc.js';
import type { MemberFilter, SnapshotFilter, SnapshotMeta } from '../../engine/types.js';
import { blake3Bytes } from '../storage/blake3.js';
import { encodeJson } from '../storage/snapshot-manifest.js';
import { META_FILE } from '../storage/snapshot-paths.js';
import { adoptSnapshot, SNAPSHOT_NOT_NEEDED } from '../../engine/snapshot-install.js';
import type { SnapshotFileChunk } from '../../proto/gen/svc/replication/v1/replication.js';
import type { PeerPool } from '../grpc/client.js';
import type { Artifact, SnapshotFileSource, SnapshotStore } from '../storage/snapshots.js';
import type { Driver, FetchSnapshotEffect } from './driver.js';

/** SnapshotState is the replicated state machine as snapshots see it. */
export interface SnapshotState {
  /** appliedSeq is the seqno of the last entry applied. */
  readonly appliedSeq: number;
  /**
   * capture holds the state now, by reference; encode lays it out as the artifact's files later (new bytes, or
   * files reused from an artifact already staged), awaiting pause between chunks; staged hears the artifact they became.
   */
  capture(): {
    encode(pause: () => Promise<void>): Promise<SnapshotFileSource[]>;
    staged?(artifact: Artifact): void;
  };
  /** load reads the state an installed artifact holds (or throws saying why it cannot); the function it resolves with swaps it in. */
  load(artifact: Artifact): Promise<() => void>;
  /**
   * cut lays out a staged artifact's state cut to a filter's communities (a filtered snapshot), or with filter
   * null the whole state as the one file a binary from before layers reads; absent = cannot.
   */
  cut?(artifact: Artifact, filter: MemberFilter | null): Promise<Array<{ path: string; bytes: Uint8Array }>>;
  /** layered says whether an artifact's state is a stack of layers (absent: never), which older binaries cannot read. */
  layered?(artifact: Artifact): boolean;
}

/** CutSnapshot is a filtered snapshot to serve: its header (its own manifest) and its files' chunks. */
export interface CutSnapshot {
  header: SnapshotHeader;
  files: AsyncIterable<SnapshotFileChunk>;
}

/** CUT_CHUNK_BYTES is the data size of one chunk of a filtered snapshot served from memory. */
export const CUT_CHUNK_BYTES = 1 << 20;

/** STAGE_ATTEMPT_COUNT_MAX bounds retries of one staging: the engine stages nothing else until it hears back. */
export const STAGE_ATTEMPT_COUNT_MAX = 3;
/** STAGE_RETRY_DELAY_MS paces those retries. */
export const STAGE_RETRY_DELAY_MS = 500;

export interface SnapshotTransferEvents {
  /** staged: the artifact on disk; writtenBytes is what this staging wrote (files reused from an earlier artifact are not). */
  staged(artifact: Artifact, elapsedMs: number, writtenBytes: number): void;
  stageFailed(meta: SnapshotMeta, err: Error, willRetry: boolean): void;
  installed(artifact: Artifact, elapsedMs: number): void;
  installFailed(reason: string): void;
}

export class SnapshotTransfer {
  private fetching: AbortController | null = null;
  /** lastCut: the newest filtered snapshot cut, hashed once, kept for the next fetch of the same artifact and filter. */
  private lastCut: { key: string; files: Array<{ path: string; bytes: Uint8Array }>; header: SnapshotHeader } | null =
    null;
  private stopped = false;
  /** inflight are the stagings and fetches still touching the disk; stop() waits for them. */
  private readonly inflight = new Set<Promise<void>>();
  private readonly retryTimers = new Set<NodeJS.Timeout>();

  constructor(
    private readonly snapshots: SnapshotStore,
    private readonly pool: PeerPool,
    private readonly stateMachine: SnapshotState,
    private readonly driver: Driver,
    private readonly events: SnapshotTransferEvents,
  ) {}

  /** stage captures the state machine now; it must be called with appliedSeq = meta.seq. */
  stage(meta: SnapshotMeta): void {
    if (this.stateMachine.appliedSeq !== meta.seq) {
      throw new Error(
        `stageSnapshot at seq ${meta.seq} while the state machine has applied ${this.stateMachine.appliedSeq}`,
      );
    }
    const capture = this.stateMachine.capture();
    const { term, id } = this.driver.liveStatus();
    this.track(this.encodeAndWrite(meta, capture, term, id));
  }

  /** fetch runs one fetchSnapshot effect to its end; a newer fetch cancels an older one. */
  fetch(effect: FetchSnapshotEffect): void {
    this.fetching?.abort();
    const controller = new AbortController();
    this.fetching = controller;
    this.track(
      this.runFetch(effect, controller).finally(() => {
        if (this.fetching === controller) this.fetching = null;
      }),
    );
  }

  /** files serves the staged artifact at snapshotSeq, or says why it cannot. */
  files(snapshotSeq: number): AsyncIterable<SnapshotFileChunk> | string {
    const artifact = this.snapshots.list().find((a) => a.meta.seq === snapshotSeq);
    if (!artifact) return `snapshot artifact at seq ${snapshotSeq} is no longer on disk; retry`;
    return this.snapshots.read(artifact);
  }

  /**
   * cutFiles serves the staged artifact at snapshotSeq cut to `cut`'s communities (serveSnapshot's filter): its
   * meta.json names the filter, every file is hashed once here (BLAKE3, the manifest the header carries), and
   * the full artifact's bytes are never served. With cut null (a caller that does not read layers) a layered
   * artifact's state is served as one whole file the same way, and any other artifact as it is on disk. A string
   * says why it cannot.
   */
  async cutFiles(
    snapshotSeq: number,
    cut: SnapshotFilter | null,
    term: number,
    leaderRegion: number,
  ): Promise<CutSnapshot | string> {
    const artifact = this.snapshots.list().find((a) => a.meta.seq === snapshotSeq);
    if (!artifact) return `snapshot artifact at seq ${snapshotSeq} is no longer on disk; retry`;
    if (cut === null && !this.stateMachine.layered?.(artifact))
      return { header: { ...artifact.header, term, leaderRegion }, files: this.snapshots.read(artifact) };
    if (!this.stateMachine.cut)
      return cut === null
        ? 'this node cannot serve a layered snapshot as one file'
        : 'member-filtered: this node cannot cut a filtered snapshot';
    const key = `${artifact.name}/${JSON.stringify(cut)}`;
    if (this.lastCut?.key !== key) {
      let files: Array<{ path: string; bytes: Uint8Array }>;
      try {
        files = await this.stateMachine.cut(artifact, cut === null ? null : cut.filter);
      } catch (err) {
        return `cannot cut snapshot ${artifact.name}: ${err instanceof Error ? err.message : String(err)}`;
      }
      const meta: SnapshotMeta = cut === null ? artifact.meta : { ...artifact.meta, filter: cut };
      const all = [{ path: META_FILE, bytes: encodeJson(meta) }, ...files];
      const manifest = [];
      for (const file of all)
        manifest.push({ path: file.path, size: file.bytes.length, blake3: Buffer.from(await blake3Bytes(file.bytes)) });
      this.lastCut = {
        key,
        files: all,
        header: { needed: true, snapshotSeq, term: 0, leaderRegion: 0, files: manifest },
      };
    }
    const made = this.lastCut!;
    return { header: { ...made.header, term, leaderRegion }, files: chunksOf(made.files, CUT_CHUNK_BYTES) };
  }

  /** stop cancels a fetch and retries, and resolves once nothing is writing to the data directory. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.fetching?.abort();
    for (const timer of this.retryTimers) clearTimeout(timer);
    this.retryTimers.clear();
    await Promise.allSettled([...this.inflight]);
  }

  private track(work: Promise<void>): void {
    this.inflight.add(work);
    void work.finally(() => this.inflight.delete(work));
  }

  private async encodeAndWrite(
    meta: SnapshotMeta,
    capture: ReturnType<SnapshotState['capture']>,
    term: number,
    leaderRegion: number,
  ): Promise<void> {
    let files: SnapshotFileSource[];
    try {
      files = await capture.encode(this.snapshots.stagingPause());
    } catch (err) {
      this.events.stageFailed(meta, err instanceof Error ? err : new Error(String(err)), false);
      return;
    }
    await this.writeStaged(meta, capture, files, term, leaderRegion, 1);
  }

  private async writeStaged(
    meta: SnapshotMeta,
    capture: ReturnType<SnapshotState['capture']>,
    files: SnapshotFileSource[],
    term: number,
    leaderRegion: number,
    attempt: number,
  ): Promise<void> {
    const startedAt = performance.now();
    if (this.stopped) return;
    try {
      const artifact = await this.snapshots.stage(meta, files, { term, leaderRegion });
      capture.staged?.(artifact);
      const writtenBytes = files.reduce((sum, file) => sum + ('bytes' in file ? file.bytes.length : 0), 0);
      this.events.staged(artifact, performance.now() - startedAt, writtenBytes);
      this.driver.submit({ type: 'snapshotStaged', meta: artifact.meta, header: artifact.header });
    } catch (err) {
      const willRetry = attempt < STAGE_ATTEMPT_COUNT_MAX && !this.stopped;
      this.events.stageFailed(meta, err instanceof Error ? err : new Error(String(err)), willRetry);
      if (willRetry) {
        const timer = setTimeout(() => {
          this.retryTimers.delete(timer);
          if (!this.stopped) this.track(this.writeStaged(meta, capture, files, term, leaderRegion, attempt + 1));
        }, STAGE_RETRY_DELAY_MS);
        this.retryTimers.add(timer);
      }
    }
  }

  private async runFetch(effect: FetchSnapshotEffect, controller: AbortController): Promise<void> {
    const { requestId } = effect;
    const startedAt = performance.now();
    const fail = (reason: string): void => {
      this.events.installFailed(reason);
      this.driver.submit({ type: 'snapshotFailed', requestId, code: 'failed', reason });
    };
    let artifact: Artifact;
    let swap: () => void;
    try {
      const parts = await this.pool.openSnapshot(effect.to, effect.request, { signal: controller.signal });
      if (!parts.header.needed) {
        this.driver.submit({ type: 'snapshotFailed', requestId, code: 'not-needed', reason: SNAPSHOT_NOT_NEEDED });
        return;
      }
      artifact = await this.snapshots.install(parts.header, parts.files, { signal: controller.signal });
      swap = await this.stateMachine.load(artifact);
    } catch (err) {
      fail(err instanceof Error ? err.message : String(err));
      return;
    }
    if (controller.signal.aborted) {
      fail('fetch cancelled');
      return;
    }
    // The swap runs inside the driver's queue, right before the engine adopts the snapshot, so no
    // apply of another step can fall between them; adoptSnapshot refuses a stale one there.
    const meta = artifact.meta;
    this.driver.submit({ type: 'snapshotInstalled', requestId, meta, header: artifact.header }, () => {
      const input = adoptSnapshot(
        requestId,
        meta,
        artifact.header,
        this.stateMachine.appliedSeq,
        () => {
          swap();
          this.events.installed(artifact, performance.now() - startedAt);
          return null;
        },
        this.driver.snapshotExpectation(),
      );
      if (input.type === 'snapshotFailed') this.events.installFailed(input.reason);
      return input;
    });
  }
}

/** chunksOf serves files held in memory as SnapshotFileChunks, file by file, `chunkBytes` at a time. */
async function* chunksOf(
  files: ReadonlyArray<{ path: string; bytes: Uint8Array }>,
  chunkBytes: number,
): AsyncGenerator<SnapshotFileChunk> {
  for (const file of files) {
    if (file.bytes.length === 0) {
      yield { path: file.path, offset: 0, data: Buffer.alloc(0), last: true };
      continue;
    }
    for (let offset = 0; offset < file.bytes.length; offset += chunkBytes) {
      const end = Math.min(offset + chunkBytes, file.bytes.length);
      yield {
        path: file.path,
        offset,
        data: Buffer.from(file.bytes.subarray(offset, end)),
        last: end === file.bytes.length,
      };
    }
  }
}
