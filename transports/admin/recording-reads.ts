// The Admin Recording call's reads of this node's flight recording (<data-dir>/recording/): the list of
// segment files, or a bounded chunk of one. A name is input: only a segment file's name is read, never a path.
import { open, readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import * as pb from '../../proto/gen/svc/admin/v1/admin.js';
import { SEGMENT_FILE } from '../../recording/format.js';
import { AdminCallError } from './admin-client.js';
import { ADMIN_RECORDING_CHUNK_BYTES_MAX } from './limits.js';

export async function readRecording(dir: string | null, request: pb.RecordingRequest): Promise<pb.RecordingResponse> {
  if (dir === null) throw new AdminCallError(grpc.status.FAILED_PRECONDITION, 'this node keeps no flight recording');
  if (request.name === '') {
    const names = (await readdir(dir).catch(() => [] as string[])).filter((n) => SEGMENT_FILE.test(n)).sort();
    const segments: pb.RecordingSegment[] = [];
    for (const name of names) {
      // A segment the ring deletes meanwhile is simply not listed.
      const info = await stat(join(dir, name)).catch(() => null);
      if (info) segments.push({ name, size: info.size, modifiedUnixMs: Math.floor(info.mtimeMs) });
    }
    return { segments, data: new Uint8Array(0), eof: true };
  }
  if (!SEGMENT_FILE.test(request.name))
    throw new AdminCallError(
      grpc.status.INVALID_ARGUMENT,
      `${JSON.stringify(request.name)} is not a segment file's name`,
    );
  const want = Math.min(request.bytesMax || ADMIN_RECORDING_CHUNK_BYTES_MAX, ADMIN_RECORDING_CHUNK_BYTES_MAX);
  const file = await open(join(dir, request.name), 'r').catch(() => null);
  if (!file)
    throw new AdminCallError(grpc.status.NOT_FOUND, `no segment ${request.name} (the ring may have rotated it out)`);
  try {
    const size = (await file.stat()).size;
    const from = Math.min(request.offset, size);
    const buffer = Buffer.alloc(Math.min(want, size - from));
    const { bytesRead } = await file.read(buffer, 0, buffer.length, from);
    return { segments: [], data: buffer.subarray(0, bytesRead), eof: from + bytesRead >= size };
  } finally {
    await file.close();
  }
}
