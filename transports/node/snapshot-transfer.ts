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
import type { SnapshotMeta } from '../../engine/types.js';
import { adoptSnapshot, SNAPSHOT_NOT_NEEDED } from '../../engine/snapshot-install.js';
import type { SnapshotFileChunk } from '../../proto/gen/svc/replication/v1/replication.js';
import type { PeerPool } from '../grpc/client.js';
import type { Artifact, SnapshotStore } from '../storage/snapshots.js';
import type { Driver, FetchSnapshotEffect } from './driver.js';

/** SnapshotState is the replicated state machine as snapshots see it. */
export interface SnapshotState {
  /** appliedSeq is the seqno of the last entry applied. */
  readonly appliedSeq: number;
  /** capture holds the state now, by reference; encode lays it out as the artifact's files later, awaiting pause between chunks. */
  capture(): { encode(pause: () => Promise<void>): Promise<Array<{ path: string; bytes: Uint8Array }>> };
  /** load reads the state an installed artifact holds (or throws saying why it cannot); the function it resolves with swaps it in. */
  load(artifact: Artifact): Promise<() => void>;
}

/** STAGE_ATTEMPT_COUNT_MAX bounds retries of one staging: the engine stages nothing else until it hears back. */
export const STAGE_ATTEMPT_COUNT_MAX = 3;
/** STAGE_RETRY_DELAY_MS paces those retries. */
export const STAGE_RETRY_DELAY_MS = 500;

const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

export interface SnapshotTransferEvents {
  staged(meta: SnapshotMeta, elapsedMs: number): void;
  stageFailed(meta: SnapshotMeta, err: Error, willRetry: boolean): void;
  installed(artifact: Artifact, elapsedMs: number): void;
  installFailed(reason: string): void;
}

export class SnapshotTransfer {
  private fetching: AbortController | null = null;
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
    let files: Array<{ path: string; bytes: Uint8Array }>;
    try {
      files = await capture.encode(nextTurn);
    } catch (err) {
      this.events.stageFailed(meta, err instanceof Error ? err : new Error(String(err)), false);
      return;
    }
    await this.writeStaged(meta, files, term, leaderRegion, 1);
  }

  private async writeStaged(
    meta: SnapshotMeta,
    files: Array<{ path: string; bytes: Uint8Array }>,
    term: number,
    leaderRegion: number,
    attempt: number,
  ): Promise<void> {
    const startedAt = performance.now();
    if (this.stopped) return;
    try {
      const artifact = await this.snapshots.stage(meta, files, { term, leaderRegion });
      this.events.staged(meta, performance.now() - startedAt);
      this.driver.submit({ type: 'snapshotStaged', meta: artifact.meta, header: artifact.header });
    } catch (err) {
      const willRetry = attempt < STAGE_ATTEMPT_COUNT_MAX && !this.stopped;
      this.events.stageFailed(meta, err instanceof Error ? err : new Error(String(err)), willRetry);
      if (willRetry) {
        const timer = setTimeout(() => {
          this.retryTimers.delete(timer);
          if (!this.stopped) this.track(this.writeStaged(meta, files, term, leaderRegion, attempt + 1));
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
