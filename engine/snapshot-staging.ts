// SnapshotStaging: the snapshot this node holds to serve (FetchSnapshot) and to report in a catch-up
// trailer, and whether the driver is staging a newer one. A new one is asked for once the state
// machine has applied `snapshotEntryCountThreshold` entries past the last (or past the log's base)
// and those entries' data add up to `snapshotLogBytesPercentMin` percent of the held snapshot's bytes
// (or `snapshotEntryCountMax` entries follow it whatever their bytes), one at a time; a staged or
// installed snapshot replaces the held one only when newer.
//
// Why bytes as well as entries: a staging encodes, hashes and writes the whole state, so at a fixed entry
// count its cost per write grows with the store (a 700k-key store staged ~90 MB every 100,000 writes, and
// those stagings decided bench/cluster.ts's 64-writer rows: docs/operations.md, "The c64 tail"). Asking
// for the log to have grown by a share of the snapshot keeps a staging's work per byte written under a
// constant (100 / percent bytes), whatever the store's size: Redis's auto-aof-rewrite-percentage rule.
// The price is a longer log (memory, restart replay), bounded by snapshotEntryCountMax.
import type { SnapshotHeader } from './rpc.js';
import type { EngineLimits, Entry, SnapshotMeta } from './types.js';

/** StagingLimits: the engine limits that say when a snapshot is due. */
export type StagingLimits = Pick<
  EngineLimits,
  'snapshotEntryCountThreshold' | 'snapshotEntryCountMax' | 'snapshotLogBytesPercentMin'
>;

export interface HeldSnapshot {
  meta: SnapshotMeta;
  header: SnapshotHeader;
}

export class SnapshotStaging {
  /** staging: a stageSnapshot effect is out and its snapshotStaged not yet heard. */
  private staging = false;
  /** heldBytes: the held snapshot's files' bytes, 0 when none. */
  private heldBytes: number;
  /** appliedBytes: a running total of the data bytes of the entries applied (from the held snapshot's state at start). */
  private appliedBytes: number;
  /** heldAtBytes: appliedBytes when the applied state was the held snapshot's. */
  private heldAtBytes = 0;
  /** stagingAtBytes: appliedBytes when the snapshot being staged was asked for (its state's). */
  private stagingAtBytes = 0;

  /** appliedPastHeld: the entries applied past the held snapshot (or the log's base) at start, from the log. */
  constructor(
    private held: HeldSnapshot | null,
    appliedPastHeld: readonly Entry[],
  ) {
    this.heldBytes = snapshotBytes(held);
    this.appliedBytes = dataBytes(appliedPastHeld);
  }

  /** meta: the held snapshot's meta, null when none. */
  get meta(): SnapshotMeta | null {
    return this.held?.meta ?? null;
  }

  /** seq: the held snapshot's seq, 0 when none. */
  get seq(): number {
    return this.held?.meta.seq ?? 0;
  }

  /** applied: the state machine applied `entries` (in order, past the ones before). */
  applied(entries: readonly Entry[]): void {
    this.appliedBytes += dataBytes(entries);
  }

  /**
   * due: none is being staged, `appliedSeq` is snapshotEntryCountThreshold entries past the held snapshot (or
   * `baseSeq`), and either the data applied since then is snapshotLogBytesPercentMin percent of the held
   * snapshot's bytes or snapshotEntryCountMax entries have been applied since it.
   */
  due(appliedSeq: number, baseSeq: number, limits: StagingLimits): boolean {
    if (this.staging) return false;
    const entryCount = appliedSeq - (this.held?.meta.seq ?? baseSeq);
    if (entryCount < limits.snapshotEntryCountThreshold) return false;
    if (entryCount >= limits.snapshotEntryCountMax) return true;
    return (this.appliedBytes - this.heldAtBytes) * 100 >= this.heldBytes * limits.snapshotLogBytesPercentMin;
  }

  /** begin: a stageSnapshot effect went out for the state applied now. */
  begin(): void {
    this.staging = true;
    this.stagingAtBytes = this.appliedBytes;
  }

  /** staged: the driver staged one; it is held when newer than the one held (true), else dropped (false). */
  staged(meta: SnapshotMeta, header: SnapshotHeader): boolean {
    this.staging = false;
    if (this.held && this.held.meta.seq >= meta.seq) return false;
    this.hold({ meta, header }, this.stagingAtBytes);
    return true;
  }

  /** installed: a snapshot fetched from the leader is now the state machine's; it is the one held. */
  installed(meta: SnapshotMeta, header: SnapshotHeader): void {
    this.hold({ meta, header }, this.appliedBytes);
  }

  /** drop forgets the held snapshot (the node wipes its state to reseed). */
  drop(): void {
    this.held = null;
    this.heldBytes = 0;
    this.heldAtBytes = this.appliedBytes;
  }

  private hold(held: HeldSnapshot, atBytes: number): void {
    this.held = held;
    this.heldBytes = snapshotBytes(held);
    this.heldAtBytes = atBytes;
  }

  /** headerCovering: the held snapshot's header when it reaches `fromSeq`, null when none does. */
  headerCovering(fromSeq: number): SnapshotHeader | null {
    return this.held && this.held.meta.seq >= fromSeq ? this.held.header : null;
  }
}

function snapshotBytes(held: HeldSnapshot | null): number {
  let bytes = 0;
  for (const file of held?.header.files ?? []) bytes += file.size;
  return bytes;
}

function dataBytes(entries: readonly Entry[]): number {
  let bytes = 0;
  for (const e of entries) bytes += e.data.length;
  return bytes;
}
