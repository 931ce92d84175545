// sweepAlbumBlobs removes images no album shows any more (replaced, discarded or of deleted albums): it
// reads every album for the hashes it references, then lets the blob store delete the rest that are past
// the grace period. Blobs are content-addressed and shared between albums, so only a full scan can tell.
// startBlobSweeper runs it periodically on one process of the cluster at a time (redis/locked-interval.ts).
import type { Redis } from 'ioredis';
import type { DocumentStore } from '../../store/document-store.js';
import type { AlbumRecord } from './album-records.js';
import type { BlobStore } from './blob-store.js';
import { blobSweepIntervalMs, blobSweepPageEntriesMax } from './limits.js';
import { startLockedInterval, type LockedInterval } from '../redis/locked-interval.js';

/** albumsPrefix covers every user's albums. */
const albumsPrefix = 'albums/';
const sweepLockKey = 'svc:album-blob-sweep';

export async function referencedBlobHashes(store: DocumentStore): Promise<Set<string>> {
  const hashes = new Set<string>();
  let after: string | undefined;
  for (;;) {
    const page = await store.list<AlbumRecord>(albumsPrefix, { after, limit: blobSweepPageEntriesMax });
    for (const { value: album } of page.entries) {
      if (album.anchor.hash) hashes.add(album.anchor.hash);
      for (const shot of album.shots) if (shot.image_hash) hashes.add(shot.image_hash);
    }
    if (page.nextAfter === null || page.entries.length === 0) return hashes;
    after = page.nextAfter;
  }
}

export async function sweepAlbumBlobs(
  store: DocumentStore,
  blobs: BlobStore,
): Promise<{ blobsDeleted: number; chunksDeleted: number }> {
  return blobs.sweep(await referencedBlobHashes(store), blobSweepPageEntriesMax);
}

/** startBlobSweeper sweeps every intervalMs on whichever process takes the lock first; stop() ends it. */
export function startBlobSweeper(
  redis: Redis,
  store: DocumentStore,
  blobs: BlobStore,
  onError: (error: unknown) => void,
  intervalMs = blobSweepIntervalMs,
): LockedInterval {
  return startLockedInterval(redis, sweepLockKey, intervalMs, () => sweepAlbumBlobs(store, blobs), onError);
}
