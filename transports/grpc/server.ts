// The WalShipping gRPC server: all eight methods, each call decoded, checked
// against GrpcLimits and handed to a PeerHandler with a CallSink. It decides
// nothing itself about the protocol. Bad input (malformed protobuf, oversized
// messages, limits broken, unknown methods, vanished peers) ends that call with
// a named status while every other call carries on. With a PeerGate, each call's
// caller (its certificate and cluster id) is checked first, and the extra
// services it serves are guarded by the certificate role each one takes.
import * as grpc from '@grpc/grpc-js';
import { StatusCode, type RpcMethod, type RpcRequest, type UnaryMethod } from '../../engine/rpc.js';
import type { CallEnd, PeerHandler } from './call-sink.js';
import { serverChannelOptions } from './channel-options.js';
import { resolveGrpcLimits, type GrpcLimits } from './limits.js';
import { RPC_METHODS, identity, isUnaryMethod, methodPath, type StreamMethod } from './methods.js';
import { StreamCall, UnaryCall, type CallEnv } from './served-call.js';
import { encodeResponse } from './methods.js';
import type { PeerGate, Refusal, RefusalReason } from './peer-gate.js';
import { callerOf, type Caller, type CertRole } from './peer-identity.js';
import { SNAPSHOT_LAYERS_METADATA } from './snapshot-stream.js';
import { toServiceError } from './status.js';
import { decodeCheckedRequest } from './validate.js';
import {
  serveUnaryLean,
  type LeanServing,
  type LeanUnaryHandler,
  type UnaryRespond,
  type UnaryServerCall,
} from './lean-serve.js';
import { serveLeanConnections, type LeanConnections } from './lean-connections.js';

export type { CallEnd, CallSink, PeerHandler } from './call-sink.js';

export interface PeerServerOptions {
  handler: PeerHandler;
  /** credentials: serverCredentials(...) for mTLS, or insecureServerCredentials() when explicitly asked. */
  credentials: grpc.ServerCredentials;
  limits?: Partial<GrpcLimits>;
  /**
   * onWarning hears about bad input and handler misuse; the server never throws them. `kind` names the
   * sort of warning (`refused:<reason>`, `rejected`, `handler`) so a caller can cap each sort's log lines:
   * peers drive most of them.
   */
  onWarning?: (message: string, kind: string) => void;
  /** services are more gRPC services to serve beside WalShipping, on the same port and credentials. */
  services?: ExtraService[];
  /**
   * gate checks every call's caller before anything else (peer-gate.ts): WalShipping takes peer
   * certificates, each extra service the `role` it names. Absent: every caller passes (tests of the
   * transport alone).
   */
  gate?: PeerGate;
  /** onRefused hears of each call the gate refused, with the reason (a metric label). */
  onRefused?: (reason: RefusalReason, service: string, details: string) => void;
  /**
   * leanUnary (default true) serves WalShipping's unary methods and the unary methods of each extra service that
   * asks for it (`leanUnary`) on the HTTP/2 stream directly (lean-serve.ts), with the same checks and handlers;
   * false: every call through grpc-js's server.
   */
  leanUnary?: boolean;
  /**
   * leanConnections (default true, with leanUnary): a client that marks its connection (lean-connections.ts:
   * lean-unary.ts's dial does) has its unary calls of the lean routes served on transports/h2's framing; every
   * other connection is grpc-js's as before.
   */
  leanConnections?: boolean;
}

/** ExtraService is a service served beside WalShipping; `role` is the certificate role its callers need. */
export interface ExtraService {
  /** name is the service's name in refusals and logs, e.g. "svc.store.v1.Store". */
  name?: string;
  definition: grpc.ServiceDefinition;
  implementation: grpc.UntypedServiceImplementation;
  role?: CertRole;
  /** membersOnly: the certificate's name must also be in the node's roster (svc.store.v1: only members write or read). */
  membersOnly?: boolean;
  /**
   * memberMethods: methods that also take a member's peer certificate (of a name in the roster), besides `role`;
   * the handler limits what such a caller may do (svc.admin.v1 ChangeMember: a member may make itself leave).
   */
  memberMethods?: readonly string[];
  /** leanUnary: serve this service's unary methods on the lean path too (when the server's leanUnary is on). */
  leanUnary?: boolean;
}

export interface PeerServerStats {
  activeCallCount: number;
  /** bufferedBytes sums what the active streams hold in memory. */
  bufferedBytes: number;
  /** rejectedCallCount counts calls refused before reaching the handler (malformed, over a limit). */
  rejectedCallCount: number;
  handlerErrorCount: number;
  /** leanCallCount counts the calls served on the lean path (lean-serve.ts and lean connections); 0 when it is off. */
  leanCallCount: number;
  /** leanConnectionCount counts the connections served on transports/h2's framing (lean-connections.ts). */
  leanConnectionCount: number;
}

/** serviceDefinition registers the eight paths with byte-for-byte (identity) serializers. */
function serviceDefinition(): grpc.ServiceDefinition {
  const definition: Record<string, grpc.MethodDefinition<Buffer, Buffer>> = {};
  for (const method of RPC_METHODS) {
    definition[method] = {
      path: methodPath(method),
      requestStream: false,
      responseStream: !isUnaryMethod(method),
      requestSerialize: identity,
      requestDeserialize: identity,
      responseSerialize: identity,
      responseDeserialize: identity,
    };
  }
  return definition;
}

export class PeerServer {
  private readonly server: grpc.Server;
  private readonly limits: GrpcLimits;
  private readonly active = new Map<number, UnaryCall | StreamCall>();
  private readonly env: CallEnv;
  private nextCallId = 1;
  private rejectedCallCount = 0;
  private handlerErrorCount = 0;
  private boundPort = 0;
  /** leanRoutes: the unary paths the lean path may serve, each with the handler grpc-js has for it. */
  private readonly leanRoutes = new Map<string, LeanUnaryHandler>();
  private lean: LeanServing | null = null;
  private leanConnections: LeanConnections | null = null;

  private constructor(private readonly options: PeerServerOptions) {
    this.limits = resolveGrpcLimits(options.limits);
    this.server = new grpc.Server(serverChannelOptions(this.limits));
    this.env = {
      limits: this.limits,
      warn: (message) => this.warn(message),
      closed: (callId, end) => this.callClosed(callId, end),
    };
    const implementation: grpc.UntypedServiceImplementation = {};
    for (const method of RPC_METHODS) {
      if (isUnaryMethod(method)) {
        const unary = (call: UnaryServerCall, respond: UnaryRespond): void => this.onUnary(method, call, respond);
        implementation[method] = unary;
        this.leanRoutes.set(methodPath(method), unary);
      } else {
        implementation[method] = (call: grpc.ServerWritableStream<Buffer, Buffer>) => this.onStream(method, call);
      }
    }
    this.server.addService(serviceDefinition(), implementation);
    for (const extra of options.services ?? []) {
      const guarded = this.guarded(extra);
      this.server.addService(extra.definition, guarded);
      if (extra.leanUnary !== true) continue;
      for (const [name, method] of Object.entries(extra.definition)) {
        const handler = guarded[name];
        if (method.requestStream || method.responseStream || handler === undefined) continue;
        this.leanRoutes.set(method.path, handler as LeanUnaryHandler);
      }
    }
  }

  /** listen binds `address` (host:port; port 0 picks a free one) and starts serving. */
  static async listen(address: string, options: PeerServerOptions): Promise<PeerServer> {
    const peerServer = new PeerServer(options);
    peerServer.boundPort = await new Promise<number>((resolve, reject) => {
      peerServer.server.bindAsync(address, options.credentials, (err, port) => (err ? reject(err) : resolve(port)));
    });
    if (options.leanUnary !== false) {
      const lean = serveUnaryLean(peerServer.server, peerServer.leanRoutes, peerServer.limits);
      if (typeof lean === 'string') peerServer.warn(`unary calls served by grpc-js only: ${lean}`, 'lean-serve');
      else peerServer.lean = lean;
    }
    if (options.leanUnary !== false && options.leanConnections !== false) {
      const { limits } = peerServer;
      const connections = serveLeanConnections(peerServer.server, peerServer.leanRoutes, {
        messageBytesMax: limits.messageBytesMax,
        concurrentStreamCountMax: limits.maxConcurrentStreamsPerConnection,
        keepaliveTimeMs: limits.keepaliveTimeMs,
        keepaliveTimeoutMs: limits.keepaliveTimeoutMs,
      });
      if (typeof connections === 'string')
        peerServer.warn(`no lean connections (unary calls on node:http2 only): ${connections}`, 'lean-serve');
      else peerServer.leanConnections = connections;
    }
    return peerServer;
  }

  /** unaryServing names what serves the hot unary calls: the lean path, or grpc-js (off, or grpc-js changed). */
  get unaryServing(): 'lean' | 'grpc-js' {
    return this.lean === null ? 'grpc-js' : 'lean';
  }

  get port(): number {
    return this.boundPort;
  }

  stats(): PeerServerStats {
    let bufferedBytes = 0;
    for (const call of this.active.values()) bufferedBytes += call.bufferedBytes();
    return {
      activeCallCount: this.active.size,
      bufferedBytes,
      rejectedCallCount: this.rejectedCallCount,
      handlerErrorCount: this.handlerErrorCount,
      leanCallCount: (this.lean?.calls ?? 0) + (this.leanConnections?.calls ?? 0),
      leanConnectionCount: this.leanConnections?.accepted ?? 0,
    };
  }

  /** close stops accepting calls, lets running ones finish for up to graceMs, then cancels the rest. */
  async close(graceMs = 1_000): Promise<void> {
    const graceful = new Promise<void>((resolve) => this.server.tryShutdown(() => resolve()));
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<'late'>((resolve) => {
      timer = setTimeout(() => resolve('late'), graceMs);
    });
    const leanClosed = this.leanConnections?.close(graceMs);
    const outcome = await Promise.race([graceful, deadline]);
    clearTimeout(timer);
    if (outcome === 'late') this.server.forceShutdown();
    await leanClosed;
    for (const call of [...this.active.values()]) call.peerGone();
  }

  private onUnary(method: UnaryMethod, call: UnaryServerCall, respond: UnaryRespond): void {
    const caller = callerOf(call);
    const refused = this.callerRefused(call, caller, 'peer', 'WalShipping');
    if (refused) {
      respond(refused, null);
      return;
    }
    const checked = decodeCheckedRequest(method, call.request, this.limits);
    if (!checked.ok) {
      this.reject(method, call.getPeer(), checked.status.details);
      respond(toServiceError(checked.status).error, null);
      return;
    }
    const verdict = this.options.gate?.walShipping(checked.request, caller);
    if (verdict && !verdict.pass) {
      this.refuse(verdict.refusal, `WalShipping ${method}`, call.getPeer());
      if (verdict.response) respond(null, encodeResponse(verdict.response));
      else respond({ code: verdict.refusal.code, details: verdict.refusal.details }, null);
      return;
    }
    const served = new UnaryCall(this.nextCallId++, method, call.getPeer(), this.env, respond);
    call.on('cancelled', () => served.peerGone());
    this.handOver(served, checked.request);
  }

  private onStream(method: StreamMethod, call: grpc.ServerWritableStream<Buffer, Buffer>): void {
    const caller = callerOf(call);
    const refused = this.callerRefused(call, caller, 'peer', 'WalShipping');
    if (refused) {
      call.emit('error', refused);
      return;
    }
    const checked = decodeCheckedRequest(method, call.request, this.limits);
    if (!checked.ok) {
      this.reject(method, call.getPeer(), checked.status.details);
      call.emit('error', toServiceError(checked.status).error);
      return;
    }
    const verdict = this.options.gate?.walShipping(checked.request, caller);
    if (verdict && !verdict.pass) {
      this.refuse(verdict.refusal, `WalShipping ${method}`, call.getPeer());
      call.emit('error', { code: verdict.refusal.code, details: verdict.refusal.details });
      return;
    }
    const served = new StreamCall(this.nextCallId++, method, call.getPeer(), this.env, call);
    if (caller.tls && caller.identity !== null) served.callerName = caller.identity.name;
    served.readsSnapshotLayers = call.metadata.get(SNAPSHOT_LAYERS_METADATA)[0] === '1';
    call.on('cancelled', () => served.peerGone());
    this.handOver(served, checked.request);
  }

  private handOver(served: UnaryCall | StreamCall, request: RpcRequest): void {
    this.active.set(served.callId, served);
    try {
      this.options.handler.onRequest(served.callId, request, served);
    } catch (err) {
      this.handlerErrorCount += 1;
      this.warn(`${served.method} call ${served.callId}: handler threw: ${String(err)}`);
      served.replyError({ code: StatusCode.INTERNAL, details: 'server handler failed', trailers: {} });
    }
  }

  private callClosed(callId: number, end: CallEnd): void {
    this.active.delete(callId);
    try {
      this.options.handler.onCallClosed?.(callId, end);
    } catch (err) {
      this.handlerErrorCount += 1;
      this.warn(`call ${callId}: handler's onCallClosed threw: ${String(err)}`);
    }
  }

  /**
   * callerRefused checks a call's certificate role and cluster id with the gate; it returns the error to
   * answer with (and counts the refusal), or null when the caller may go on.
   */
  private callerRefused(
    call: { getPeer(): string },
    caller: Caller,
    role: CertRole,
    service: string,
    membersOnly = false,
    metadataOptional = role === 'admin',
  ): Partial<grpc.ServiceError> | null {
    const gate = this.options.gate;
    const refusal = gate
      ? (gate.callerRefusal(caller, role, service, metadataOptional) ??
        (membersOnly ? gate.memberRefusal(caller, service) : null))
      : null;
    if (refusal === null) return null;
    this.refuse(refusal, service, call.getPeer());
    return { code: refusal.code, details: refusal.details, metadata: new grpc.Metadata() };
  }

  /** guarded wraps an extra service's handlers so each call's caller is checked before the handler runs. */
  private guarded(extra: ExtraService): grpc.UntypedServiceImplementation {
    const role = extra.role;
    if (!this.options.gate || role === undefined) return extra.implementation;
    const service = extra.name ?? 'service';
    const wrapped: grpc.UntypedServiceImplementation = {};
    for (const [name, handler] of Object.entries(extra.implementation)) {
      const responseStream = extra.definition[name]?.responseStream ?? false;
      const guard = (
        call: Parameters<typeof callerOf>[0] & { getPeer(): string; emit(event: 'error', error: unknown): boolean },
        respond?: grpc.sendUnaryData<unknown>,
      ): void => {
        const caller = callerOf(call);
        const asMember = extra.memberMethods?.includes(name) === true && caller.identity?.role === 'peer';
        const refused = asMember
          ? this.callerRefused(call, caller, 'peer', service, true, true)
          : this.callerRefused(call, caller, role, service, extra.membersOnly === true);
        if (refused === null) {
          (handler as (...args: unknown[]) => void)(call, respond);
          return;
        }
        if (!responseStream && respond) respond(refused, null);
        else call.emit('error', refused);
      };
      wrapped[name] = guard as grpc.UntypedHandleCall;
    }
    return wrapped;
  }

  private refuse(refusal: Refusal, what: string, peer: string): void {
    this.rejectedCallCount += 1;
    this.warn(`${what} from ${peer} refused (${refusal.reason}): ${refusal.details}`, `refused:${refusal.reason}`);
    try {
      this.options.onRefused?.(refusal.reason, what, refusal.details);
    } catch (err) {
      this.warn(`onRefused threw: ${String(err)}`);
    }
  }

  private reject(method: RpcMethod, peer: string, details: string): void {
    this.rejectedCallCount += 1;
    this.warn(`${method} from ${peer} refused: ${details}`, 'rejected');
  }

  private warn(message: string, kind = 'handler'): void {
    this.options.onWarning?.(message, kind);
  }
}
