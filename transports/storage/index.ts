export * from './limits.js';
export {
  Wal,
  WalError,
  segmentFileName,
  type DurablePoint,
  type WalCorruption,
  type TornTail,
  type WalStats,
  type WalOpenResult,
} from './wal.js';
export { HardStateStore, HardStateError, HARD_STATE_FILE } from './hard-state.js';
export {
  SnapshotStore,
  SNAPSHOTS_DIR,
  type Artifact,
  type SnapshotFileSource,
  type StageOptions,
} from './snapshots.js';
export { SnapshotError, META_FILE, MANIFEST_FILE } from './snapshot-paths.js';
export { blake3Bytes, blake3File, createBlake3Hasher, type Blake3Hasher } from './blake3.js';
export { openNodeStorage, entriesAfterSnapshot, WAL_DIR, type NodeStorage } from './node-storage.js';
