// readArtifactChunks serves an artifact as SnapshotFileChunks, file by file in manifest order.
// It is an async generator: nothing is read until the consumer asks for the next chunk, so a slow
// peer (gRPC backpressure) holds at most one chunk in memory here. Digests come from the manifest.
import { open } from 'node:fs/promises';
import { join } from 'node:path';
import type { SnapshotFileChunk } from '../../proto/gen/svc/replication/v1/replication.js';
import type { Manifest } from './snapshot-manifest.js';
import { SnapshotError } from './snapshot-paths.js';

export async function* readArtifactChunks(dir: string, manifest: Manifest, chunkBytes: number): AsyncGenerator<SnapshotFileChunk> {
  for (const file of manifest.files) {
    const handle = await open(join(dir, file.path), 'r');
    try {
      const { size } = await handle.stat();
      if (size !== file.size) throw new SnapshotError(`${file.path} is ${size} bytes on disk, the manifest says ${file.size}`);
      if (file.size === 0) {
        yield { path: file.path, offset: 0, data: Buffer.alloc(0), last: true };
        continue;
      }
      for (let offset = 0; offset < file.size;) {
        const length = Math.min(chunkBytes, file.size - offset);
        // A fresh buffer per chunk: the consumer may still hold the previous one in a write queue.
        const data = Buffer.allocUnsafe(length);
        await readExactly(handle, data, offset, file.path);
        yield { path: file.path, offset, data, last: offset + length === file.size };
        offset += length;
      }
    } finally {
      await handle.close();
    }
  }
}

async function readExactly(handle: Awaited<ReturnType<typeof open>>, data: Buffer, position: number, path: string): Promise<void> {
  let filled = 0;
  while (filled < data.length) {
    const { bytesRead } = await handle.read(data, filled, data.length - filled, position + filled);
    if (bytesRead === 0) throw new SnapshotError(`${path} ended at byte ${position + filled}, before its manifest size`);
    filled += bytesRead;
  }
}
