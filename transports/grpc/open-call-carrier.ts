// Unary peer calls carried as messages on one long-lived call per peer (svc.peer.v1 PeerStreams;
// docs/protocol.md, "Heartbeats on an open call" and "ReportApplied on an open call"), both halves, for any
// one WalShipping method: HeartbeatStream carries a leader's Heartbeats (heartbeat-stream.ts), ReportStream a
// follower's ReportApplied (report-stream.ts). A unary call costs both processes a new HTTP/2 stream, metadata, a deadline timer and
// status trailers (bench/unary-call.ts: lean unary 489-709 µs, a message each way on an open stream
// 156-234 µs); a read at the leader waits for a heartbeat round trip and a write for a report's, so those
// two methods go as messages on an open call, under the engine's request id. This file is the one
// implementation of that carriage; a kind (OpenCallKind) names the method, its rpc and its message codec.
//
// Only the carriage changes. Each message holds the spec's request for the method, which the server decodes
// and checks exactly as it does the unary call's (decodeCheckedRequest, then the gate's claims: the sender a
// message names must be the certificate's member), and hands to the same PeerHandler as a call of that
// method whose sink writes the answer back under the request id: the engine sees the same `request` input and
// its reply/replyError the same answer. The caller's certificate and cluster id are checked once, when the
// call opens (the server's guard, membersOnly).
//
// The client delivers each answer as the unary call's outcome would be (`response`, or `callFailed` with the
// status), so the engine cannot tell the two apart. A peer that does not serve the rpc (UNIMPLEMENTED: an
// older binary) gets that method as unary calls again (`fallback`), asked again after
// OPEN_CALL_UNSUPPORTED_RETRY_MS. A request unanswered by its deadline (unaryDeadlineMs, as the unary call's)
// fails DEADLINE_EXCEEDED and ends the call, so the next request opens a new one rather than queue behind a
// connection that may be dead; a call that ends fails its open requests with its status.
//
// Why our own: grpc-js has no multiplexing of unary calls over a stream, and the requests must keep the
// engine's request ids and the unary call's statuses, which no npm package we found does.
import * as grpc from '@grpc/grpc-js';
import {
  CLOSED_HERE_DETAILS_PREFIX,
  StatusCode,
  type RpcRequest,
  type RpcResponse,
  type RpcStatus,
} from '../../engine/rpc.js';
import type { CallEnd, CallSink, PeerHandler } from './call-sink.js';
import type { TransportInput } from './client.js';
import type { GrpcLimits } from './limits.js';
import { decodeResponse, encodeRequest, encodeResponse, identity } from './methods.js';
import type { PeerGate, RefusalReason } from './peer-gate.js';
import { callerOf } from './peer-identity.js';
import { grpcTarget } from './peer-resolver.js';
import { ServerBidiCalls, overOpenRequestLimit } from './server-bidi-calls.js';
import { fromStatusObject, rpcStatus, statusFromCode } from './status.js';
import { decodeCheckedRequest } from './validate.js';

/** PEER_STREAMS_SERVICE names the service for the server's guard and its refusal counts. */
export const PEER_STREAMS_SERVICE = 'svc.peer.v1.PeerStreams';
/** OPEN_CALL_UNSUPPORTED_RETRY_MS: how long a peer that answered UNIMPLEMENTED gets the method as unary calls. */
export const OPEN_CALL_UNSUPPORTED_RETRY_MS = 60_000;
/**
 * OPEN_CALL_OPEN_REQUEST_COUNT_MAX: the requests one call may have unanswered at a server. A leader has one or
 * two heartbeats in flight per member, a follower a report or two to its leader; more means a stuck engine.
 */
export const OPEN_CALL_OPEN_REQUEST_COUNT_MAX = 64;
/**
 * OPEN_CALL_IDLE_MS: a call with no open request for this long is ended. The node ends a call to a member that
 * stopped leading or left at once (OpenCalls.retain); this is the backstop for anything else left unused.
 */
export const OPEN_CALL_IDLE_MS = 30_000;

/** CarriedMethod: the WalShipping methods carried on open calls. */
export type CarriedMethod = 'Heartbeat' | 'ReportApplied';
type RequestOf<M extends CarriedMethod> = Extract<RpcRequest, { method: M }>;

/** OpenCallRequest / OpenCallAnswer: one rpc's messages, the payload field named generically. */
export interface OpenCallRequest {
  requestId: number;
  payload: Uint8Array;
}
export interface OpenCallAnswer {
  requestId: number;
  statusCode: number;
  details: string;
  payload: Uint8Array;
  trailers: { [key: string]: string };
}

/** OpenCallKind: what one rpc of PeerStreams carries and how its messages are coded. */
export interface OpenCallKind<M extends CarriedMethod> {
  method: M;
  /** rpcName names the rpc in messages, e.g. "HeartbeatStream". */
  rpcName: string;
  /** key: the rpc's key in the service definition and implementation, e.g. "heartbeatStream". */
  key: string;
  path: string;
  /**
   * callIdBase: a carried request's call id, as the PeerHandler and the engine know it, is this plus a count;
   * the server's own calls count up from 1 and never reach it, nor does another kind's count reach the next base.
   */
  callIdBase: number;
  encodeRequest(message: OpenCallRequest): Uint8Array;
  decodeRequest(bytes: Uint8Array): OpenCallRequest;
  encodeAnswer(message: OpenCallAnswer): Uint8Array;
  decodeAnswer(bytes: Uint8Array): OpenCallAnswer;
  /** acked: a request was answered OK (the write-trace stamp, if any). */
  acked?: (to: string) => void;
}

/** Coded: a generated message's codec (ts-proto's MessageFns). */
interface Coded<T> {
  encode(message: T): { finish(): Uint8Array };
  decode(bytes: Uint8Array): T;
}
type WithPayload<F extends string> = { [K in F]: Uint8Array };

/**
 * payloadCodec codes a kind's rpc messages from its generated ones, whose payload field is named for what it
 * holds (`heartbeat`, `report`, `ack`): every PeerStreams rpc's messages have the same fields otherwise.
 */
export function payloadCodec<F extends string, G extends string>(
  requestField: F,
  request: Coded<{ requestId: number } & WithPayload<F>>,
  answerField: G,
  answer: Coded<Omit<OpenCallAnswer, 'payload'> & WithPayload<G>>,
): Pick<OpenCallKind<CarriedMethod>, 'encodeRequest' | 'decodeRequest' | 'encodeAnswer' | 'decodeAnswer'> {
  return {
    encodeRequest: ({ requestId, payload }) =>
      request.encode({ requestId, [requestField]: payload } as { requestId: number } & WithPayload<F>).finish(),
    decodeRequest: (bytes) => {
      const message = request.decode(bytes);
      return { requestId: message.requestId, payload: message[requestField] };
    },
    encodeAnswer: ({ payload, ...rest }) =>
      answer.encode({ ...rest, [answerField]: payload } as Omit<OpenCallAnswer, 'payload'> & WithPayload<G>).finish(),
    decodeAnswer: (bytes) => {
      const message = answer.decode(bytes);
      const { requestId, statusCode, details, trailers } = message;
      return { requestId, statusCode, details, trailers, payload: message[answerField] };
    },
  };
}

/** openCallDefinition registers a kind's rpc with byte-for-byte serializers. */
export function openCallDefinition(kind: OpenCallKind<CarriedMethod>): grpc.ServiceDefinition {
  return {
    [kind.key]: {
      path: kind.path,
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

export interface OpenCallServerOptions {
  handler: PeerHandler;
  limits: GrpcLimits;
  /** gate judges each request's claims as it judges the unary call's (absent: no checks, as PeerServer). */
  gate?: PeerGate;
  /** openRequestCountMax bounds the requests one call may have unanswered; more are answered RESOURCE_EXHAUSTED. */
  openRequestCountMax: number;
  onWarning?: (message: string) => void;
  onRefused?: (reason: RefusalReason) => void;
}

/** OpenCallServer serves one kind's calls and can end them (a stopping node must not wait on them). */
export class OpenCallServer<M extends CarriedMethod> {
  private readonly calls = new ServerBidiCalls();
  private nextCallId: number;

  constructor(
    private readonly kind: OpenCallKind<M>,
    private readonly options: OpenCallServerOptions,
  ) {
    this.nextCallId = kind.callIdBase;
  }

  get openCallCount(): number {
    return this.calls.size;
  }

  /** implementation: the rpc's handler, to register behind the server's guard (peer certificates, members). */
  implementation(): grpc.UntypedServiceImplementation {
    return { [this.kind.key]: this.serve };
  }

  readonly serve = (call: grpc.ServerDuplexStream<Buffer, Buffer>): void => {
    const { options, kind } = this;
    const caller = callerOf(call);
    const callerName = caller.tls && caller.identity !== null ? caller.identity.name : '';
    const peer = call.getPeer();
    const open = new Map<number, CarriedCall<M>>();
    // When the call ends, the requests still open on it end too (the handler hears onCallClosed).
    const tracked = this.calls.track(call, () => {
      const left = [...open.values()];
      open.clear();
      for (const sink of left) sink.close({ code: StatusCode.CANCELLED, details: `the ${kind.rpcName} call ended` });
    });
    const send = (message: OpenCallAnswer): void => {
      if (!tracked.ended) call.write(Buffer.from(kind.encodeAnswer(message)));
    };
    const fail = (requestId: number, status: RpcStatus): void =>
      send({ requestId, statusCode: status.code, details: status.details, payload: EMPTY, trailers: status.trailers });
    call.on('data', (bytes: Buffer) => {
      if (tracked.ended) return;
      let message: OpenCallRequest;
      try {
        message = kind.decodeRequest(bytes);
      } catch (err) {
        tracked.refuse(`malformed ${kind.rpcName} message: ${String(err)}`);
        return;
      }
      const { requestId } = message;
      if (open.size >= options.openRequestCountMax) {
        fail(
          requestId,
          rpcStatus(
            StatusCode.RESOURCE_EXHAUSTED,
            overOpenRequestLimit(open.size, options.openRequestCountMax, kind.rpcName),
          ),
        );
        return;
      }
      const checked = decodeCheckedRequest(kind.method, message.payload, options.limits);
      if (!checked.ok) {
        options.onWarning?.(`${kind.rpcName} ${kind.method} from ${peer} refused: ${checked.status.details}`);
        fail(requestId, checked.status);
        return;
      }
      const verdict = options.gate?.walShipping(checked.request, caller);
      if (verdict && !verdict.pass) {
        options.onRefused?.(verdict.refusal.reason);
        options.onWarning?.(
          `${kind.rpcName} ${kind.method} from ${peer} refused (${verdict.refusal.reason}): ${verdict.refusal.details}`,
        );
        if (verdict.response) send(answerOf(requestId, verdict.response));
        // PERMISSION_DENIED is no code the engine names: the client turns it into UNAVAILABLE, as for a unary call.
        else
          fail(requestId, { code: verdict.refusal.code as StatusCode, details: verdict.refusal.details, trailers: {} });
        return;
      }
      const callId = this.nextCallId++;
      const sink = new CarriedCall(kind.method, callId, peer, callerName, (outcome) => {
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
        options.onWarning?.(`${kind.rpcName} call ${callId}: handler threw: ${String(err)}`);
        sink.replyError(rpcStatus(StatusCode.INTERNAL, 'server handler failed'));
      }
    });
  };

  /** endAll ends every open call with UNAVAILABLE (their callers reopen, or fall back to unary calls). */
  endAll(details: string): void {
    this.calls.endAll(details);
  }
}

const EMPTY = new Uint8Array(0);

function answerOf(requestId: number, response: RpcResponse): OpenCallAnswer {
  return { requestId, statusCode: 0, details: '', payload: encodeResponse(response), trailers: {} };
}

type Outcome = { response: RpcResponse } | { status: RpcStatus };

/** CarriedCall is one carried request's CallSink: one reply or replyError, written back on the stream. */
class CarriedCall<M extends CarriedMethod> implements CallSink {
  private done = false;
  /** readsSnapshotLayers: never a FetchSnapshot call (carried calls are unary requests). */
  readonly readsSnapshotLayers = false;
  /** onClosed hears when the stream ended before an answer (the handler's onCallClosed). */
  onClosed: (end: CallEnd) => void = () => undefined;

  constructor(
    readonly method: M,
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
      response.method === this.method
        ? { response }
        : { status: rpcStatus(StatusCode.INTERNAL, `a ${response.method} answer to a ${this.method}`) },
    );
  }

  replyError(status: RpcStatus): void {
    if (this.done) return;
    this.done = true;
    this.answered({ status });
  }

  streamChunk(): void {
    this.replyError(rpcStatus(StatusCode.INTERNAL, `a stream chunk answering a ${this.method}`));
  }

  streamEnd(): void {
    this.replyError(rpcStatus(StatusCode.INTERNAL, `a stream end answering a ${this.method}`));
  }

  serveSnapshot(): void {
    this.replyError(rpcStatus(StatusCode.INTERNAL, `a snapshot answering a ${this.method}`));
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

export interface OpenCallsOptions<M extends CarriedMethod> {
  credentials: grpc.ChannelCredentials;
  /** channelOptions: the peer channel's (its interceptor adds the cluster id; a server-name override). */
  channelOptions: grpc.ChannelOptions;
  limits: GrpcLimits;
  /** deliver receives each request's outcome, as PeerPool's would be: `response` or `callFailed`. */
  deliver: (input: TransportInput) => void;
  /** fallback sends a request as the unary call (a peer that does not serve the rpc). */
  fallback: (requestId: number, to: string, request: RequestOf<M>) => void;
  onWarning?: (message: string) => void;
}

interface Open<M extends CarriedMethod> {
  request: RequestOf<M>;
  timer: NodeJS.Timeout;
}

/** PeerCall is one address's call and what is open on it. */
interface PeerCall<M extends CarriedMethod> {
  client: grpc.Client;
  call: grpc.ClientDuplexStream<Buffer, Buffer> | null;
  open: Map<number, Open<M>>;
  idleTimer: NodeJS.Timeout | null;
  /** unsupportedUntil: Date.now() before which this peer gets unary calls (it answered UNIMPLEMENTED). */
  unsupportedUntil: number;
}

/** OpenCalls sends one kind's requests to each address over one open call (the file comment). */
export class OpenCalls<M extends CarriedMethod> {
  private readonly peers = new Map<string, PeerCall<M>>();
  private closed = false;
  /** callsOpened counts the calls started, streamed counts the requests sent on them (tests, metrics). */
  callsOpened = 0;
  streamed = 0;

  constructor(
    private readonly kind: OpenCallKind<M>,
    private readonly options: OpenCallsOptions<M>,
  ) {}

  /** send carries one request to `to`; its outcome is delivered as a unary call's would be. */
  send(requestId: number, to: string, request: RequestOf<M>): void {
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
      this.deliver({
        type: 'callFailed',
        requestId,
        status: rpcStatus(StatusCode.DEADLINE_EXCEEDED, `${this.kind.method} not answered within ${deadlineMs} ms`),
      });
      // The connection may be dead: the next request opens a new call.
      if (peer.call === call)
        this.endCall(peer, rpcStatus(StatusCode.UNAVAILABLE, `an earlier ${this.kind.method} timed out`));
    }, deadlineMs);
    peer.open.set(requestId, { request, timer });
    this.streamed++;
    call.write(Buffer.from(this.kind.encodeRequest({ requestId, payload: encodeRequest(request) })));
  }

  /** closePeer ends the call to `to` (its open requests fail UNAVAILABLE) and drops its channel. */
  closePeer(to: string, details = 'peer closed'): void {
    const peer = this.peers.get(to);
    if (!peer) return;
    this.peers.delete(to);
    this.endCall(peer, rpcStatus(StatusCode.UNAVAILABLE, details));
    peer.client.close();
  }

  /**
   * retain closes every peer not in `keep` (closePeer: UNAVAILABLE, the caller retries or falls back). The node
   * calls it when it learns a new leader or roster, so a call to a member that stopped leading, or left, ends
   * now rather than at OPEN_CALL_IDLE_MS: it could carry nothing useful until then.
   */
  retain(keep: ReadonlySet<string>, details: string): void {
    for (const to of [...this.peers.keys()])
      if (!keep.has(to)) this.closePeer(to, CLOSED_HERE_DETAILS_PREFIX + details);
  }

  /** openTo: the addresses with a call open now (tests, status). */
  get openTo(): string[] {
    return [...this.peers].filter(([, peer]) => peer.call !== null).map(([to]) => to);
  }

  /** close ends every call; later requests go to `fallback`. */
  close(): void {
    this.closed = true;
    for (const to of [...this.peers.keys()]) this.closePeer(to);
  }

  private peerFor(to: string): PeerCall<M> | null {
    const existing = this.peers.get(to);
    if (existing) return existing;
    try {
      const client = new grpc.Client(grpcTarget(to, this.options.channelOptions), this.options.credentials, {
        ...this.options.channelOptions,
      });
      const peer: PeerCall<M> = { client, call: null, open: new Map(), idleTimer: null, unsupportedUntil: 0 };
      this.peers.set(to, peer);
      return peer;
    } catch (err) {
      this.options.onWarning?.(`cannot dial ${JSON.stringify(to)} for ${this.kind.rpcName}: ${String(err)}`);
      return null;
    }
  }

  private start(to: string, peer: PeerCall<M>): grpc.ClientDuplexStream<Buffer, Buffer> {
    const call = peer.client.makeBidiStreamRequest<Buffer, Buffer>(
      this.kind.path,
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
        details: `the peer ended the ${this.kind.rpcName}`,
      }),
    );
    return call;
  }

  private onAnswer(to: string, peer: PeerCall<M>, call: grpc.ClientDuplexStream<Buffer, Buffer>, bytes: Buffer): void {
    let message: OpenCallAnswer;
    let input: TransportInput;
    try {
      message = this.kind.decodeAnswer(bytes);
      input =
        message.statusCode === 0
          ? {
              type: 'response',
              requestId: message.requestId,
              response: decodeResponse(this.kind.method, message.payload),
            }
          : {
              type: 'callFailed',
              requestId: message.requestId,
              status: statusFromCode(message.statusCode, message.details, message.trailers),
            };
    } catch (err) {
      // An answer we cannot read may belong to any request: end the call, fail them all.
      if (peer.call === call)
        this.endCall(
          peer,
          rpcStatus(StatusCode.INTERNAL, `malformed ${this.kind.rpcName} answer from ${to}: ${String(err)}`),
        );
      return;
    }
    const open = peer.open.get(message.requestId);
    if (!open) return; // timed out already
    peer.open.delete(message.requestId);
    clearTimeout(open.timer);
    if (input.type === 'response') this.kind.acked?.(to);
    this.deliver(input);
    this.idleWhenDone(peer);
  }

  private onCallEnded(
    to: string,
    peer: PeerCall<M>,
    call: grpc.ClientDuplexStream<Buffer, Buffer>,
    status: Pick<grpc.StatusObject, 'code' | 'details'> & { metadata?: grpc.Metadata | null },
  ): void {
    if (peer.call !== call) return;
    peer.call = null;
    const open = [...peer.open.entries()];
    peer.open.clear();
    for (const [, o] of open) clearTimeout(o.timer);
    if (status.code === grpc.status.UNIMPLEMENTED) {
      peer.unsupportedUntil = Date.now() + OPEN_CALL_UNSUPPORTED_RETRY_MS;
      this.options.onWarning?.(`${to} does not serve ${this.kind.rpcName}: ${this.kind.method} goes as unary calls`);
      for (const [requestId, o] of open) this.options.fallback(requestId, to, o.request);
      return;
    }
    const failed = fromStatusObject(status);
    for (const [requestId] of open) this.deliver({ type: 'callFailed', requestId, status: failed });
  }

  /** endCall ends the peer's call now; its open requests fail with `status`. */
  private endCall(peer: PeerCall<M>, status: RpcStatus): void {
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

  private idleWhenDone(peer: PeerCall<M>): void {
    if (peer.open.size > 0 || !peer.call || peer.idleTimer) return;
    peer.idleTimer = setTimeout(() => {
      peer.idleTimer = null;
      if (peer.open.size > 0 || !peer.call) return;
      const call = peer.call;
      peer.call = null;
      call.end();
    }, OPEN_CALL_IDLE_MS);
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
