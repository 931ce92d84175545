// SimStorage is one node's disk: hard state (durable the moment it is saved),
// the WAL (appends durable only once the simulated disk syncs them, in order),
// and what a crash leaves behind (unsynced appends lost, or partly kept with a
// torn last one: recovery keeps whole entries only).
import type { Entry, HardState, SnapshotMeta } from '../engine/types.js';
import { LogView } from './log-view.js';
import type { Prng } from './prng.js';

interface PendingAppend {
  fromSeq: number;
  entries: Entry[];
  syncAtUs: number;
  /** generation: the append effect's (engine wipes), echoed in its sync notice. */
  generation: number;
}

/** Persisted is what one synced append reports to the engine (entriesPersisted). */
export interface Persisted {
  lastSeq: number;
  lastTerm: number;
  /** generation: the append's (engine/types.ts `append`), present only above 0. */
  generation?: number;
}

export class SimStorage {
  hardState: HardState | null = null;
  /** durable is what survives a crash; written also holds unsynced appends. */
  readonly durable = new LogView();
  readonly written = new LogView();
  private pending: PendingAppend[] = [];
  private lastSyncAtUs = 0;

  saveHardState(hardState: HardState): void {
    this.hardState = copyHardState(hardState);
  }

  /** append writes now and returns when the disk will have synced it (never before an earlier append). */
  append(
    fromSeq: number,
    entries: Entry[],
    nowUs: number,
    syncDelayUs: number,
    generation = 0,
  ): { error: string | null; syncAtUs: number } {
    const error = this.written.write(fromSeq, entries);
    if (error) return { error, syncAtUs: 0 };
    const syncAtUs = Math.max(this.lastSyncAtUs, nowUs + syncDelayUs);
    this.lastSyncAtUs = syncAtUs;
    this.pending.push({ fromSeq, entries, syncAtUs, generation });
    return { error: null, syncAtUs };
  }

  get pendingCount(): number {
    return this.pending.length;
  }

  /** syncDue makes durable every append whose sync time has come, oldest first. */
  syncDue(nowUs: number): Persisted[] {
    const out: Persisted[] = [];
    let done = 0;
    for (const op of this.pending) {
      if (op.syncAtUs > nowUs) break;
      done++;
      this.durable.write(op.fromSeq, op.entries);
      const persisted = persistedOf(op, this.durable);
      if (persisted) out.push(persisted);
    }
    if (done > 0) this.pending.splice(0, done);
    return out;
  }

  compact(throughSeq: number): void {
    // A compaction is covered by a snapshot of applied, hence committed, entries, which the node's
    // log (written) holds. The synced WAL may still hold an older, uncommitted version of the last
    // of them that a pending sync was about to overwrite (a deposed leader's tail, sim seed 14):
    // the snapshot replaces it, so the synced base takes the committed term, not the stale one.
    this.durable.compact(throughSeq, (seq) => this.written.termAt(seq));
    this.written.compact(throughSeq);
  }

  /**
   * installSnapshot applies Raft's rule to the WAL as part of a durable install: a suffix that
   * continues the snapshot's last entry (same seq and term) is kept, anything else is discarded.
   */
  installSnapshot(meta: SnapshotMeta): void {
    for (const view of [this.durable, this.written]) {
      const continues = view.termAt(meta.seq) === meta.entryTerm;
      const suffix = continues ? view.entries.filter((e) => e.seq > meta.seq) : [];
      view.resetTo(meta.seq, meta.entryTerm, suffix);
    }
  }

  /**
   * crash drops unsynced appends. With tornWriteProbability, a prefix of them reached the
   * platter anyway and the next one is torn: a prefix of its entries survives whole.
   */
  crash(prng: Prng, tornWriteProbability: number): { keptAppendCount: number; tornEntryCount: number } {
    let keptAppendCount = 0;
    let tornEntryCount = 0;
    if (this.pending.length > 0 && prng.chance(tornWriteProbability)) {
      keptAppendCount = prng.int(this.pending.length);
      for (let i = 0; i < keptAppendCount; i++) this.durable.write(this.pending[i]!.fromSeq, this.pending[i]!.entries);
      const torn = this.pending[keptAppendCount]!;
      tornEntryCount = torn.entries.length > 0 ? prng.int(torn.entries.length) : 0;
      this.durable.write(torn.fromSeq, torn.entries.slice(0, tornEntryCount));
    }
    this.pending = [];
    this.lastSyncAtUs = 0;
    this.written.resetTo(this.durable.base, this.durable.baseTerm, this.durable.entries);
    return { keptAppendCount, tornEntryCount };
  }

  /**
   * recover returns the durable entries that follow `snapshot` contiguously, and resets both
   * views to them. A WAL whose entry at the snapshot seq has another term does not continue
   * the snapshot, so none of it is kept.
   */
  recover(snapshot: SnapshotMeta | null): Entry[] {
    const base = snapshot?.seq ?? 0;
    const baseTerm = snapshot?.entryTerm ?? 0;
    const view = this.durable;
    const entries = view.termAt(base) === baseTerm ? view.entries.filter((e) => e.seq > base) : [];
    this.durable.resetTo(base, baseTerm, entries);
    this.written.resetTo(base, baseTerm, entries);
    this.pending = [];
    this.lastSyncAtUs = 0;
    return entries;
  }
}

function persistedOf(op: PendingAppend, durable: LogView): Persisted | null {
  if (op.entries.length > 0) {
    const last = op.entries[op.entries.length - 1]!;
    return withGeneration({ lastSeq: last.seq, lastTerm: last.term }, op.generation);
  }
  const lastSeq = op.fromSeq - 1;
  const lastTerm = durable.termAt(lastSeq);
  return lastTerm === undefined ? null : withGeneration({ lastSeq, lastTerm }, op.generation);
}

function withGeneration(persisted: Persisted, generation: number): Persisted {
  return generation > 0 ? { ...persisted, generation } : persisted;
}

export function copyHardState(h: HardState): HardState {
  return {
    ...h,
    rosterBase: h.rosterBase ? { ...h.rosterBase, members: h.rosterBase.members.map((m) => ({ ...m })) } : null,
  };
}
