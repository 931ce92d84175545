// Lean unary serving: the server-side mirror of lean-unary.ts. The unary calls a write or a read waits on
// (svc.store.v1 Propose from a client or a forwarding follower, ReportApplied and Heartbeat between members)
// are answered from the HTTP/2 stream directly, without grpc-js's per-call layers (an intercepting call with
// its read queue, Metadata objects, a ServerUnaryCall event emitter, a promise per message, the status sent
// from a write callback). Measured with bench/unary-call.ts: see the figures in transports/grpc/README.md.
//
// How it attaches. grpc-js keeps binding the port, TLS, HTTP/2 sessions, keepalive, max-concurrent-streams and
// shutdown: nothing about a connection changes. Each grpc-js http2 server hands every new stream to one
// 'stream' listener (grpc-js's `_setupHandlers`); `serveUnaryLean` puts a dispatcher in that listener's place
// that serves a stream itself when its path is a lean route with a plain gRPC request (application/grpc,
// identity encoding, a well-formed or absent grpc-timeout) and hands every other stream to grpc-js's own
// listener unchanged (streams, the Admin service, unknown paths, anything unusual). grpc-js exposes its http2
// servers only as the private field `http2Servers` (a Map keyed by each server); that field and the one
// 'stream' listener are checked here, and test/transports/lean-serve.test.ts fails loudly if a grpc-js
// update changes either: at run time a server of another shape is left alone (every call through grpc-js)
// and the reason is returned for the node to log. No maintained package serves gRPC on a node:http2 stream
// a grpc-js server already owns; what a unary call needs is below, each rule as grpc-js applies it.
//
// The wire and the outcomes are grpc-js's, so callers cannot tell the two apart: the message's length is
// checked against messageBytesMax as soon as its 5-byte prefix arrives (RESOURCE_EXHAUSTED "Received message
// larger than max"), no message or two is UNIMPLEMENTED, grpc-timeout sets the deadline the handler reads and
// ends the call DEADLINE_EXCEEDED when it passes, a handler that throws is INTERNAL, an answer above
// messageBytesMax is RESOURCE_EXHAUSTED, an OK answer is headers + one message + grpc-status trailers and an
// error a trailers-only answer. The handler is the very function registered with grpc-js for the path
// (server.ts: the peer gate, the caller checks and every validation of validate.ts run unchanged).
import { status as StatusCode } from '@grpc/grpc-js';
import type * as grpc from '@grpc/grpc-js';
import * as http2 from 'node:http2';
import { Server as NetServer } from 'node:net';
import { TLSSocket } from 'node:tls';
import type { MetadataReader } from './peer-identity.js';
import { grpcTimeoutMs } from './grpc-timeout.js';
import { stamp, tracing } from '../node/write-trace.js';

/**
 * UnaryServerCall is what a unary handler reads of its call: grpc-js's ServerUnaryCall has all of it, and so
 * does a lean call. `http2Session` is the HTTP/2 session a lean call came on (the key of the peer
 * certificate's cache, peer-identity.ts).
 */
export interface UnaryServerCall {
  readonly request: Buffer;
  readonly metadata: MetadataReader;
  readonly http2Session?: object;
  getPeer(): string;
  getDeadline(): grpc.Deadline;
  getAuthContext?(): ReturnType<grpc.ServerUnaryCall<Buffer, Buffer>['getAuthContext']>;
  on(event: 'cancelled', listener: () => void): unknown;
}

/** UnaryRespond is grpc-js's unary answer callback; a lean call's has the same signature and meaning. */
export type UnaryRespond = grpc.sendUnaryData<Buffer>;

/** LeanUnaryHandler serves one unary path: the handler grpc-js would call for it. */
export type LeanUnaryHandler = (call: UnaryServerCall, respond: UnaryRespond) => void;

export interface LeanServeLimits {
  /** messageBytesMax bounds the request and the answer (grpc.max_receive/send_message_length). */
  messageBytesMax: number;
}

/** LeanServing counts what the lean path served (stats, tests). */
export interface LeanServing {
  /** calls: streams served on the lean path. */
  calls: number;
  /** passedOn: streams of a lean route handed to grpc-js (an unusual request: encoding, content type, timeout). */
  passedOn: number;
}

type StreamListener = (
  stream: http2.ServerHttp2Stream,
  headers: http2.IncomingHttpHeaders,
  flags: number,
  rawHeaders: string[],
) => void;

/** GRPC_JS_SERVERS_FIELD is grpc-js's private Map of the http2 servers it created (grpc-js 1.10-1.14). */
const GRPC_JS_SERVERS_FIELD = 'http2Servers';

/**
 * grpcJsHttp2Servers are the http2 servers grpc-js created for `server` (its private `http2Servers` map: lean-serve.ts
 * and lean-connections.ts attach to them), or the reason they cannot be found (a grpc-js of another shape).
 */
export function grpcJsHttp2Servers(server: grpc.Server): NetServer[] | string {
  const servers = (server as unknown as Record<string, unknown>)[GRPC_JS_SERVERS_FIELD];
  if (!(servers instanceof Map) || servers.size === 0)
    return `grpc-js has no ${GRPC_JS_SERVERS_FIELD} map of bound servers (an unknown grpc-js version)`;
  const found: NetServer[] = [];
  for (const candidate of servers.keys()) {
    if (!(candidate instanceof NetServer))
      return `grpc-js's ${GRPC_JS_SERVERS_FIELD} holds something other than an http2 server`;
    found.push(candidate);
  }
  return found;
}

/**
 * serveUnaryLean takes over the dispatch of new streams on every http2 server `server` has bound (call it
 * after bindAsync). It returns the counters, or the reason it attached nothing (grpc-js's shape changed).
 */
export function serveUnaryLean(
  server: grpc.Server,
  routes: ReadonlyMap<string, LeanUnaryHandler>,
  limits: LeanServeLimits,
): LeanServing | string {
  const servers = grpcJsHttp2Servers(server);
  if (typeof servers === 'string') return servers;
  const found: Array<[NetServer, StreamListener]> = [];
  for (const candidate of servers) {
    const listeners = candidate.listeners('stream');
    if (listeners.length !== 1)
      return `a grpc-js http2 server has ${listeners.length} 'stream' listeners where one (grpc-js's) was expected`;
    found.push([candidate, listeners[0] as StreamListener]);
  }
  const serving: LeanServing = { calls: 0, passedOn: 0 };
  for (const [http2Server, grpcJs] of found) {
    const dispatch: StreamListener = (stream, headers, flags, rawHeaders) => {
      const path = headers[http2.constants.HTTP2_HEADER_PATH];
      const handler = typeof path === 'string' ? routes.get(path) : undefined;
      if (handler === undefined) {
        grpcJs(stream, headers, flags, rawHeaders);
        return;
      }
      const timeoutMs = plainRequestTimeoutMs(headers);
      if (timeoutMs === null) {
        serving.passedOn++;
        grpcJs(stream, headers, flags, rawHeaders);
        return;
      }
      serving.calls++;
      new LeanCall(stream, headers, path as string, timeoutMs, limits.messageBytesMax).serve(handler);
    };
    http2Server.removeListener('stream', grpcJs);
    http2Server.on('stream', dispatch);
  }
  return serving;
}

const NO_TIMEOUT = -1;

/**
 * plainRequestTimeoutMs is the call's timeout in ms (NO_TIMEOUT without grpc-timeout) when the request is one
 * the lean path serves as grpc-js would, or null for grpc-js to serve: a content type that is not gRPC (415),
 * a compressed encoding, an unparsable grpc-timeout (INTERNAL).
 */
function plainRequestTimeoutMs(headers: http2.IncomingHttpHeaders): number | null {
  const contentType = headers[http2.constants.HTTP2_HEADER_CONTENT_TYPE];
  if (typeof contentType !== 'string' || !contentType.startsWith('application/grpc')) return null;
  const encoding = headers['grpc-encoding'];
  if (encoding !== undefined && encoding !== 'identity') return null;
  const timeout = headers['grpc-timeout'];
  if (timeout === undefined) return NO_TIMEOUT;
  if (typeof timeout !== 'string') return null;
  return grpcTimeoutMs(timeout);
}

const FRAME_HEADER_BYTES = 5;
const EMPTY: Buffer = Buffer.alloc(0);
const RESPONSE_HEADERS: http2.OutgoingHttpHeaders = {
  [http2.constants.HTTP2_HEADER_STATUS]: http2.constants.HTTP_STATUS_OK,
  [http2.constants.HTTP2_HEADER_CONTENT_TYPE]: 'application/grpc+proto',
  'grpc-accept-encoding': 'identity,deflate,gzip',
  'grpc-encoding': 'identity',
};
const STATUS_HEADERS: http2.OutgoingHttpHeaders = {
  [http2.constants.HTTP2_HEADER_STATUS]: http2.constants.HTTP_STATUS_OK,
  [http2.constants.HTTP2_HEADER_CONTENT_TYPE]: 'application/grpc+proto',
};
const OK_TRAILERS: http2.OutgoingHttpHeaders = { 'grpc-status': StatusCode.OK, 'grpc-message': 'OK' };
const WAIT_FOR_TRAILERS: http2.ServerStreamResponseOptions = { waitForTrailers: true };
const END_STREAM: http2.ServerStreamResponseOptions = { endStream: true };
const noop = (): void => {};

/** LEAN_CALL: the call a lean-served stream belongs to, for the shared listeners below. */
const LEAN_CALL = Symbol('leanCall');
type LeanStream = http2.ServerHttp2Stream & { [LEAN_CALL]?: LeanCall };

function streamData(this: LeanStream, chunk: Buffer): void {
  this[LEAN_CALL]?.onData(chunk);
}

function streamEnded(this: LeanStream): void {
  this[LEAN_CALL]?.onEnd();
}

function streamClosed(this: LeanStream): void {
  const call = this[LEAN_CALL];
  if (call === undefined) return;
  if (tracing()) stamp('answer.closed', 0, call.path);
  call.end();
}

/** wantTrailers: node:http2 is flushing the answer's headers and message (write timeline: 'answer.flushed'). */
function wantTrailers(this: LeanStream): void {
  const call = this[LEAN_CALL];
  if (tracing()) stamp('answer.flushed', 0, call?.path);
  this.sendTrailers(call ? call.trailers : OK_TRAILERS);
}

function deadlinePassed(call: LeanCall): void {
  call.onDeadline();
}

interface Status {
  code: number;
  details: string;
  metadata: grpc.Metadata | null;
}

/** LeanCall is one unary call served on its stream: it reads the request, runs the handler, answers once. */
class LeanCall implements UnaryServerCall {
  request: Buffer = EMPTY;
  readonly metadata: MetadataReader;
  private readonly deadline: grpc.Deadline;
  private timer: NodeJS.Timeout | null = null;
  private cancelListeners: Array<() => void> | null = null;
  private readonly chunks: Buffer[] = [];
  private handler: LeanUnaryHandler | null = null;
  /** trailers: what the OK answer's trailers carry, sent when the stream asks for them. */
  trailers: http2.OutgoingHttpHeaders = OK_TRAILERS;
  private bytes = 0;
  /** nextFrameAt: where the next message's prefix starts in the body (bytes received so far count from 0). */
  private nextFrameAt = 0;
  /** framesStarted: the messages whose prefix has arrived. */
  private framesStarted = 0;
  /** over: the status was sent or the stream is gone; nothing more is read or written. */
  private over = false;

  constructor(
    private readonly stream: http2.ServerHttp2Stream,
    headers: http2.IncomingHttpHeaders,
    readonly path: string,
    timeoutMs: number,
    private readonly messageBytesMax: number,
  ) {
    this.metadata = new HeaderMetadata(headers);
    this.deadline = timeoutMs === NO_TIMEOUT ? Infinity : Date.now() + timeoutMs;
    if (timeoutMs !== NO_TIMEOUT) this.timer = setTimeout(deadlinePassed, timeoutMs, this);
  }

  /** onDeadline: as grpc-js, the caller gets DEADLINE_EXCEEDED and the handler hears 'cancelled'. */
  onDeadline(): void {
    this.timer = null;
    this.sendStatus(status(StatusCode.DEADLINE_EXCEEDED, 'Deadline exceeded'));
    this.cancelled();
  }

  get http2Session(): object | undefined {
    return this.stream.session;
  }

  serve(handler: LeanUnaryHandler): void {
    this.handler = handler;
    const stream = this.stream as LeanStream;
    stream[LEAN_CALL] = this;
    // The listeners are shared functions that find their call on the stream: no closures per call. As grpc-js:
    // an error event always comes with a close, which is what ends the call.
    stream.on('error', noop);
    stream.on('close', streamClosed);
    stream.on('data', streamData);
    stream.on('end', streamEnded);
  }

  getPeer(): string {
    const socket = this.stream.session?.socket;
    if (!socket?.remoteAddress) return 'unknown';
    return socket.remotePort ? `${socket.remoteAddress}:${socket.remotePort}` : socket.remoteAddress;
  }

  getDeadline(): grpc.Deadline {
    return this.deadline;
  }

  /** getAuthContext is grpc-js's (server-interceptors.ts): a verified TLS connection's peer certificate. */
  getAuthContext(): ReturnType<grpc.ServerUnaryCall<Buffer, Buffer>['getAuthContext']> {
    const socket = this.stream.session?.socket;
    if (!(socket instanceof TLSSocket) || !socket.authorized) return {};
    const peerCertificate = socket.getPeerCertificate();
    return { transportSecurityType: 'ssl', sslPeerCertificate: peerCertificate.raw ? peerCertificate : undefined };
  }

  on(event: 'cancelled', listener: () => void): this {
    if (event === 'cancelled') (this.cancelListeners ??= []).push(listener);
    return this;
  }

  /** respond is the handler's answer: grpc-js's sendUnaryData, with serverErrorToStatus's reading of an error. */
  readonly respond: UnaryRespond = (error, value, trailer) => {
    if (error) {
      this.sendStatus(errorStatus(error, trailer));
      return;
    }
    this.sendMessage(value ?? EMPTY, trailer ?? null);
  };

  onData(chunk: Buffer): void {
    if (this.over) return;
    this.chunks.push(chunk);
    this.bytes += chunk.length;
    // Each message's declared length is checked as soon as its prefix is here, as grpc-js's decoder does.
    while (this.bytes - this.nextFrameAt >= FRAME_HEADER_BYTES) {
      const length = this.uint32At(this.nextFrameAt + 1);
      if (length > this.messageBytesMax) {
        this.sendStatus(
          status(
            StatusCode.RESOURCE_EXHAUSTED,
            `Received message larger than max (${length} vs ${this.messageBytesMax})`,
          ),
        );
        return;
      }
      this.nextFrameAt += FRAME_HEADER_BYTES + length;
      this.framesStarted++;
      // A second whole message ends the call at once, as grpc-js does: a caller cannot pile up messages (each
      // within messageBytesMax) in the server's memory until it half-closes.
      if (this.framesStarted >= 2 && this.bytes >= this.nextFrameAt) {
        this.sendStatus(secondMessage(this.path));
        return;
      }
    }
  }

  /** uint32At reads a big-endian uint32 at `offset` of the body received so far (it may span chunks). */
  private uint32At(offset: number): number {
    let value = 0;
    let at = 0;
    let index = 0;
    for (const chunk of this.chunks) {
      while (index < 4 && offset + index < at + chunk.length) {
        value = value * 256 + chunk[offset + index - at]!;
        index++;
      }
      if (index === 4) return value;
      at += chunk.length;
    }
    throw new Error('uint32At past the bytes received');
  }

  onEnd(): void {
    const handler = this.handler;
    if (this.over || handler === null) return;
    const body = this.chunks.length === 1 ? this.chunks[0]! : Buffer.concat(this.chunks, this.bytes);
    const messages = completeMessages(body);
    if (messages === 0) {
      this.sendStatus(
        status(StatusCode.UNIMPLEMENTED, `Received no request message for server streaming method ${this.path}`),
      );
      return;
    }
    if (messages > 1) {
      this.sendStatus(secondMessage(this.path));
      return;
    }
    // grpc-js reads a set compressed flag under identity encoding as uncompressed; so does this.
    this.request = body.subarray(FRAME_HEADER_BYTES, FRAME_HEADER_BYTES + body.readUInt32BE(1));
    this.chunks.length = 0;
    try {
      handler(this, this.respond);
    } catch {
      this.sendStatus(status(StatusCode.INTERNAL, 'Unknown error'));
    }
  }

  private sendMessage(message: Buffer, trailer: grpc.Metadata | null): void {
    if (this.gone()) return;
    if (message.length > this.messageBytesMax) {
      this.sendStatus(
        status(
          StatusCode.RESOURCE_EXHAUSTED,
          `Sent message larger than max (${message.length + FRAME_HEADER_BYTES} vs. ${this.messageBytesMax})`,
        ),
      );
      return;
    }
    this.finish();
    const framed = Buffer.allocUnsafe(FRAME_HEADER_BYTES + message.length);
    framed[0] = 0;
    framed.writeUInt32BE(message.length, 1);
    message.copy(framed, FRAME_HEADER_BYTES);
    const stream = this.stream;
    if (trailer) this.trailers = { ...OK_TRAILERS, ...trailer.toHttp2Headers() };
    try {
      stream.respond(RESPONSE_HEADERS, WAIT_FOR_TRAILERS);
      stream.on('wantTrailers', wantTrailers);
      stream.end(framed);
      if (tracing()) stamp('answer.given', 0, this.path);
    } catch {
      // The stream died between the check and the write (its session went): the caller is gone.
      this.stream.destroy();
    }
  }

  /** sendStatus ends the call with a trailers-only answer (nothing was sent before it). */
  private sendStatus(ending: Status): void {
    if (this.gone()) return;
    this.finish();
    try {
      this.stream.respond(
        {
          'grpc-status': ending.code,
          'grpc-message': encodeURI(ending.details),
          ...STATUS_HEADERS,
          ...ending.metadata?.toHttp2Headers(),
        },
        END_STREAM,
      );
    } catch {
      // As in sendMessage: the stream died under us; nobody is left to answer.
      this.stream.destroy();
    }
  }

  /** gone: the call already ended, or its stream did (then the handler hears 'cancelled'). */
  private gone(): boolean {
    if (this.over) return true;
    if (this.stream.destroyed || this.stream.closed) {
      this.end();
      return true;
    }
    return false;
  }

  /** finish: the answer is leaving; what the peer still sends is drained and dropped. */
  private finish(): void {
    this.over = true;
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    this.chunks.length = 0;
    this.stream.resume();
  }

  /** end: the stream closed; a call not yet answered is cancelled (its handler hears it, as from grpc-js). */
  end(): void {
    if (this.over) return;
    this.finish();
    this.cancelled();
  }

  /** cancelled tells the handler the call ended without its answer (once; on a later tick, as grpc-js does). */
  private cancelled(): void {
    const listeners = this.cancelListeners;
    this.cancelListeners = null;
    if (listeners !== null) process.nextTick(() => listeners.forEach((listener) => listener()));
  }
}

function status(code: number, details: string): Status {
  return { code, details, metadata: null };
}

function secondMessage(path: string): Status {
  return status(StatusCode.UNIMPLEMENTED, `Received a second request message for server streaming method ${path}`);
}

/** errorStatus reads a handler's error as grpc-js's serverErrorToStatus does. */
function errorStatus(error: NonNullable<Parameters<UnaryRespond>[0]>, trailer: grpc.Metadata | undefined): Status {
  const ending: Status = {
    code: StatusCode.UNKNOWN,
    details: 'message' in error && typeof error.message === 'string' ? error.message : 'Unknown Error',
    metadata: trailer ?? error.metadata ?? null,
  };
  if (typeof error.code === 'number' && Number.isInteger(error.code)) {
    ending.code = error.code;
    if (typeof error.details === 'string') ending.details = error.details;
  }
  return ending;
}

/** completeMessages counts the whole length-prefixed messages in a request body (a partial tail is not one). */
function completeMessages(body: Buffer): number {
  let count = 0;
  let at = 0;
  while (body.length - at >= FRAME_HEADER_BYTES) {
    const next = at + FRAME_HEADER_BYTES + body.readUInt32BE(at + 1);
    if (next > body.length) break;
    count++;
    at = next;
  }
  return count;
}

const LEGAL_TEXT_VALUE = /^[ -~]*$/;

/**
 * HeaderMetadata reads a header as grpc-js's Metadata.fromHttp2Headers does for text keys (Node has already
 * joined repeated ones with ', '): the values of `key`, [] when absent; a value grpc-js's Metadata refuses (not
 * printable ASCII) is dropped as grpc-js drops it.
 */
class HeaderMetadata implements MetadataReader {
  constructor(private readonly headers: http2.IncomingHttpHeaders) {}

  get(key: string): string[] {
    const value = this.headers[key];
    if (value === undefined) return [];
    return (Array.isArray(value) ? value : [value]).filter((v) => LEGAL_TEXT_VALUE.test(v));
  }
}
