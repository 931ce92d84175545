// Every limit of the disk layer has a name and a default here; a node overrides them by name.

/** StorageLimits bound what the disk layer writes, reads and accepts from a peer. */
export interface StorageLimits {
  /** walSegmentBytesMax rolls the WAL to a new segment file once the next record would not fit. */
  walSegmentBytesMax: number;
  /** walRecordBytesMax bounds one WAL record (an entry's data plus its header); larger appends are refused. */
  walRecordBytesMax: number;
  /** walBatchBytesMax bounds the bytes one group-commit round writes before its single fdatasync. */
  walBatchBytesMax: number;
  /**
   * walInlineWriteBytesMax: a group-commit round at most this big is written on the event loop
   * (a page-cache copy) instead of through the thread pool; only its fdatasync goes to the pool.
   */
  walInlineWriteBytesMax: number;
  /** walQueuedBytesMax bounds appends waiting for a group commit; beyond it append() refuses. */
  walQueuedBytesMax: number;
  /** snapshotChunkBytes is the data size of one SnapshotFileChunk served to a peer. */
  snapshotChunkBytes: number;
  /** snapshotChunkBytesMax bounds one chunk accepted from a peer. */
  snapshotChunkBytesMax: number;
  /** snapshotWriteAheadBytesMax bounds an installing artifact's bytes received but not yet written. */
  snapshotWriteAheadBytesMax: number;
  /**
   * snapshotSyncEveryBytes starts a background fdatasync of an installing file each time this many
   * more bytes were written, one at a time: the kernel would otherwise hold the whole file dirty
   * (a tenth of RAM) and the final fsync would write all of it while the stream stands still.
   */
  snapshotSyncEveryBytes: number;
  /**
   * snapshotStageSyncEveryBytes: a file being staged is fdatasynced each time this many more bytes were written,
   * so no single flush of it holds the disk (and the WAL's fdatasync, which may have to write it out) for long.
   */
  snapshotStageSyncEveryBytes: number;
  /**
   * snapshotStageLoopSharePercent: a staging's encoding and its files' writing keep to about this share of the event
   * loop, waiting between pieces (loop-pacer.ts), so members staging together do not stall writes for a burst; 100
   * is one loop turn between pieces. The staging takes about 100 / share times as long.
   */
  snapshotStageLoopSharePercent: number;
  /** files of an install at least this big are hashed in a worker thread, off the receiving event loop. */
  snapshotHashOffThreadBytesMin: number;
  /** snapshotHashAheadBytesMax bounds an installing file's bytes sent to the hash worker but not yet hashed. */
  snapshotHashAheadBytesMax: number;
  /** snapshotRetainCount keeps this many newest artifacts; older ones are deleted. */
  snapshotRetainCount: number;
  /** snapshotFileCountMax bounds the files one artifact (and one peer's header) may list. */
  snapshotFileCountMax: number;
  /** snapshotFileBytesMax bounds one file's size in a peer's header. */
  snapshotFileBytesMax: number;
  /** snapshotPathBytesMax bounds one relative path in an artifact. */
  snapshotPathBytesMax: number;
  /** hardStateBytesMax bounds the hard-state file read back on open. */
  hardStateBytesMax: number;
  /** metaFileBytesMax bounds an artifact's meta.json and manifest.json read back. */
  metaFileBytesMax: number;
}

const MiB = 1024 * 1024;

export const DEFAULT_STORAGE_LIMITS: StorageLimits = {
  walSegmentBytesMax: 64 * MiB,
  // Above the engine's segmentPayloadBytesMax (4 MiB), so anything the engine ships fits in one record.
  walRecordBytesMax: 16 * MiB,
  walBatchBytesMax: 8 * MiB,
  walInlineWriteBytesMax: 256 * 1024,
  walQueuedBytesMax: 256 * MiB,
  snapshotChunkBytes: 1 * MiB,
  snapshotChunkBytesMax: 4 * MiB,
  snapshotWriteAheadBytesMax: 8 * MiB,
  snapshotSyncEveryBytes: 32 * MiB,
  snapshotStageSyncEveryBytes: 4 * MiB,
  snapshotStageLoopSharePercent: 50,
  snapshotHashOffThreadBytesMin: 4 * MiB,
  snapshotHashAheadBytesMax: 8 * MiB,
  snapshotRetainCount: 2,
  snapshotFileCountMax: 10_000,
  snapshotFileBytesMax: 64 * 1024 * MiB,
  snapshotPathBytesMax: 1024,
  hardStateBytesMax: 1 * MiB,
  metaFileBytesMax: 64 * MiB,
};

/** storageLimits fills unset limits with defaults and refuses nonsense with a clear error. */
export function storageLimits(overrides: Partial<StorageLimits> = {}): StorageLimits {
  const limits = { ...DEFAULT_STORAGE_LIMITS, ...overrides };
  for (const [name, value] of Object.entries(limits)) {
    if (!Number.isSafeInteger(value) || value < 1)
      throw new RangeError(`storage limit ${name} must be a positive integer, got ${String(value)}`);
  }
  if (limits.snapshotStageLoopSharePercent > 100)
    throw new RangeError(
      `storage limit snapshotStageLoopSharePercent must be 1..100, got ${limits.snapshotStageLoopSharePercent}`,
    );
  if (limits.walRecordBytesMax > limits.walSegmentBytesMax) {
    throw new RangeError(
      `walRecordBytesMax (${limits.walRecordBytesMax}) exceeds walSegmentBytesMax (${limits.walSegmentBytesMax})`,
    );
  }
  if (limits.snapshotChunkBytes > limits.snapshotChunkBytesMax) {
    throw new RangeError(
      `snapshotChunkBytes (${limits.snapshotChunkBytes}) exceeds snapshotChunkBytesMax (${limits.snapshotChunkBytesMax})`,
    );
  }
  return limits;
}
