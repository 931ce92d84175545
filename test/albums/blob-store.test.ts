// Content-addressed blobs in the DocumentStore: BLAKE3 addresses (checked against @noble/hashes), inline and
// chunked layouts, verification on read, and the sweep of unreferenced blobs.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { blake3 } from '@noble/hashes/blake3.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { BlobCorruptError, BlobStore, blobKeys } from '../../api/albums/blob-store.js';
import { blobChunkBytes, blobSweepGraceMs } from '../../api/albums/limits.js';
import { MemoryDocumentStore } from '../../store/memory-store.js';
import { sweepAlbumBlobs } from '../../api/albums/blob-sweep.js';
import { albumKeys } from '../../api/albums/album-records.js';

describe('albums: the blob store', () => {
  it('stores a small blob inline and a large one in chunks, each read back whole under its BLAKE3 address', async () => {
    const store = new MemoryDocumentStore();
    const blobs = new BlobStore(store);
    const small = randomBytes(1000);
    const large = randomBytes(blobChunkBytes * 2 + 17);
    const smallHash = await blobs.put(small, 'image/png');
    const largeHash = await blobs.put(large, 'image/png');
    assert.equal(smallHash, bytesToHex(blake3(small)));
    assert.equal(largeHash, bytesToHex(blake3(large)));
    assert.equal((await blobs.head(smallHash))!.chunks, 0);
    assert.equal((await blobs.head(largeHash))!.chunks, 3);
    const chunkKeys = (await store.list(blobKeys.chunks)).entries.map((entry) => entry.key);
    assert.deepEqual(
      chunkKeys,
      [0, 1, 2].map((index) => blobKeys.chunk(largeHash, index)),
    );
    assert.deepEqual((await blobs.get(smallHash))!.bytes, small);
    assert.deepEqual((await blobs.get(largeHash))!.bytes, large);
    assert.equal(await blobs.get('f'.repeat(64)), null);
    assert.equal(await blobs.get('../etc'), null, 'a malformed address is simply absent');
    await assert.rejects(blobs.get(largeHash, 1000), RangeError, 'a reader may refuse a blob over its own limit');
  });

  it('writes the same content once, and detects a missing chunk or altered bytes', async () => {
    const store = new MemoryDocumentStore();
    const blobs = new BlobStore(store);
    const large = randomBytes(blobChunkBytes + 1);
    const hash = await blobs.put(large, 'image/png');
    const version = (await store.get(blobKeys.head(hash)))!.version;
    assert.equal(await blobs.put(large, 'image/png'), hash);
    assert.equal((await store.get(blobKeys.head(hash)))!.version, version, 'a fresh repeat writes nothing');

    const chunk = (await store.get<{ data: string; created_at: string }>(blobKeys.chunk(hash, 1)))!.value;
    const altered = Buffer.from(chunk.data, 'base64');
    altered[0] = altered[0]! ^ 0xff;
    await store.put(blobKeys.chunk(hash, 1), { ...chunk, data: altered.toString('base64') });
    await assert.rejects(blobs.get(hash), BlobCorruptError);
    await store.delete(blobKeys.chunk(hash, 1));
    await assert.rejects(blobs.get(hash), /chunk 1 of 2 is missing/);
  });

  it('sweeps blobs nothing references once they are older than the grace, and orphaned chunks', async () => {
    const store = new MemoryDocumentStore();
    let nowMs = Date.parse('2026-01-01T00:00:00Z');
    const blobs = new BlobStore(store, () => new Date(nowMs));
    const kept = await blobs.put(randomBytes(100), 'image/png');
    const dropped = await blobs.put(randomBytes(blobChunkBytes + 5), 'image/png');
    assert.deepEqual(await blobs.sweep(new Set([kept])), { blobsDeleted: 0, chunksDeleted: 0 }, 'young blobs stay');
    nowMs += blobSweepGraceMs + 1;
    const fresh = await blobs.put(randomBytes(100), 'image/png');
    assert.deepEqual(await blobs.sweep(new Set([kept]), 1), { blobsDeleted: 1, chunksDeleted: 2 });
    assert.equal(await blobs.head(dropped), null);
    assert.ok(await blobs.head(kept));
    assert.ok(await blobs.head(fresh), 'written within the grace');
    assert.equal((await store.list(blobKeys.chunks)).entries.length, 0);

    // Writing an old blob again refreshes it, so a sweep racing with a new reference does not take it.
    nowMs += blobSweepGraceMs + 1;
    const again = await blobs.put((await blobs.get(fresh))!.bytes, 'image/png');
    assert.equal(again, fresh);
    assert.deepEqual(
      await blobs.sweep(new Set()),
      { blobsDeleted: 1, chunksDeleted: 0 },
      'only the unrefreshed one goes',
    );
    assert.ok(await blobs.head(fresh));
  });

  it('sweepAlbumBlobs keeps what any album shows (anchor or shot, any user) and removes the rest', async () => {
    const store = new MemoryDocumentStore();
    let nowMs = Date.parse('2026-01-01T00:00:00Z');
    const blobs = new BlobStore(store, () => new Date(nowMs));
    const [anchor, shot, orphan] = await Promise.all(
      [1, 2, 3].map((seed) => blobs.put(randomBytes(50 + seed), 'image/png')),
    );
    const album = (userId: string, id: string, anchorHash: string | null, shotHash: string | null) => ({
      id,
      user_id: userId,
      anchor: { hash: anchorHash },
      shots: [{ image_hash: shotHash }, { image_hash: null }],
    });
    await store.put(albumKeys.album('usr_a', 'alb_1'), album('usr_a', 'alb_1', anchor!, null));
    await store.put(albumKeys.album('usr_b', 'alb_2'), album('usr_b', 'alb_2', null, shot!));
    nowMs += blobSweepGraceMs + 1;
    assert.deepEqual(await sweepAlbumBlobs(store, blobs), { blobsDeleted: 1, chunksDeleted: 0 });
    assert.ok(await blobs.head(anchor!));
    assert.ok(await blobs.head(shot!));
    assert.equal(await blobs.head(orphan!), null);
  });
});
