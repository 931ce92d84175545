// FetchSnapshot as the installer sees it: an async iterable of SnapshotChunk,
// pulled from the network only as fast as the installer iterates (the grpc-js
// stream stops reading, and HTTP/2 flow control stops the sender). Failures are
// thrown as RpcStatusError.
import * as grpc from '@grpc/grpc-js';
import { StatusCode, type SnapshotRequest } from '../../engine/rpc.js';
import { SnapshotRequest as SnapshotRequestCodec, type SnapshotChunk } from '../../proto/gen/svc/replication/v1/replication.js';
import type { GrpcLimits } from './limits.js';
import { decodeSnapshotChunk, identity, methodPath } from './methods.js';
import { RpcStatusError, fromStatusObject, rpcStatus } from './status.js';

export async function* snapshotChunks(client: grpc.Client | string, request: SnapshotRequest, limits: GrpcLimits): AsyncGenerator<SnapshotChunk> {
  if (typeof client === 'string') throw new RpcStatusError(rpcStatus(StatusCode.UNAVAILABLE, client));
  const bytes = Buffer.from(SnapshotRequestCodec.encode(request).finish());
  const call = client.makeServerStreamRequest<Buffer, Buffer>(methodPath('FetchSnapshot'), identity, identity, bytes,
    new grpc.Metadata(), {});
  const messages = call[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
  let idleTimedOut = false;
  let finished = false;
  let sawHeader = false;
  let filesExpected = false;
  try {
    // Bounded by the stream: each pass consumes one message or ends.
    for (;;) {
      const timer = setTimeout(() => {
        idleTimedOut = true;
        call.cancel();
      }, limits.snapshotIdleTimeoutMs);
      let next: IteratorResult<Buffer>;
      try {
        next = await messages.next();
      } catch (err) {
        throw idleTimedOut
          ? new RpcStatusError(rpcStatus(StatusCode.DEADLINE_EXCEEDED,
            `no FetchSnapshot message for snapshotIdleTimeoutMs ${limits.snapshotIdleTimeoutMs} ms`))
          : new RpcStatusError(fromStatusObject(err as grpc.ServiceError));
      } finally {
        clearTimeout(timer);
      }
      if (next.done) {
        if (!sawHeader) throw violation('stream ended before its header');
        finished = true;
        return;
      }
      let chunk: SnapshotChunk;
      try {
        chunk = decodeSnapshotChunk(next.value);
      } catch (err) {
        throw new RpcStatusError(rpcStatus(StatusCode.INTERNAL, `malformed SnapshotChunk: ${String(err)}`));
      }
      const body = chunk.chunk;
      if (!sawHeader) {
        if (body?.$case !== 'header') throw violation(`first message is ${body?.$case ?? 'empty'}, not the header`);
        sawHeader = true;
        filesExpected = body.value.needed;
      } else if (body?.$case !== 'file') {
        throw violation(`message after the header is ${body?.$case ?? 'empty'}, not a file chunk`);
      } else if (!filesExpected) {
        throw violation('file chunk after a header with needed=false');
      }
      yield chunk;
    }
  } finally {
    if (!finished) {
      call.cancel();
      void messages.return?.();
    }
  }
}

function violation(what: string): RpcStatusError {
  return new RpcStatusError(rpcStatus(StatusCode.INTERNAL, `FetchSnapshot protocol violation: ${what}`));
}
