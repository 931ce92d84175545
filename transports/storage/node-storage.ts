// openNodeStorage is a node's start-up read of its data directory:
//
//   <data>/LOCK                    one node process at a time (data-dir-lock.ts)
//   <data>/hard-state.json         HardState (hard-state.ts)
//   <data>/wal/<index>.wal         the log (wal.ts)
//   <data>/snapshots/<seq>-<term>/ artifacts (snapshots.ts)
//
// It recovers each part and builds the engine's RestoredState from them.
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { emptyRestoredState } from '../../engine/restored.js';
import type { Entry, RestoredState, SnapshotMeta } from '../../engine/types.js';
import { acquireDataDirLock } from './data-dir-lock.js';
import { HardStateStore } from './hard-state.js';
import { storageLimits, type StorageLimits } from './limits.js';
import { SnapshotStore } from './snapshots.js';
import { Wal, type TornTail } from './wal.js';

export const WAL_DIR = 'wal';

export interface NodeStorage {
  dataDir: string;
  limits: StorageLimits;
  hardStateStore: HardStateStore;
  wal: Wal;
  snapshots: SnapshotStore;
  /** restored is what the engine starts from. */
  restored: RestoredState;
  /** fresh is true when no hard state was ever saved here. */
  fresh: boolean;
  /**
   * corruption says why the log cannot be trusted (damage before the WAL's tail, or a gap between
   * the snapshot and the log), null when it can. The node should latch its reseed marker, reset the
   * WAL and install a snapshot from a peer; restored.entries then hold only what precedes the damage.
   */
  corruption: string | null;
  /** tornTail is an unsynced write cut on open (normal after a crash). */
  tornTail: TornTail | null;
  /** droppedDivergentTail is true when the WAL held the snapshot's seq with another term, so its tail was not returned. */
  droppedDivergentTail: boolean;
  /** snapshotProblems lists artifact directories that could not be read. */
  snapshotProblems: string[];
  close(): Promise<void>;
}

export async function openNodeStorage(dataDir: string, overrides: Partial<StorageLimits> = {}): Promise<NodeStorage> {
  const limits = storageLimits(overrides);
  await mkdir(dataDir, { recursive: true });
  const lock = await acquireDataDirLock(dataDir);
  try {
    return await openLocked(dataDir, limits, lock.release);
  } catch (err) {
    await lock.release();
    throw err;
  }
}

async function openLocked(
  dataDir: string,
  limits: StorageLimits,
  releaseLock: () => Promise<void>,
): Promise<NodeStorage> {
  const hardStateStore = new HardStateStore(dataDir, limits);
  const savedHardState = await hardStateStore.load();
  const snapshots = await SnapshotStore.open(dataDir, limits);
  const opened = await Wal.open(join(dataDir, WAL_DIR), limits);
  const newest = snapshots.newest();
  const tail = entriesAfterSnapshot(opened.entries, newest?.meta ?? null);
  const corruption =
    opened.corruption !== null
      ? `WAL ${opened.corruption.segment} at byte ${opened.corruption.offset}: ${opened.corruption.reason}`
      : tail.gap;

  const restored: RestoredState = {
    ...emptyRestoredState(),
    hardState: savedHardState ?? emptyRestoredState().hardState,
    snapshot: newest?.meta ?? null,
    snapshotHeader: newest?.header ?? null,
    entries: tail.entries,
    appliedSeq: newest?.meta.seq ?? 0,
  };
  return {
    dataDir,
    limits,
    hardStateStore,
    wal: opened.wal,
    snapshots,
    restored,
    fresh: savedHardState === null,
    corruption,
    tornTail: opened.tornTail,
    droppedDivergentTail: tail.droppedDivergentTail,
    snapshotProblems: snapshots.problems,
    close: async () => {
      try {
        await opened.wal.close();
      } finally {
        await releaseLock();
      }
    },
  };
}

/**
 * entriesAfterSnapshot keeps the log's entries past the snapshot. Raft's install rule: if the log
 * holds the snapshot's seq with a different term, everything after it is another history and goes.
 * A log that resumes past snapshot.seq + 1 has lost entries: that is reported as a gap.
 */
export function entriesAfterSnapshot(
  walEntries: Entry[],
  snapshot: SnapshotMeta | null,
): { entries: Entry[]; gap: string | null; droppedDivergentTail: boolean } {
  const baseSeq = snapshot?.seq ?? 0;
  const first = walEntries[0];
  if (
    snapshot !== null &&
    first !== undefined &&
    first.seq <= baseSeq &&
    walEntries[walEntries.length - 1]!.seq >= baseSeq
  ) {
    const atBase = walEntries[baseSeq - first.seq]!;
    if (atBase.term !== snapshot.entryTerm) return { entries: [], gap: null, droppedDivergentTail: true };
  }
  const entries = walEntries.filter((e) => e.seq > baseSeq);
  if (entries.length > 0 && entries[0]!.seq !== baseSeq + 1) {
    return {
      entries: [],
      gap: `the WAL resumes at seq ${entries[0]!.seq} but the snapshot ends at ${baseSeq}: entries between are missing`,
      droppedDivergentTail: false,
    };
  }
  return { entries, gap: null, droppedDivergentTail: false };
}
