// One call being served: the CallSink implementations behind the server.
// UnaryCall answers through grpc-js's callback; StreamCall writes with flow
// control, so a slow reader holds the server to a bounded number of bytes.
import type * as grpc from '@grpc/grpc-js';
import {
  StatusCode,
  type RpcMethod,
  type RpcResponse,
  type RpcStatus,
  type ShipSegmentRequest,
  type SnapshotHeader,
} from '../../engine/rpc.js';
import type { SnapshotFileChunk } from '../../proto/gen/svc/replication/v1/replication.js';
import type { CallEnd, CallSink } from './call-sink.js';
import type { GrpcLimits } from './limits.js';
import { encodeResponse, encodeSegmentChunk, encodeSnapshotChunk } from './methods.js';
import { rpcStatus, toServiceError } from './status.js';

/** CallEnv is what a served call needs from its server. */
export interface CallEnv {
  limits: GrpcLimits;
  /** closed is called exactly once per call, when it is over. */
  closed(callId: number, end: CallEnd): void;
  warn(message: string): void;
}

const OK_END: CallEnd = { code: 0, details: 'OK' };

abstract class ServedCall implements CallSink {
  /** callerName: the verified certificate's name (set by the server after the gate passed the call), '' = none. */
  callerName = '';
  /** readsSnapshotLayers: a FetchSnapshot caller sent SNAPSHOT_LAYERS_METADATA (set by the server), else false. */
  readsSnapshotLayers = false;
  private isClosed = false;
  private idleTimer: NodeJS.Timeout | null = null;

  constructor(
    readonly callId: number,
    readonly method: RpcMethod,
    readonly peer: string,
    protected readonly env: CallEnv,
  ) {}

  get closed(): boolean {
    return this.isClosed;
  }

  abstract reply(response: RpcResponse): void;
  abstract replyError(status: RpcStatus): void;
  abstract streamChunk(chunk: ShipSegmentRequest): void;
  abstract streamEnd(): void;
  abstract serveSnapshot(header: SnapshotHeader, files: AsyncIterable<SnapshotFileChunk>): void;
  abstract bufferedBytes(): number;

  /** peerGone is grpc-js's 'cancelled': the peer cancelled, its deadline passed, or the connection died. */
  peerGone(): void {
    if (this.isClosed) return;
    this.close({ code: StatusCode.CANCELLED, details: 'call cancelled by the peer, its deadline or its connection' });
  }

  /** expectHandler starts the handler-idle clock: the handler owes this call its next move. */
  protected expectHandler(): void {
    this.stopIdleClock();
    if (this.isClosed) return;
    const timeoutMs = this.env.limits.handlerIdleTimeoutMs;
    this.idleTimer = setTimeout(() => {
      this.idleTimer = null;
      this.env.warn(`${this.method} call ${this.callId}: handler idle for ${timeoutMs} ms, ending it`);
      this.fail(rpcStatus(StatusCode.DEADLINE_EXCEEDED, `server handler did not act within ${timeoutMs} ms`));
    }, timeoutMs);
    this.idleTimer.unref();
  }

  protected stopIdleClock(): void {
    if (this.idleTimer !== null) clearTimeout(this.idleTimer);
    this.idleTimer = null;
  }

  /** misuse ends the call when the handler used a verb this method does not take. */
  protected misuse(verb: string): void {
    if (this.isClosed) return;
    this.env.warn(`${this.method} call ${this.callId}: handler called ${verb}, which this call does not take`);
    this.fail(rpcStatus(StatusCode.INTERNAL, `server handler misused the call (${verb})`));
  }

  /** fail ends the call with a status the server chose (not the handler). */
  protected abstract fail(status: RpcStatus): void;

  protected close(end: CallEnd): void {
    if (this.isClosed) return;
    this.isClosed = true;
    this.stopIdleClock();
    this.onClose();
    this.env.closed(this.callId, end);
  }

  /** onClose releases whatever the call holds. */
  protected onClose(): void {}
}

/** UnaryCall answers once through grpc-js's callback. */
export class UnaryCall extends ServedCall {
  constructor(
    callId: number,
    method: RpcMethod,
    peer: string,
    env: CallEnv,
    private readonly respond: grpc.sendUnaryData<Buffer>,
  ) {
    super(callId, method, peer, env);
    this.expectHandler();
  }

  reply(response: RpcResponse): void {
    if (this.closed) return;
    if (response.method !== this.method) {
      this.misuse(`reply(${response.method})`);
      return;
    }
    let bytes: Buffer;
    try {
      bytes = encodeResponse(response);
    } catch (err) {
      this.env.warn(`${this.method} call ${this.callId}: response does not encode: ${String(err)}`);
      this.fail(rpcStatus(StatusCode.INTERNAL, 'server could not encode its response'));
      return;
    }
    this.respond(null, bytes);
    this.close(OK_END);
  }

  replyError(status: RpcStatus): void {
    if (this.closed) return;
    this.fail(status);
  }

  streamChunk(): void {
    this.misuse('streamChunk');
  }

  streamEnd(): void {
    this.misuse('streamEnd');
  }

  serveSnapshot(): void {
    this.misuse('serveSnapshot');
  }

  bufferedBytes(): number {
    return 0;
  }

  protected fail(status: RpcStatus): void {
    if (this.closed) return;
    const { error, rejected } = toServiceError(status);
    if (rejected.length > 0)
      this.env.warn(`${this.method} call ${this.callId}: dropped trailers ${rejected.join(', ')}`);
    this.respond(error, null);
    this.close({ code: status.code, details: status.details });
  }
}

type Ending = { kind: 'ok' } | { kind: 'error'; status: RpcStatus };

/**
 * StreamCall serves StreamSegments or FetchSnapshot. Messages wait in a queue and go to grpc-js only
 * while fewer than streamUnflushedBytesMax bytes are written but not yet sent and grpc-js has not asked
 * us to wait for 'drain'; the write callbacks (which HTTP/2 flow control holds back for a slow reader)
 * release more. The queue itself is capped at streamBufferedBytesMax.
 */
export class StreamCall extends ServedCall {
  private readonly queue: Buffer[] = [];
  private queuedBytes = 0;
  private unflushedBytes = 0;
  private waitingForDrain = false;
  private ending: Ending | null = null;
  private finished = false;
  private snapshotStarted = false;
  private writableWaiters: (() => void)[] = [];

  constructor(
    callId: number,
    method: RpcMethod,
    peer: string,
    env: CallEnv,
    private readonly call: grpc.ServerWritableStream<Buffer, Buffer>,
  ) {
    super(callId, method, peer, env);
    this.expectHandler();
  }

  reply(response: RpcResponse): void {
    this.misuse(`reply(${response.method})`);
  }

  replyError(status: RpcStatus): void {
    if (this.closed || this.afterEnding('replyError')) return;
    this.stopIdleClock();
    this.ending = { kind: 'error', status };
    this.pump();
  }

  streamChunk(chunk: ShipSegmentRequest): void {
    if (this.closed || this.afterEnding('streamChunk')) return;
    if (this.method !== 'StreamSegments') {
      this.misuse('streamChunk');
      return;
    }
    const bytes = this.encode(() => encodeSegmentChunk(chunk));
    if (bytes === null) return;
    this.enqueue(bytes);
    this.expectHandler();
  }

  streamEnd(): void {
    if (this.closed || this.afterEnding('streamEnd')) return;
    if (this.method !== 'StreamSegments') {
      this.misuse('streamEnd');
      return;
    }
    this.stopIdleClock();
    this.ending = { kind: 'ok' };
    this.pump();
  }

  serveSnapshot(header: SnapshotHeader, files: AsyncIterable<SnapshotFileChunk>): void {
    if (this.closed || this.afterEnding('serveSnapshot')) return;
    if (this.method !== 'FetchSnapshot' || this.snapshotStarted) {
      this.misuse('serveSnapshot');
      return;
    }
    this.snapshotStarted = true;
    this.stopIdleClock();
    const bytes = this.encode(() => encodeSnapshotChunk({ chunk: { $case: 'header', value: header } }));
    if (bytes === null) return;
    this.enqueue(bytes);
    if (!header.needed) {
      this.ending = { kind: 'ok' };
      this.pump();
      return;
    }
    void this.pullFiles(files);
  }

  bufferedBytes(): number {
    return this.queuedBytes + this.unflushedBytes;
  }

  /** afterEnding ignores (with a warning) a verb that comes after the call's ending was decided. */
  private afterEnding(verb: string): boolean {
    if (this.ending === null) return false;
    this.env.warn(`${this.method} call ${this.callId}: ${verb} after the call's end, ignored`);
    return true;
  }

  protected fail(status: RpcStatus): void {
    if (this.closed) return;
    this.dropQueue();
    this.ending = { kind: 'error', status };
    this.finish();
  }

  protected onClose(): void {
    this.dropQueue();
    this.wakeWriters();
  }

  /** pullFiles reads the snapshot source only when the call can take another message. */
  private async pullFiles(files: AsyncIterable<SnapshotFileChunk>): Promise<void> {
    let iterator: AsyncIterator<SnapshotFileChunk> | null = null;
    let exhausted = false;
    try {
      iterator = files[Symbol.asyncIterator]();
      // Bounded by the source's length: every pass takes one chunk from it or leaves.
      for (;;) {
        await this.whenWritable();
        if (this.closed || this.ending !== null) return;
        this.expectHandler();
        const next = await iterator.next();
        this.stopIdleClock();
        if (this.closed || this.ending !== null) return;
        if (next.done) {
          exhausted = true;
          this.ending = { kind: 'ok' };
          this.pump();
          return;
        }
        const bytes = this.encode(() => encodeSnapshotChunk({ chunk: { $case: 'file', value: next.value } }));
        if (bytes === null) return;
        this.enqueue(bytes);
      }
    } catch (err) {
      exhausted = true;
      this.env.warn(`FetchSnapshot call ${this.callId}: snapshot source failed: ${String(err)}`);
      this.fail(
        rpcStatus(StatusCode.INTERNAL, `snapshot source failed: ${err instanceof Error ? err.message : String(err)}`),
      );
    } finally {
      if (!exhausted && iterator?.return) {
        try {
          await iterator.return();
        } catch (err) {
          this.env.warn(`FetchSnapshot call ${this.callId}: closing the snapshot source failed: ${String(err)}`);
        }
      }
    }
  }

  private encode(encode: () => Buffer): Buffer | null {
    try {
      return encode();
    } catch (err) {
      this.env.warn(`${this.method} call ${this.callId}: message does not encode: ${String(err)}`);
      this.fail(rpcStatus(StatusCode.INTERNAL, 'server could not encode a stream message'));
      return null;
    }
  }

  private enqueue(bytes: Buffer): void {
    const max = this.env.limits.streamBufferedBytesMax;
    if (this.bufferedBytes() + bytes.length > max) {
      this.env.warn(`${this.method} call ${this.callId}: reader too slow, ${this.bufferedBytes()} bytes buffered`);
      this.fail(
        rpcStatus(
          StatusCode.RESOURCE_EXHAUSTED,
          `reader too slow: stream would buffer more than streamBufferedBytesMax ${max} bytes; pull again`,
        ),
      );
      return;
    }
    this.queue.push(bytes);
    this.queuedBytes += bytes.length;
    this.pump();
  }

  private canWrite(): boolean {
    return !this.waitingForDrain && this.unflushedBytes < this.env.limits.streamUnflushedBytesMax;
  }

  private pump(): void {
    // Bounded by the queue: every pass moves one message out of it.
    while (!this.closed && this.queue.length > 0 && this.canWrite()) {
      const bytes = this.queue.shift()!;
      this.queuedBytes -= bytes.length;
      this.unflushedBytes += bytes.length;
      const more = this.call.write(bytes, () => {
        this.unflushedBytes -= bytes.length;
        this.pump();
      });
      if (!more) {
        this.waitingForDrain = true;
        this.call.once('drain', () => {
          this.waitingForDrain = false;
          this.pump();
        });
      }
    }
    if (this.closed) return;
    if (this.queue.length === 0 && this.ending !== null) {
      this.finish();
      return;
    }
    if (this.queue.length === 0 && this.canWrite()) this.wakeWriters();
  }

  /** whenWritable resolves once another message may be queued without waiting, or the call closed. */
  private whenWritable(): Promise<void> {
    if (this.closed || (this.queue.length === 0 && this.canWrite())) return Promise.resolve();
    return new Promise((resolve) => this.writableWaiters.push(resolve));
  }

  private wakeWriters(): void {
    const waiters = this.writableWaiters;
    this.writableWaiters = [];
    for (const wake of waiters) wake();
  }

  /** finish hands the ending to grpc-js, which sends it after the messages already written. */
  private finish(): void {
    if (this.finished || this.ending === null) return;
    this.finished = true;
    const ending = this.ending;
    if (ending.kind === 'ok') {
      this.call.end();
      this.close(OK_END);
      return;
    }
    const { error, rejected } = toServiceError(ending.status);
    if (rejected.length > 0)
      this.env.warn(`${this.method} call ${this.callId}: dropped trailers ${rejected.join(', ')}`);
    this.call.emit('error', error);
    this.close({ code: ending.status.code, details: ending.status.details });
  }

  private dropQueue(): void {
    this.queue.length = 0;
    this.queuedBytes = 0;
  }
}
