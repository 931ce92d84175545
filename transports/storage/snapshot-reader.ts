// readArtifactChunks serves an artifact as SnapshotFileChunks, file by file in manifest order.
// It is an async generator that reads one chunk ahead: the next chunk is read from disk while the
// consumer sends this one, and a slow peer (gRPC backpressure) holds at most two chunks in memory
// here. Digests come from the manifest.
import { open } from 'node:fs/promises';
import { join } from 'node:path';
import type { SnapshotFileChunk } from '../../proto/gen/svc/replication/v1/replication.js';
import type { Manifest } from './snapshot-manifest.js';
import { SnapshotError } from './snapshot-paths.js';

export async function* readArtifactChunks(
  dir: string,
  manifest: Manifest,
  chunkBytes: number,
): AsyncGenerator<SnapshotFileChunk> {
  for (const file of manifest.files) {
    const handle = await open(join(dir, file.path), 'r');
    try {
      const { size } = await handle.stat();
      if (size !== file.size)
        throw new SnapshotError(`${file.path} is ${size} bytes on disk, the manifest says ${file.size}`);
      if (file.size === 0) {
        yield { path: file.path, offset: 0, data: Buffer.alloc(0), last: true };
        continue;
      }
      const readAt = (offset: number): { offset: number; read: Promise<Buffer> } => {
        // A fresh buffer per chunk: the consumer may still hold the previous one in a write queue.
        const data = Buffer.allocUnsafe(Math.min(chunkBytes, file.size - offset));
        const read = readExactly(handle, data, offset, file.path).then(() => data);
        read.catch(() => undefined); // awaited below, or abandoned with the generator
        return { offset, read };
      };
      let ahead: { offset: number; read: Promise<Buffer> } | null = readAt(0);
      while (ahead !== null) {
        const { offset, read }: { offset: number; read: Promise<Buffer> } = ahead;
        const data = await read;
        const end: number = offset + data.length;
        ahead = end < file.size ? readAt(end) : null;
        try {
          yield { path: file.path, offset, data, last: end === file.size };
        } finally {
          // Closing the handle under a read still running would fail that read: let it end first.
          if (ahead !== null) await ahead.read.catch(() => undefined);
        }
      }
    } finally {
      await handle.close();
    }
  }
}

async function readExactly(
  handle: Awaited<ReturnType<typeof open>>,
  data: Buffer,
  position: number,
  path: string,
): Promise<void> {
  let filled = 0;
  while (filled < data.length) {
    const { bytesRead } = await handle.read(data, filled, data.length - filled, position + filled);
    if (bytesRead === 0)
      throw new SnapshotError(`${path} ended at byte ${position + filled}, before its manifest size`);
    filled += bytesRead;
  }
}
