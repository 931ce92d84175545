// The peer client: one grpc-js channel per peer address, kept in a pool. It
// carries out the engine's `send` effects and reports each call's outcome as
// the engine's inputs (response, callFailed, streamChunk, streamEnded), and it
// gives the snapshot installer FetchSnapshot as an async iterable.
import * as grpc from '@grpc/grpc-js';
import {
  StatusCode,
  type RpcRequest,
  type RpcStatus,
  type SnapshotRequest,
  type UnaryMethod,
} from '../../engine/rpc.js';
import type { Input } from '../../engine/types.js';
import type { SnapshotChunk } from '../../proto/gen/svc/replication/v1/replication.js';
import { clientChannelOptions } from './channel-options.js';
import { resolveGrpcLimits, type GrpcLimits } from './limits.js';
import { decodeResponse, decodeSegmentChunk, encodeRequest, identity, methodPath } from './methods.js';
import { snapshotChunks, splitSnapshot, type FetchOptions, type SnapshotParts } from './snapshot-stream.js';
import { fromStatusObject, rpcStatus } from './status.js';
import { stamp } from '../node/write-trace.js';
import { LeanUnaryClient, type LeanDial } from './lean-unary.js';
import { grpcTarget } from './peer-resolver.js';

/** TransportInput is every engine input a call's outcome becomes. */
export type TransportInput = Extract<Input, { type: 'response' | 'callFailed' | 'streamChunk' | 'streamEnded' }>;

export interface PeerPoolOptions {
  /** credentials: clientCredentials(...) for mTLS, or insecureClientCredentials() when explicitly asked. */
  credentials: grpc.ChannelCredentials;
  /** deliver receives each outcome; every send ends in exactly one response, callFailed or streamEnded. */
  deliver: (input: TransportInput) => void;
  limits?: Partial<GrpcLimits>;
  /** channelOptions go over ours, e.g. grpc.ssl_target_name_override where a certificate names another host. */
  channelOptions?: grpc.ChannelOptions;
  /** onWarning hears about problems the pool absorbed (a deliver callback that threw). */
  onWarning?: (message: string) => void;
  /**
   * lean, when set, carries every unary method but JoinCluster over lean-unary.ts's HTTP/2 client instead of
   * grpc-js's (about half the CPU per call on both ends): `dial` opens a session with the same security as
   * `credentials`, `headers` are what `channelOptions`' interceptors would add (the cluster id).
   */
  lean?: { dial: LeanDial; headers: Readonly<Record<string, string>> };
}

interface Inflight {
  to: string;
  cancel(): void;
}

export class PeerPool {
  private readonly limits: GrpcLimits;
  private readonly clients = new Map<string, grpc.Client>();
  private readonly inflight = new Map<number, Inflight>();
  private readonly lean: LeanUnaryClient | null;
  private closed = false;

  constructor(private readonly options: PeerPoolOptions) {
    this.limits = resolveGrpcLimits(options.limits);
    this.lean = options.lean ? new LeanUnaryClient({ ...options.lean, limits: this.limits }) : null;
  }

  /** unaryClient names what carries the unary calls but JoinCluster: the lean HTTP/2 client or grpc-js's. */
  get unaryClient(): 'lean' | 'grpc-js' {
    return this.lean === null ? 'grpc-js' : 'lean';
  }

  /** inflightCount is the number of sends still waiting for their outcome. */
  get inflightCount(): number {
    return this.inflight.size;
  }

  /**
   * send runs one call to `to` (host:port) under its deadline. Unary methods end in `response` or
   * `callFailed`; StreamSegments delivers `streamChunk`s, then `streamEnded` or `callFailed` (with the
   * status's trailers, e.g. x-svc-catchup on FAILED_PRECONDITION). Transport failures are UNAVAILABLE.
   */
  send(requestId: number, to: string, request: RpcRequest): void {
    if (this.inflight.has(requestId)) {
      this.failSoon(requestId, rpcStatus(StatusCode.INTERNAL, `request id ${requestId} is already in flight`), false);
      return;
    }
    if (request.method === 'FetchSnapshot') {
      this.failSoon(requestId, rpcStatus(StatusCode.INTERNAL, 'FetchSnapshot goes through PeerPool.fetchSnapshot'));
      return;
    }
    if (this.lean !== null && request.method !== 'StreamSegments' && request.method !== 'JoinCluster') {
      this.startLean(requestId, to, request.method, request);
      return;
    }
    const client = this.clientFor(to);
    if (typeof client === 'string') {
      this.failSoon(requestId, rpcStatus(StatusCode.UNAVAILABLE, client));
      return;
    }
    const bytes = this.encodeOrFail(requestId, request);
    if (bytes === null) return;
    if (request.method === 'StreamSegments') {
      this.startStream(requestId, to, client, bytes);
    } else {
      this.startUnary(requestId, to, client, request.method, bytes);
    }
  }

  /**
   * fetchSnapshot runs FetchSnapshot against `to`: the header first, then file chunks, read from the
   * network only as fast as the caller iterates. A non-OK status, a silence longer than
   * snapshotIdleTimeoutMs or a stream out of protocol order is thrown as an RpcStatusError.
   * Leaving the loop early cancels the call.
   */
  fetchSnapshot(to: string, request: SnapshotRequest, options: FetchOptions = {}): AsyncIterable<SnapshotChunk> {
    const client = this.clientFor(to);
    return snapshotChunks(client, request, this.limits, options);
  }

  /**
   * openSnapshot is fetchSnapshot split for an installer: it resolves with the header once it has
   * arrived, and `files` yields the file chunks (e.g. into the storage layer's install(header, files)).
   */
  openSnapshot(to: string, request: SnapshotRequest, options: FetchOptions = {}): Promise<SnapshotParts> {
    return splitSnapshot(this.fetchSnapshot(to, request, options));
  }

  /** cancel ends a call in flight; its outcome is then callFailed CANCELLED. */
  cancel(requestId: number): void {
    this.inflight.get(requestId)?.cancel();
  }

  /** closePeer cancels the calls to `to` and drops its channel (e.g. the member was removed). */
  closePeer(to: string): void {
    for (const call of this.inflight.values()) if (call.to === to) call.cancel();
    this.clients.get(to)?.close();
    this.clients.delete(to);
    this.lean?.closePeer(to);
  }

  /** close cancels every call in flight and closes every channel; later sends fail UNAVAILABLE. */
  close(): void {
    this.closed = true;
    for (const call of [...this.inflight.values()]) call.cancel();
    for (const client of this.clients.values()) client.close();
    this.clients.clear();
    this.lean?.close();
  }

  /** clientFor returns the peer's client, or why there is none. */
  private clientFor(to: string): grpc.Client | string {
    if (this.closed) return 'peer pool is closed';
    const existing = this.clients.get(to);
    if (existing) return existing;
    if (to.trim() === '') return 'no peer address';
    try {
      const channelOptions = { ...clientChannelOptions(this.limits), ...this.options.channelOptions };
      const client = new grpc.Client(grpcTarget(to, channelOptions), this.options.credentials, channelOptions);
      this.clients.set(to, client);
      return client;
    } catch (err) {
      return `cannot dial ${JSON.stringify(to)}: ${err instanceof Error ? err.message : String(err)}`;
    }
  }

  private startUnary(requestId: number, to: string, client: grpc.Client, method: UnaryMethod, bytes: Buffer): void {
    const deadlineMs = method === 'JoinCluster' ? this.limits.joinDeadlineMs : this.limits.unaryDeadlineMs;
    const call = client.makeUnaryRequest<Buffer, Buffer>(
      methodPath(method),
      identity,
      identity,
      bytes,
      new grpc.Metadata(),
      { deadline: Date.now() + deadlineMs },
      (err, value) => {
        this.inflight.delete(requestId);
        if (err) {
          this.deliver({ type: 'callFailed', requestId, status: fromStatusObject(err) });
          return;
        }
        this.deliverAnswer(requestId, to, method, value ?? Buffer.alloc(0));
      },
    );
    this.inflight.set(requestId, { to, cancel: () => call.cancel() });
  }

  /** startLean runs a unary call on the lean client; its outcome is delivered as startUnary's would be. */
  private startLean(
    requestId: number,
    to: string,
    method: Exclude<UnaryMethod, 'JoinCluster'>,
    request: RpcRequest,
  ): void {
    if (to.trim() === '') {
      this.failSoon(requestId, rpcStatus(StatusCode.UNAVAILABLE, 'no peer address'));
      return;
    }
    const bytes = this.encodeOrFail(requestId, request);
    if (bytes === null) return;
    const cancel = this.lean!.call(to, methodPath(method), bytes, this.limits.unaryDeadlineMs, (outcome) => {
      this.inflight.delete(requestId);
      if (!outcome.ok) {
        this.deliver({ type: 'callFailed', requestId, status: outcome.status });
        return;
      }
      this.deliverAnswer(requestId, to, method, outcome.message);
    });
    this.inflight.set(requestId, { to, cancel });
  }

  /** deliverAnswer decodes a unary answer into a response, or a callFailed INTERNAL when it does not decode. */
  private deliverAnswer(requestId: number, to: string, method: UnaryMethod, value: Buffer): void {
    try {
      const response = decodeResponse(method, value);
      if (response.method === 'ShipSegment') stamp('ship.acked', response.body.appliedSeqno, to);
      else if (response.method === 'Heartbeat') stamp('heartbeat.acked', 0, to);
      this.deliver({ type: 'response', requestId, response });
    } catch (decodeErr) {
      this.deliver({
        type: 'callFailed',
        requestId,
        status: rpcStatus(StatusCode.INTERNAL, `malformed ${method} response: ${String(decodeErr)}`),
      });
    }
  }

  private startStream(requestId: number, to: string, client: grpc.Client, bytes: Buffer): void {
    const call = client.makeServerStreamRequest<Buffer, Buffer>(
      methodPath('StreamSegments'),
      identity,
      identity,
      bytes,
      new grpc.Metadata(),
      { deadline: Date.now() + this.limits.streamDeadlineMs },
    );
    let failure: RpcStatus | null = null;
    let status: grpc.StatusObject | null = null;
    let ended = false;
    let reported = false;
    // The outcome waits for both 'status' and 'end', so every chunk is delivered before it.
    const maybeReport = (): void => {
      if (reported || !ended || (status === null && failure === null)) return;
      reported = true;
      this.inflight.delete(requestId);
      if (failure !== null) {
        this.deliver({ type: 'callFailed', requestId, status: failure });
      } else if (status!.code === grpc.status.OK) {
        this.deliver({ type: 'streamEnded', requestId });
      } else {
        this.deliver({ type: 'callFailed', requestId, status: fromStatusObject(status!) });
      }
    };
    call.on('data', (message: Buffer) => {
      if (failure !== null) return;
      try {
        const chunk = decodeSegmentChunk(message);
        if (chunk.eventCount > 0) stamp('ship.received', chunk.leaderLastSeq);
        this.deliver({ type: 'streamChunk', requestId, chunk });
      } catch (err) {
        failure = rpcStatus(StatusCode.INTERNAL, `malformed StreamSegments chunk: ${String(err)}`);
        call.cancel();
      }
    });
    call.on('error', () => {
      // The same outcome arrives as 'status'; listening keeps the stream from throwing it.
    });
    call.on('status', (received: grpc.StatusObject) => {
      status = received;
      maybeReport();
    });
    call.on('end', () => {
      ended = true;
      maybeReport();
    });
    this.inflight.set(requestId, { to, cancel: () => call.cancel() });
  }

  /** failSoon reports a failure on a later tick, as a real call would, never inside send(). */
  /** encodeOrFail is the request's bytes, or null after failing the call INTERNAL (a request that does not encode). */
  private encodeOrFail(requestId: number, request: RpcRequest): Buffer | null {
    try {
      return encodeRequest(request);
    } catch (err) {
      this.failSoon(requestId, rpcStatus(StatusCode.INTERNAL, `request does not encode: ${String(err)}`));
      return null;
    }
  }

  private failSoon(requestId: number, status: RpcStatus, tracked = true): void {
    if (tracked) this.inflight.set(requestId, { to: '', cancel: () => {} });
    setImmediate(() => {
      if (tracked) this.inflight.delete(requestId);
      this.deliver({ type: 'callFailed', requestId, status });
    });
  }

  private deliver(input: TransportInput): void {
    try {
      this.options.deliver(input);
    } catch (err) {
      this.options.onWarning?.(`deliver threw for ${input.type} of request ${input.requestId}: ${String(err)}`);
    }
  }
}
