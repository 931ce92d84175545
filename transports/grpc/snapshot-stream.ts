// FetchSnapshot as the installer sees it: an async iterable of SnapshotChunk,
// pulled from the network only as fast as the installer iterates (the grpc-js
// stream stops reading, and HTTP/2 flow control stops the sender). Failures are
// thrown as RpcStatusError.
import * as grpc from '@grpc/grpc-js';
import { StatusCode, type SnapshotHeader, type SnapshotRequest } from '../../engine/rpc.js';
import {
  SnapshotRequest as SnapshotRequestCodec,
  type SnapshotChunk,
  type SnapshotFileChunk,
} from '../../proto/gen/svc/replication/v1/replication.js';
import type { GrpcLimits } from './limits.js';
import { decodeSnapshotChunk, identity, methodPath } from './methods.js';
import { RpcStatusError, fromStatusObject, rpcStatus } from './status.js';
import { isCarriableValue } from '../../engine/values.js';

/**
 * SNAPSHOT_LAYERS_METADATA: a FetchSnapshot caller that reads a snapshot whose state files are a stack of layers
 * (store/snapshot-layers.ts) says so with this request metadata, `1`. A binary from before layers sends none and
 * is served the artifact's state as one whole file (transports/node/served-calls.ts). It is a claim about the
 * caller's own reading, nothing more: a false one only gets the claimant files it cannot install.
 */
export const SNAPSHOT_LAYERS_METADATA = 'x-svc-snapshot-layers';

export interface FetchOptions {
  /** signal cancels the call; the pending or next read then throws CANCELLED. */
  signal?: AbortSignal;
  /** readsSnapshotLayers (default true) sends SNAPSHOT_LAYERS_METADATA; false plays a binary from before layers. */
  readsSnapshotLayers?: boolean;
}

/** SnapshotParts is a FetchSnapshot answer split the way an installer takes it. */
export interface SnapshotParts {
  header: SnapshotHeader;
  /** files are the file chunks in order; empty when header.needed is false. */
  files: AsyncIterable<SnapshotFileChunk>;
}

export async function* snapshotChunks(
  client: grpc.Client | string,
  request: SnapshotRequest,
  limits: GrpcLimits,
  options: FetchOptions = {},
): AsyncGenerator<SnapshotChunk> {
  if (typeof client === 'string') throw new RpcStatusError(rpcStatus(StatusCode.UNAVAILABLE, client));
  options.signal?.throwIfAborted();
  const bytes = Buffer.from(SnapshotRequestCodec.encode(request).finish());
  const metadata = new grpc.Metadata();
  if (options.readsSnapshotLayers !== false) metadata.set(SNAPSHOT_LAYERS_METADATA, '1');
  const call = client.makeServerStreamRequest<Buffer, Buffer>(
    methodPath('FetchSnapshot'),
    identity,
    identity,
    bytes,
    metadata,
    {},
  );
  const cancel = (): void => call.cancel();
  options.signal?.addEventListener('abort', cancel, { once: true });
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
        if (options.signal?.aborted)
          throw new RpcStatusError(rpcStatus(StatusCode.CANCELLED, 'FetchSnapshot cancelled by its caller'));
        throw idleTimedOut
          ? new RpcStatusError(
              rpcStatus(
                StatusCode.DEADLINE_EXCEEDED,
                `no FetchSnapshot message for snapshotIdleTimeoutMs ${limits.snapshotIdleTimeoutMs} ms`,
              ),
            )
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
        if (!isCarriableValue(body.value.term) || !isCarriableValue(body.value.snapshotSeq)) {
          throw violation(
            `header term ${body.value.term} or snapshot_seq ${body.value.snapshotSeq} has no room to increment`,
          );
        }
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
    options.signal?.removeEventListener('abort', cancel);
    if (!finished) {
      call.cancel();
      void messages.return?.();
    }
  }
}

/**
 * splitSnapshot waits for the header, then hands the rest over as file chunks. With needed=false it
 * reads the stream to its end first, so the call is over when it returns.
 */
export async function splitSnapshot(chunks: AsyncIterable<SnapshotChunk>): Promise<SnapshotParts> {
  const iterator = chunks[Symbol.asyncIterator]();
  const first = await iterator.next();
  if (first.done || first.value.chunk?.$case !== 'header') {
    await iterator.return?.();
    throw violation('no header');
  }
  const header = first.value.chunk.value;
  async function* files(): AsyncGenerator<SnapshotFileChunk> {
    try {
      // Bounded by the stream: each pass consumes one message or ends.
      for (;;) {
        const next = await iterator.next();
        if (next.done) return;
        if (next.value.chunk?.$case !== 'file') throw violation('a second header');
        yield next.value.chunk.value;
      }
    } finally {
      await iterator.return?.();
    }
  }
  if (!header.needed) {
    const rest = await iterator.next();
    if (!rest.done) {
      await iterator.return?.();
      throw violation('file chunk after a header with needed=false');
    }
    return { header, files: (async function* () {})() };
  }
  return { header, files: files() };
}

function violation(what: string): RpcStatusError {
  return new RpcStatusError(rpcStatus(StatusCode.INTERNAL, `FetchSnapshot protocol violation: ${what}`));
}
