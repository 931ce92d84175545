// SnapshotStaging: the snapshot this node holds to serve (FetchSnapshot) and to report in a catch-up
// trailer, and whether the driver is staging a newer one. A new one is asked for once the state
// machine has applied `snapshotEntryCountThreshold` entries past the last (or past the log's base),
// one at a time; a staged or installed snapshot replaces the held one only when newer.
import type { SnapshotHeader } from './rpc.js';
import type { SnapshotMeta } from './types.js';

export interface HeldSnapshot {
  meta: SnapshotMeta;
  header: SnapshotHeader;
}

export class SnapshotStaging {
  /** staging: a stageSnapshot effect is out and its snapshotStaged not yet heard. */
  private staging = false;

  constructor(private held: HeldSnapshot | null) {}

  /** meta: the held snapshot's meta, null when none. */
  get meta(): SnapshotMeta | null {
    return this.held?.meta ?? null;
  }

  /** seq: the held snapshot's seq, 0 when none. */
  get seq(): number {
    return this.held?.meta.seq ?? 0;
  }

  /** due: none is being staged and `appliedSeq` is `threshold` entries past the held snapshot (or `baseSeq`). */
  due(appliedSeq: number, baseSeq: number, threshold: number): boolean {
    const last = this.held?.meta.seq ?? baseSeq;
    return !this.staging && appliedSeq - last >= threshold;
  }

  /** begin: a stageSnapshot effect went out. */
  begin(): void {
    this.staging = true;
  }

  /** staged: the driver staged one; it is held when newer than the one held (true), else dropped (false). */
  staged(meta: SnapshotMeta, header: SnapshotHeader): boolean {
    this.staging = false;
    if (this.held && this.held.meta.seq >= meta.seq) return false;
    this.held = { meta, header };
    return true;
  }

  /** installed: a snapshot fetched from the leader is now the state machine's; it is the one held. */
  installed(meta: SnapshotMeta, header: SnapshotHeader): void {
    this.held = { meta, header };
  }

  /** drop forgets the held snapshot (the node wipes its state to reseed). */
  drop(): void {
    this.held = null;
  }

  /** headerCovering: the held snapshot's header when it reaches `fromSeq`, null when none does. */
  headerCovering(fromSeq: number): SnapshotHeader | null {
    return this.held && this.held.meta.seq >= fromSeq ? this.held.header : null;
  }
}
