// Content-addressed blobs in the DocumentStore, so images replicate with everything else once the store is
// the replicated one. A blob's address is the BLAKE3-256 hex of its bytes.
//
// Layout: `blobs/<hash>` is the head {hash, content_type, size_bytes, chunks, created_at, touched_at, data?}.
// A blob of at most blobChunkBytes is inline: `chunks` is 0 and `data` holds its base64. A larger one is split
// into `chunks` documents `blob-chunks/<hash>/<index, 6 digits>` = {data, created_at} of blobChunkBytes each
// (the last shorter), each small enough to be one replicated write. Chunks are written first and the head
// last, so a head means the blob is whole; a reader checks the length and the hash of what it reassembles.
// Writing a blob that exists only refreshes `touched_at`, which keeps it from the sweep (see sweepBlobs).
import { blake3 } from 'hash-wasm';
import type { DocumentStore, JsonObject } from '../../store/document-store.js';
import { isVersionConflict } from '../../store/document-store.js';
import { blobBytesMax, blobChunkBytes, blobSweepGraceMs } from './limits.js';

export const blobKeys = {
  heads: 'blobs/',
  head: (hash: string) => `blobs/${hash}`,
  chunks: 'blob-chunks/',
  chunk: (hash: string, index: number) => `blob-chunks/${hash}/${String(index).padStart(6, '0')}`,
} as const;

export const blobHashPattern = /^[0-9a-f]{64}$/;

export interface BlobHead extends JsonObject {
  hash: string;
  content_type: string;
  size_bytes: number;
  chunks: number;
  created_at: string;
  touched_at: string;
}

interface BlobChunk extends JsonObject {
  data: string;
  created_at: string;
}

export interface StoredBlob {
  bytes: Buffer;
  contentType: string;
}

/** BlobCorruptError: a stored blob is missing a chunk or does not hash to its address. */
export class BlobCorruptError extends Error {
  constructor(
    readonly hash: string,
    why: string,
  ) {
    super(`blob ${hash} is corrupt: ${why}`);
    this.name = 'BlobCorruptError';
  }
}

export async function blobHash(bytes: Uint8Array): Promise<string> {
  return blake3(bytes, 256);
}

export class BlobStore {
  constructor(
    private readonly store: DocumentStore,
    private readonly now: () => Date = () => new Date(),
  ) {}

  /** put stores bytes under their hash (once; a repeat only refreshes touched_at) and returns the hash. */
  async put(bytes: Buffer, contentType: string): Promise<string> {
    if (bytes.length > blobBytesMax)
      throw new RangeError(`a blob holds at most ${blobBytesMax} bytes, got ${bytes.length}`);
    const hash = await blobHash(bytes);
    const nowIso = this.now().toISOString();
    const existing = await this.store.get<BlobHead>(blobKeys.head(hash));
    if (existing) {
      if (this.now().getTime() - Date.parse(existing.value.touched_at) > blobSweepGraceMs / 2) {
        await this.store.put(blobKeys.head(hash), { ...existing.value, touched_at: nowIso }).catch(() => undefined);
      }
      return hash;
    }
    const chunkCount = bytes.length <= blobChunkBytes ? 0 : Math.ceil(bytes.length / blobChunkBytes);
    for (let index = 0; index < chunkCount; index++) {
      const data = bytes.subarray(index * blobChunkBytes, (index + 1) * blobChunkBytes).toString('base64');
      await this.store.put(blobKeys.chunk(hash, index), { data, created_at: nowIso } satisfies BlobChunk);
    }
    const head: BlobHead = {
      hash,
      content_type: contentType,
      size_bytes: bytes.length,
      chunks: chunkCount,
      created_at: nowIso,
      touched_at: nowIso,
      ...(chunkCount === 0 ? { data: bytes.toString('base64') } : {}),
    };
    try {
      await this.store.put(blobKeys.head(hash), head, { expectedVersion: 0 });
    } catch (error) {
      // Another writer stored the same content first: same address, same bytes.
      if (!isVersionConflict(error)) throw error;
    }
    return hash;
  }

  async head(hash: string): Promise<BlobHead | null> {
    if (!blobHashPattern.test(hash)) return null;
    return (await this.store.get<BlobHead>(blobKeys.head(hash)))?.value ?? null;
  }

  /** get returns the blob's bytes, verified against its hash, or null when there is none; bytesMax refuses larger ones. */
  async get(hash: string, bytesMax = blobBytesMax): Promise<StoredBlob | null> {
    const head = await this.head(hash);
    if (!head) return null;
    if (head.size_bytes > bytesMax)
      throw new RangeError(`blob ${hash} has ${head.size_bytes} bytes, over the ${bytesMax} allowed here`);
    let bytes: Buffer;
    if (head.chunks === 0) {
      bytes = Buffer.from(String(head.data ?? ''), 'base64');
    } else {
      const parts: Buffer[] = [];
      for (let index = 0; index < head.chunks; index++) {
        const chunk = await this.store.get<BlobChunk>(blobKeys.chunk(hash, index));
        if (!chunk) throw new BlobCorruptError(hash, `chunk ${index} of ${head.chunks} is missing`);
        parts.push(Buffer.from(chunk.value.data, 'base64'));
      }
      bytes = Buffer.concat(parts);
    }
    if (bytes.length !== head.size_bytes)
      throw new BlobCorruptError(hash, `${bytes.length} bytes, expected ${head.size_bytes}`);
    if ((await blobHash(bytes)) !== hash) throw new BlobCorruptError(hash, 'its bytes do not hash to its address');
    return { bytes, contentType: head.content_type };
  }

  /**
   * sweep deletes blobs that nothing references and nobody wrote within blobSweepGraceMs (a worker stores
   * its image before recording it on its album; the grace covers that gap), then chunks whose head is gone.
   * The head goes first, so a crash mid-sweep leaves only unreachable chunks, which a later sweep removes.
   */
  async sweep(
    referenced: ReadonlySet<string>,
    pageEntriesMax = 200,
  ): Promise<{ blobsDeleted: number; chunksDeleted: number }> {
    const cutoffMs = this.now().getTime() - blobSweepGraceMs;
    let blobsDeleted = 0;
    let chunksDeleted = 0;
    for await (const entry of this.entries<BlobHead>(blobKeys.heads, pageEntriesMax)) {
      const head = entry.value;
      if (referenced.has(head.hash) || Date.parse(head.touched_at) > cutoffMs) continue;
      try {
        await this.store.delete(entry.key, { expectedVersion: entry.version });
        blobsDeleted++;
      } catch (error) {
        if (!isVersionConflict(error)) throw error;
      }
    }
    for await (const entry of this.entries<BlobChunk>(blobKeys.chunks, pageEntriesMax)) {
      const hash = entry.key.slice(blobKeys.chunks.length, blobKeys.chunks.length + 64);
      if (Date.parse(entry.value.created_at) > cutoffMs || (await this.head(hash))) continue;
      if ((await this.store.delete(entry.key)).deleted) chunksDeleted++;
    }
    return { blobsDeleted, chunksDeleted };
  }

  private async *entries<T extends JsonObject>(prefix: string, pageEntriesMax: number) {
    let after: string | undefined;
    for (;;) {
      const page = await this.store.list<T>(prefix, { after, limit: pageEntriesMax });
      yield* page.entries;
      if (page.nextAfter === null || page.entries.length === 0) return;
      after = page.nextAfter;
    }
  }
}
