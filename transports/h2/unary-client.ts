// H2UnaryClient: gRPC unary calls on our own HTTP/2 client connection (client-connection.ts), a drop-in for
// transports/grpc/lean-unary.ts's LeanUnaryClient: the same `call(to, path, request, deadlineMs, done) => cancel`,
// the same outcomes (unary-answer.ts reads the answer for both), the same connection policy (one connection per
// address, a keepalive ping dropping a dead one, a connect timeout, a back-off after a failed attempt). Why:
// node:http2's client stream per call was most of a unary round trip's cost (transports/h2/README.md, "Measured").
//
// The wire is gRPC's own: HTTP/2 POST, `application/grpc`, `te: trailers`, `grpc-timeout`, a length-prefixed
// message, the status in the trailers (or a trailers-only answer), so any gRPC server answers it.
import type { Socket } from 'node:net';
import { TLSSocket } from 'node:tls';
import { StatusCode, type RpcStatus } from '../../engine/rpc.js';
import { LeanCallGate } from '../grpc/lean-call-gate.js';
import type { GrpcLimits } from '../grpc/limits.js';
import { rpcStatus } from '../grpc/status.js';
import { failed, failLater, frame, UnaryAnswer, type LeanOutcome } from '../grpc/unary-answer.js';
import {
  H2ClientConnection,
  type ClientStream,
  type ClientStreamListener,
  type StreamFailure,
} from './client-connection.js';
import { resolveH2ClientLimits, type H2ClientLimits } from './client-limits.js';
import { ErrorCode } from './frames.js';
import { encodeHeaderBlock, type HeaderField } from './hpack.js';

/**
 * H2Dial opens a socket to `address` (host:port): tls.connect offering ALPN h2 with the node's credentials and
 * server checks (transports/grpc/tls.ts peerSocketDial), or net.connect for plaintext (h2 with prior knowledge).
 */
export type H2Dial = (address: string) => Socket;

export interface H2UnaryOptions {
  dial: H2Dial;
  /** headers go on every call (the cluster id); names are lowercase, values ASCII. */
  headers: Readonly<Record<string, string>>;
  /** messageBytesMax both ways, keepaliveTimeMs/keepaliveTimeoutMs, connectTimeoutMs, the reconnect back-off. */
  limits: GrpcLimits;
  /** The HTTP/2 connection's own limits (client-limits.ts); defaults: DEFAULT_H2_CLIENT_LIMITS. */
  h2Limits?: Partial<H2ClientLimits>;
}

/** Encoded paths kept (a node calls a dozen methods); past this a path is encoded per call. */
const PATH_BLOCK_COUNT_MAX = 256;
/** grpc-timeout carries at most 8 digits (gRPC's HTTP/2 spec). */
const TIMEOUT_DIGITS_MAX = 99_999_999;
const GRPC_TIMEOUT_NAME = Buffer.from('grpc-timeout', 'latin1');

export class H2UnaryClient {
  private readonly connections = new Map<string, H2ClientConnection>();
  private readonly gate: LeanCallGate;
  private readonly h2Limits: H2ClientLimits;
  private readonly pathBlocks = new Map<string, Buffer>();
  /** The regular headers every call carries (content-type, te, the configured ones), encoded once. */
  private readonly fixedBlock: Buffer;
  private readonly schemeBlocks = {
    http: encodeHeaderBlock([
      [':method', 'POST'],
      [':scheme', 'http'],
    ]),
    https: encodeHeaderBlock([
      [':method', 'POST'],
      [':scheme', 'https'],
    ]),
  };

  constructor(private readonly options: H2UnaryOptions) {
    this.gate = new LeanCallGate(options.limits);
    this.h2Limits = resolveH2ClientLimits(options.h2Limits);
    const fixed: HeaderField[] = [
      ['content-type', 'application/grpc'],
      ['te', 'trailers'],
    ];
    for (const [name, value] of Object.entries(options.headers)) fixed.push([name.toLowerCase(), value]);
    this.fixedBlock = encodeHeaderBlock(fixed);
  }

  /**
   * call sends one unary call and reports its outcome exactly once, never inside call() itself. It returns
   * a cancel function (the outcome is then CANCELLED, reported on a later turn).
   */
  call(
    to: string,
    path: string,
    request: Buffer,
    deadlineMs: number,
    done: (outcome: LeanOutcome) => void,
  ): () => void {
    const refusal = this.gate.refusal(to, request);
    if (refusal !== null) return failLater(done, refusal);
    const { messageBytesMax } = this.options.limits;
    let connection: H2ClientConnection;
    try {
      connection = this.connectionFor(to);
    } catch (err) {
      return failLater(
        done,
        rpcStatus(StatusCode.UNAVAILABLE, `cannot call ${to}: ${err instanceof Error ? err.message : String(err)}`),
      );
    }
    const call = new H2Call(to, deadlineMs, messageBytesMax, done);
    const stream = connection.request(this.headerBlock(connection, to, path, deadlineMs), frame(request), call);
    if (typeof stream === 'string') {
      call.abandon();
      const code = /queuedCallCountMax/.test(stream) ? StatusCode.RESOURCE_EXHAUSTED : StatusCode.UNAVAILABLE;
      return failLater(done, rpcStatus(code, `cannot call ${to}: ${stream}`));
    }
    call.stream = stream;
    return call.cancel;
  }

  /** headerBlock: a call's request header block, from pieces encoded once and its grpc-timeout. */
  private headerBlock(connection: H2ClientConnection, to: string, path: string, deadlineMs: number): Buffer {
    let pathBlock = this.pathBlocks.get(path);
    if (pathBlock === undefined) {
      pathBlock = encodeHeaderBlock([[':path', path]]);
      if (this.pathBlocks.size < PATH_BLOCK_COUNT_MAX) this.pathBlocks.set(path, pathBlock);
    }
    const scheme = connection.socket instanceof TLSSocket ? this.schemeBlocks.https : this.schemeBlocks.http;
    const authority = authorityBlocks.get(connection) ?? authorityBlock(connection, to, this.fixedBlock);
    const timeout = `${Math.max(1, Math.min(Math.ceil(deadlineMs), TIMEOUT_DIGITS_MAX))}m`;
    // grpc-timeout as a literal without indexing, new name (RFC 7541 6.2.2): 0x00, name, value (raw, < 127 bytes).
    const timeoutBytes = 3 + GRPC_TIMEOUT_NAME.length + timeout.length;
    const out = Buffer.allocUnsafe(scheme.length + pathBlock.length + authority.length + timeoutBytes);
    let at = scheme.copy(out, 0);
    at += pathBlock.copy(out, at);
    at += authority.copy(out, at);
    out[at++] = 0;
    out[at++] = GRPC_TIMEOUT_NAME.length;
    at += GRPC_TIMEOUT_NAME.copy(out, at);
    out[at++] = timeout.length;
    out.write(timeout, at, 'latin1');
    return out;
  }

  /** closePeer drops the connection to `to` (its calls end UNAVAILABLE). */
  closePeer(to: string): void {
    const connection = this.connections.get(to);
    if (connection === undefined) return;
    this.connections.delete(to);
    connection.destroy('connection closed by the caller');
  }

  close(): void {
    this.gate.closed = true;
    for (const to of [...this.connections.keys()]) this.closePeer(to);
  }

  private connectionFor(to: string): H2ClientConnection {
    const existing = this.connections.get(to);
    if (existing?.reusable) return existing;
    // One going away (GOAWAY, ids used up) finishes its calls on its own; new calls get a new connection.
    const socket = this.options.dial(to);
    const { connectTimeoutMs, keepaliveTimeMs, keepaliveTimeoutMs } = this.options.limits;
    const connection: H2ClientConnection = new H2ClientConnection(socket, {
      limits: this.h2Limits,
      connectTimeoutMs,
      keepaliveTimeMs,
      keepaliveTimeoutMs,
      onReady: () => this.gate.connected(to),
      onClose: (_reason, ready) => {
        // Only the current connection's failure to connect backs off (not one the caller closed, nor one replaced).
        if (this.connections.get(to) !== connection) return;
        this.connections.delete(to);
        if (!ready) this.gate.failed(to);
      },
    });
    this.connections.set(to, connection);
    return connection;
  }
}

/** The :authority and fixed headers per connection (its address), encoded on its first call. */
const authorityBlocks = new WeakMap<H2ClientConnection, Buffer>();

function authorityBlock(connection: H2ClientConnection, to: string, fixedBlock: Buffer): Buffer {
  const block = Buffer.concat([encodeHeaderBlock([[':authority', to]]), fixedBlock]);
  authorityBlocks.set(connection, block);
  return block;
}

function callDeadlinePassed(call: H2Call): void {
  call.stop(rpcStatus(StatusCode.DEADLINE_EXCEEDED, `no answer from ${call.to} within ${call.deadlineMs} ms`));
}

/** H2Call is one unary call: its stream's listener, its deadline, its outcome (reported once). */
class H2Call implements ClientStreamListener {
  stream: ClientStream | null = null;
  private readonly answer: UnaryAnswer;
  private answerHeadersSeen = false;
  private settled = false;
  private readonly timer: NodeJS.Timeout;

  constructor(
    readonly to: string,
    readonly deadlineMs: number,
    private readonly messageBytesMax: number,
    private readonly done: (outcome: LeanOutcome) => void,
  ) {
    this.answer = new UnaryAnswer(messageBytesMax);
    this.timer = setTimeout(callDeadlinePassed, deadlineMs, this);
  }

  /** cancel is what call() returns: the outcome is then CANCELLED (on a later turn, never inside cancel()). */
  readonly cancel = (): void => this.stop(rpcStatus(StatusCode.CANCELLED, 'call cancelled'));

  /** stop ends the call here with `status` (RST_STREAM CANCEL to the server), unless it has ended already. */
  stop(status: RpcStatus): void {
    if (this.settled) return;
    this.settled = true;
    clearTimeout(this.timer);
    this.stream?.reset(ErrorCode.CANCEL);
    setImmediate(this.done, failed(status));
  }

  /** abandon: the call never left (the connection refused it); call() reports that itself. */
  abandon(): void {
    this.settled = true;
    clearTimeout(this.timer);
  }

  onHeaderBlock(fields: HeaderField[]): void {
    const headers: Record<string, string> = {};
    for (const [name, value] of fields) {
      const before = headers[name];
      headers[name] = before === undefined ? value : `${before}, ${value}`;
    }
    if (this.answerHeadersSeen) this.answer.onTrailers(headers);
    else {
      this.answerHeadersSeen = true;
      this.answer.onHeaders(headers);
    }
  }

  onData(chunk: Buffer): void {
    if (!this.settled && !this.answer.onData(chunk))
      this.stop(rpcStatus(StatusCode.RESOURCE_EXHAUSTED, `answer above messageBytesMax (${this.messageBytesMax})`));
  }

  onEnd(): void {
    if (this.settle()) this.done(this.answer.outcome(this.to, undefined));
  }

  onFailure(failure: StreamFailure): void {
    if (!this.settle()) return;
    switch (failure.kind) {
      case 'protocol':
        return this.done(failed(rpcStatus(StatusCode.INTERNAL, `${this.to} broke HTTP/2: ${failure.reason}`)));
      case 'headerListTooLarge':
        return this.done(failed(rpcStatus(StatusCode.RESOURCE_EXHAUSTED, `${this.to}: ${failure.reason}`)));
      case 'refused':
        return this.done(
          failed(rpcStatus(StatusCode.UNAVAILABLE, `${this.to} gave no answer: ${failure.reason} (safe to retry)`)),
        );
      default:
        this.answer.onError(new Error(failure.reason));
        return this.done(this.answer.outcome(this.to, undefined));
    }
  }

  /** settle marks the call ended by its stream: false when it had ended already (cancel, deadline). */
  private settle(): boolean {
    if (this.settled) return false;
    this.settled = true;
    clearTimeout(this.timer);
    return true;
  }
}
