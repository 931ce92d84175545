// Heartbeats on an open call (svc.peer.v1 HeartbeatStream; docs/protocol.md, "Heartbeats on an open call"),
// both halves. A read at the leader waits for a heartbeat round (engine/read-index.ts): one Heartbeat to a
// follower and its answer. As a unary call that round trip costs both processes a new HTTP/2 stream,
// metadata, a deadline timer and status trailers (bench/unary-call.ts: lean unary 489-709 µs, a message each
// way on an open stream 156-234 µs); bench/read-timeline.ts shows the two hops are most of a lone read at the
// leader. So the leader keeps one HeartbeatStream call open to each member and sends each Heartbeat as a
// message on it, under the engine's request id.
//
// Only the carriage changes. Each message holds the spec's HeartbeatRequest, which the server decodes and
// checks exactly as it does the unary call's (decodeCheckedRequest, then the gate's claims: leader_region
// must be the certificate's member), and hands to the same PeerHandler as a call of method Heartbeat whose
// sink writes the answer back under the request id: the engine sees the same `request` input and its
// reply/replyError the same answer, so the read index's rounds (a voter's accepted answer, sent after it
// received a Heartbeat the leader sent after the read arrived) mean what they meant. The caller's
// certificate and cluster id are checked once, when the call opens (the server's guard, membersOnly).
//
// The client delivers each answer as the unary call's outcome would be (`response`, or `callFailed` with the
// status), so the engine cannot tell the two apart. A peer that does not serve the method (UNIMPLEMENTED: an
// older binary) gets its heartbeats as unary calls again (`fallback`), asked again after
// HEARTBEAT_STREAM_UNSUPPORTED_RETRY_MS. A request unanswered by its deadline (unaryDeadlineMs, as the unary
// call's) fails DEADLINE_EXCEEDED and ends the call, so the next heartbeat opens a new one rather than queue
// behind a connection that may be dead; a call that ends fails its open requests with its status.
import * as grpc from '@grpc/grpc-js';
import { StatusCode, type RpcRequest, type RpcResponse, type RpcStatus } from '../../engine/rpc.js';
import {
  HeartbeatStreamRequest,
  HeartbeatStreamResponse,
  PeerStreamsService,
} from '../../proto/gen/svc/peer/v1/peer.js';
import type { CallEnd, CallSink, PeerHandler } from './call-sink.js';
import type { TransportInput } from './client.js';
import type { GrpcLimits } from './limits.js';
import { decodeResponse, encodeRequest, encodeResponse, identity } from './methods.js';
import type { PeerGate, RefusalReason } from './peer-gate.js';
import { callerOf } from './peer-identity.js';
import { grpcTarget } from './peer-resolver.js';
import { fromStatusObject, rpcStatus, statusFromCode } from './status.js';
import { decodeCheckedRequest } from './validate.js';
import { stamp } from '../node/write-trace.js';

/** HEARTBEAT_STREAM_SERVICE names the service for the server's guard and its refusal counts. */
export const HEARTBEAT_STREAM_SERVICE = 'svc.peer.v1.PeerStreams';
/**
 * HEARTBEAT_STREAM_CALL_ID_BASE: a streamed heartbeat's call id, as the PeerHandler and the engine know it, is
 * this plus a count; the server's own calls count up from 1 and never reach it (2^40 calls).
 */
export const HEARTBEAT_STREAM_CALL_ID_BASE = 2 ** 40;
/** HEARTBEAT_STREAM_UNSUPPORTED_RETRY_MS: how long a peer that answered UNIMPLEMENTED gets unary heartbeats. */
export const HEARTBEAT_STREAM_UNSUPPORTED_RETRY_MS = 60_000;
/**
 * HEARTBEAT_STREAM_OPEN_REQUEST_COUNT_MAX: the heartbeats one call may have unanswered at a server. A leader
 * has one or two in flight per member (a periodic round and a read round); more means a stuck engine.
 */
export const HEARTBEAT_STREAM_OPEN_REQUEST_COUNT_MAX = 64;
/** HEARTBEAT_STREAM_IDLE_MS: a call with no open request for this long is ended (this node stopped leading). */
export const HEARTBEAT_STREAM_IDLE_MS = 30_000;

type HeartbeatRequest = Extract<RpcRequest, { method: 'Heartbeat' }>;

/** heartbeatStreamDefinition registers HeartbeatStream with byte-for-byte serializers. */
export function heartbeatStreamDefinition(): grpc.ServiceDefinition {
  return {
    heartbeatStream: {
      path: PeerStreamsService.heartbeatStream.path,
      requestStream: true,
      responseStream: true,
      requestSerialize: identity,
      requestDeserialize: identity,
      responseSerialize: identity,
      responseDeserialize: identity,
    },
  };
}

// ---------------------------------------------------------------- server half

export interface HeartbeatStreamServerOptions {
  handler: PeerHandler;
  limits: GrpcLimits;
  /** gate judges each heartbeat's claims as it judges the unary call's (absent: no checks, as PeerServer). */
  gate?: PeerGate;
  /** openRequestCountMax bounds the heartbeats one call may have unanswered; more are answered RESOURCE_EXHAUSTED. */
  openRequestCountMax: number;
  onWarning?: (message: string) => void;
  onRefused?: (reason: RefusalReason) => void;
}

/** HeartbeatStreamServer serves HeartbeatStream calls and can end them (a stopping node must not wait on them). */
export class HeartbeatStreamServer {
  private readonly calls = new Set<grpc.ServerDuplexStream<Buffer, Buffer>>();
  private nextCallId = HEARTBEAT_STREAM_CALL_ID_BASE;

  constructor(private readonly options: HeartbeatStreamServerOptions) {}

  get openCallCount(): number {
    return this.calls.size;
  }

  /** implementation: the service's handlers, to register behind the server's guard (peer certificates, members). */
  implementation(): grpc.UntypedServiceImplementation {
    return { heartbeatStream: this.serve };
  }

  readonly serve = (call: grpc.ServerDuplexStream<Buffer, Buffer>): void => {
    const { options } = this;
    this.calls.add(call);
    const caller = callerOf(call);
    const callerName = caller.tls && caller.identity !== null ? caller.identity.name : '';
    const peer = call.getPeer();
    const open = new Map<number, StreamedHeartbeat>();
    let ended = false;
    const send = (message: HeartbeatStreamResponse): void => {
      if (!ended) call.write(Buffer.from(HeartbeatStreamResponse.encode(message).finish()));
    };
    const fail = (requestId: number, status: RpcStatus): void =>
      send({
        requestId,
        statusCode: status.code,
        details: status.details,
        heartbeat: EMPTY,
        trailers: status.trailers,
      });
    const finish = (): void => {
      if (ended) return;
      ended = true;
      this.calls.delete(call);
      const left = [...open.values()];
      open.clear();
      for (const sink of left) sink.close({ code: StatusCode.CANCELLED, details: 'the heartbeat stream ended' });
    };
    call.on('data', (bytes: Buffer) => {
      if (ended) return;
      let message: HeartbeatStreamRequest;
      try {
        message = HeartbeatStreamRequest.decode(bytes);
      } catch (err) {
        finish();
        call.emit('error', {
          code: grpc.status.INVALID_ARGUMENT,
          details: `malformed HeartbeatStream message: ${String(err)}`,
        });
        return;
      }
      const { requestId } = message;
      if (open.size >= options.openRequestCountMax) {
        fail(
          requestId,
          rpcStatus(
            StatusCode.RESOURCE_EXHAUSTED,
            `${open.size} heartbeats open on this HeartbeatStream call, at its limit of ${options.openRequestCountMax}`,
          ),
        );
        return;
      }
      const checked = decodeCheckedRequest('Heartbeat', message.heartbeat, options.limits);
      if (!checked.ok) {
        options.onWarning?.(`HeartbeatStream Heartbeat from ${peer} refused: ${checked.status.details}`);
        fail(requestId, checked.status);
        return;
      }
      const verdict = options.gate?.walShipping(checked.request, caller);
      if (verdict && !verdict.pass) {
        options.onRefused?.(verdict.refusal.reason);
        options.onWarning?.(
          `HeartbeatStream Heartbeat from ${peer} refused (${verdict.refusal.reason}): ${verdict.refusal.details}`,
        );
        if (verdict.response) send(answerOf(requestId, verdict.response));
        // PERMISSION_DENIED is no code the engine names: the client turns it into UNAVAILABLE, as for a unary call.
        else
          fail(requestId, { code: verdict.refusal.code as StatusCode, details: verdict.refusal.details, trailers: {} });
        return;
      }
      const callId = this.nextCallId++;
      const sink = new StreamedHeartbeat(callId, peer, callerName, (outcome) => {
        open.delete(callId);
        if ('response' in outcome) send(answerOf(requestId, outcome.response));
        else fail(requestId, outcome.status);
        options.handler.onCallClosed?.(callId, {
          code: 'response' in outcome ? 0 : outcome.status.code,
          details: 'response' in outcome ? '' : outcome.status.details,
        });
      });
      sink.onClosed = (end) => options.handler.onCallClosed?.(callId, end);
      open.set(callId, sink);
      try {
        options.handler.onRequest(callId, checked.request, sink);
      } catch (err) {
        options.onWarning?.(`HeartbeatStream call ${callId}: handler threw: ${String(err)}`);
        sink.replyError(rpcStatus(StatusCode.INTERNAL, 'server handler failed'));
      }
    });
    call.on('end', () => {
      if (ended) return;
      finish();
      call.end();
    });
    call.on('error', finish);
    call.on('close', finish);
    call.on('cancelled', finish);
  };

  /** endAll ends every open call with UNAVAILABLE (their callers reopen, or fall back to unary calls). */
  endAll(details: string): void {
    for (const call of [...this.calls]) {
      this.calls.delete(call);
      call.emit('error', { code: grpc.status.UNAVAILABLE, details });
    }
  }
}

const EMPTY = new Uint8Array(0);

function answerOf(requestId: number, response: RpcResponse): HeartbeatStreamResponse {
  return { requestId, statusCode: 0, details: '', heartbeat: encodeResponse(response), trailers: {} };
}

type Outcome = { response: RpcResponse } | { status: RpcStatus };

/** StreamedHeartbeat is one heartbeat's CallSink: one reply or replyError, written back on the stream. */
class StreamedHeartbeat implements CallSink {
  readonly method = 'Heartbeat' as const;
  private done = false;
  /** onClosed hears when the stream ended before an answer (the handler's onCallClosed). */
  onClosed: (end: CallEnd) => void = () => undefined;

  constructor(
    readonly callId: number,
    readonly peer: string,
    readonly callerName: string,
    private readonly answered: (outcome: Outcome) => void,
  ) {}

  get closed(): boolean {
    return this.done;
  }

  reply(response: RpcResponse): void {
    if (this.done) return;
    this.done = true;
    this.answered(
      response.method === 'Heartbeat'
        ? { response }
        : { status: rpcStatus(StatusCode.INTERNAL, `a ${response.method} answer to a Heartbeat`) },
    );
  }

  replyError(status: RpcStatus): void {
    if (this.done) return;
    this.done = true;
    this.answered({ status });
  }

  streamChunk(): void {
    this.replyError(rpcStatus(StatusCode.INTERNAL, 'a stream chunk answering a Heartbeat'));
  }

  streamEnd(): void {
    this.replyError(rpcStatus(StatusCode.INTERNAL, 'a stream end answering a Heartbeat'));
  }

  serveSnapshot(): void {
    this.replyError(rpcStatus(StatusCode.INTERNAL, 'a snapshot answering a Heartbeat'));
  }

  bufferedBytes(): number {
    return 0;
  }

  /** close: the stream ended before the answer; the answer, if it comes, is dropped. */
  close(end: CallEnd): void {
    if (this.done) return;
    this.done = true;
    this.onClosed(end);
  }
}

// ---------------------------------------------------------------- client half

export interface HeartbeatStreamsOptions {
  credentials: grpc.ChannelCredentials;
  /** channelOptions: the peer channel's (its interceptor adds the cluster id; a server-name override). */
  channelOptions: grpc.ChannelOptions;
  limits: GrpcLimits;
  /** deliver receives each heartbeat's outcome, as PeerPool's would be: `response` or `callFailed`. */
  deliver: (input: TransportInput) => void;
  /** fallback sends a heartbeat as the unary call (a peer that does not serve HeartbeatStream). */
  fallback: (requestId: number, to: string, request: HeartbeatRequest) => void;
  onWarning?: (message: string) => void;
}

interface Open {
  request: HeartbeatRequest;
  timer: NodeJS.Timeout;
}

/** PeerStream is one address's call and what is open on it. */
interface PeerStream {
  client: grpc.Client;
  call: grpc.ClientDuplexStream<Buffer, Buffer> | null;
  open: Map<number, Open>;
  idleTimer: NodeJS.Timeout | null;
  /** unsupportedUntil: Date.now() before which this peer gets unary heartbeats (it answered UNIMPLEMENTED). */
  unsupportedUntil: number;
}

/** HeartbeatStreams sends heartbeats to each address over one open HeartbeatStream call (the file comment). */
export class HeartbeatStreams {
  private readonly peers = new Map<string, PeerStream>();
  private closed = false;
  /** callsOpened counts the calls started, streamed counts the heartbeats sent on them (tests, metrics). */
  callsOpened = 0;
  streamed = 0;

  constructor(private readonly options: HeartbeatStreamsOptions) {}

  /** send carries one Heartbeat to `to`; its outcome is delivered as a unary call's would be. */
  send(requestId: number, to: string, request: HeartbeatRequest): void {
    const peer = this.closed || to.trim() === '' ? null : this.peerFor(to);
    if (peer === null || Date.now() < peer.unsupportedUntil) {
      this.options.fallback(requestId, to, request);
      return;
    }
    const call = peer.call ?? this.start(to, peer);
    if (peer.idleTimer) {
      clearTimeout(peer.idleTimer);
      peer.idleTimer = null;
    }
    const deadlineMs = this.options.limits.unaryDeadlineMs;
    const timer = setTimeout(() => {
      if (!peer.open.delete(requestId)) return;
      this.options.deliver({
        type: 'callFailed',
        requestId,
        status: rpcStatus(StatusCode.DEADLINE_EXCEEDED, `Heartbeat not answered within ${deadlineMs} ms`),
      });
      // The connection may be dead: the next heartbeat opens a new call.
      if (peer.call === call) this.endCall(peer, rpcStatus(StatusCode.UNAVAILABLE, 'an earlier heartbeat timed out'));
    }, deadlineMs);
    peer.open.set(requestId, { request, timer });
    this.streamed++;
    call.write(Buffer.from(HeartbeatStreamRequest.encode({ requestId, heartbeat: encodeRequest(request) }).finish()));
  }

  /** closePeer ends the call to `to` (its open heartbeats fail UNAVAILABLE) and drops its channel. */
  closePeer(to: string): void {
    const peer = this.peers.get(to);
    if (!peer) return;
    this.peers.delete(to);
    this.endCall(peer, rpcStatus(StatusCode.UNAVAILABLE, 'peer closed'));
    peer.client.close();
  }

  /** close ends every call; later heartbeats go to `fallback`. */
  close(): void {
    this.closed = true;
    for (const to of [...this.peers.keys()]) this.closePeer(to);
  }

  private peerFor(to: string): PeerStream | null {
    const existing = this.peers.get(to);
    if (existing) return existing;
    try {
      const client = new grpc.Client(grpcTarget(to, this.options.channelOptions), this.options.credentials, {
        ...this.options.channelOptions,
      });
      const peer: PeerStream = { client, call: null, open: new Map(), idleTimer: null, unsupportedUntil: 0 };
      this.peers.set(to, peer);
      return peer;
    } catch (err) {
      this.options.onWarning?.(`cannot dial ${JSON.stringify(to)} for HeartbeatStream: ${String(err)}`);
      return null;
    }
  }

  private start(to: string, peer: PeerStream): grpc.ClientDuplexStream<Buffer, Buffer> {
    const call = peer.client.makeBidiStreamRequest<Buffer, Buffer>(
      PeerStreamsService.heartbeatStream.path,
      identity,
      identity,
      new grpc.Metadata(),
    );
    peer.call = call;
    this.callsOpened++;
    call.on('data', (bytes: Buffer) => this.onAnswer(to, peer, call, bytes));
    call.on('error', (err: grpc.ServiceError) => this.onCallEnded(to, peer, call, err));
    call.on('end', () =>
      this.onCallEnded(to, peer, call, {
        code: grpc.status.UNAVAILABLE,
        details: 'the peer ended the HeartbeatStream',
      }),
    );
    return call;
  }

  private onAnswer(to: string, peer: PeerStream, call: grpc.ClientDuplexStream<Buffer, Buffer>, bytes: Buffer): void {
    let message: HeartbeatStreamResponse;
    let input: TransportInput;
    try {
      message = HeartbeatStreamResponse.decode(bytes);
      input =
        message.statusCode === 0
          ? { type: 'response', requestId: message.requestId, response: decodeResponse('Heartbeat', message.heartbeat) }
          : {
              type: 'callFailed',
              requestId: message.requestId,
              status: statusFromCode(message.statusCode, message.details, message.trailers),
            };
    } catch (err) {
      // An answer we cannot read may belong to any heartbeat: end the call, fail them all.
      if (peer.call === call)
        this.endCall(
          peer,
          rpcStatus(StatusCode.INTERNAL, `malformed HeartbeatStream answer from ${to}: ${String(err)}`),
        );
      return;
    }
    const open = peer.open.get(message.requestId);
    if (!open) return; // timed out already
    peer.open.delete(message.requestId);
    clearTimeout(open.timer);
    if (input.type === 'response') stamp('heartbeat.acked', 0, to);
    this.deliver(input);
    this.idleWhenDone(peer);
  }

  private onCallEnded(
    to: string,
    peer: PeerStream,
    call: grpc.ClientDuplexStream<Buffer, Buffer>,
    status: Pick<grpc.StatusObject, 'code' | 'details'> & { metadata?: grpc.Metadata | null },
  ): void {
    if (peer.call !== call) return;
    peer.call = null;
    const open = [...peer.open.entries()];
    peer.open.clear();
    for (const [, o] of open) clearTimeout(o.timer);
    if (status.code === grpc.status.UNIMPLEMENTED) {
      peer.unsupportedUntil = Date.now() + HEARTBEAT_STREAM_UNSUPPORTED_RETRY_MS;
      this.options.onWarning?.(`${to} does not serve HeartbeatStream: heartbeats go as unary calls`);
      for (const [requestId, o] of open) this.options.fallback(requestId, to, o.request);
      return;
    }
    const failed = fromStatusObject(status);
    for (const [requestId] of open) this.deliver({ type: 'callFailed', requestId, status: failed });
  }

  /** endCall ends the peer's call now; its open heartbeats fail with `status`. */
  private endCall(peer: PeerStream, status: RpcStatus): void {
    const call = peer.call;
    peer.call = null;
    if (peer.idleTimer) clearTimeout(peer.idleTimer);
    peer.idleTimer = null;
    const open = [...peer.open.entries()];
    peer.open.clear();
    for (const [requestId, o] of open) {
      clearTimeout(o.timer);
      this.deliver({ type: 'callFailed', requestId, status });
    }
    call?.cancel();
  }

  private idleWhenDone(peer: PeerStream): void {
    if (peer.open.size > 0 || !peer.call || peer.idleTimer) return;
    peer.idleTimer = setTimeout(() => {
      peer.idleTimer = null;
      if (peer.open.size > 0 || !peer.call) return;
      const call = peer.call;
      peer.call = null;
      call.end();
    }, HEARTBEAT_STREAM_IDLE_MS);
    peer.idleTimer.unref();
  }

  private deliver(input: TransportInput): void {
    try {
      this.options.deliver(input);
    } catch (err) {
      this.options.onWarning?.(`deliver threw for request ${input.requestId}: ${String(err)}`);
    }
  }
}
