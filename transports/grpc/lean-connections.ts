// Lean connections: the unary calls of a client that asks for it are served on our own HTTP/2 framing
// (transports/h2: H2ServerConnection and its gRPC unary layer), on the same port as every other call. Why:
// lean-serve.ts answers a unary call from a node:http2 stream, and node:http2's per-stream machinery (a
// ServerHttp2Stream, its header objects, `respond`, the trailers sent a loop turn after the message) cost
// the server 33-67 µs of CPU a call against 12-24 µs on our framing, and the caller 54-176 µs of round trip
// (transports/h2/README.md, "Measured"). A write's Propose and a unary Get pay one such call each.
//
// How a connection is chosen. grpc-js keeps binding the port, TLS (its credentials: the client certificate is
// demanded and verified exactly as before), and everything about the connections it serves. A client that
// wants lean serving puts a SETTINGS parameter of its own in its first SETTINGS frame (LEAN_CONNECTION_SETTING
// = 1; RFC 9113 6.5.2: a receiver ignores a setting it does not know, so any HTTP/2 server accepts it), which
// lean-unary.ts's dial does. Here, each grpc-js http2 server's connection listener (after the TLS handshake for
// a secure one) is replaced by a dispatcher that reads the client's preface and first SETTINGS frame: with the
// mark, the connection becomes an H2ServerConnection serving the lean routes (the very handlers grpc-js has
// for those paths: the peer gate and every check run unchanged) and answering any other path UNIMPLEMENTED (a
// client asks for this only for its unary calls); without it, or on anything unusual (not an HTTP/2 preface, a
// first frame other than SETTINGS, a SETTINGS frame above FIRST_SETTINGS_BYTES_MAX, no preface within the
// preface timeout), the bytes read are put back (`unshift`) and the socket goes to grpc-js's own listeners,
// which see it as if nothing had happened. As lean-serve.ts does for streams, this relies on grpc-js's private
// `http2Servers` map and on its listeners' shape; serveLeanConnections returns the reason instead of attaching
// when either differs, and test/transports/lean-connections.test.ts fails loudly if a grpc-js update changes them.
import type * as grpc from '@grpc/grpc-js';
import { status as StatusCode } from '@grpc/grpc-js';
import type { Server as NetServer, Socket } from 'node:net';
import { Server as TlsServer, TLSSocket } from 'node:tls';
import { H2ServerConnection } from '../h2/connection.js';
import { Setting } from '../h2/frames.js';
import { serveGrpcUnary, type UnaryAnswer, type UnaryCall, type UnaryHandler } from '../h2/grpc-unary.js';
import type { HeaderField } from '../h2/hpack.js';
import { resolveH2Limits, type H2Limits } from '../h2/limits.js';
import { headerValue } from '../h2/request-head.js';
import { grpcTimeoutMs } from './grpc-timeout.js';
import { grpcJsHttp2Servers, type LeanUnaryHandler, type UnaryRespond, type UnaryServerCall } from './lean-serve.js';
import type { MetadataReader } from './peer-identity.js';
import { stamp, tracing } from '../node/write-trace.js';

/**
 * LEAN_CONNECTION_SETTING is the SETTINGS identifier a client sends with value 1 to be served on the lean
 * connection path (0xf000-0xffff: the experimental range of the HTTP/2 settings registry).
 */
export const LEAN_CONNECTION_SETTING = Setting.LEAN_CONNECTION;

/** LEAN_CONNECTION_SETTINGS are the node:http2 client settings that ask for it (`http2.connect`'s `settings`). */
export const LEAN_CONNECTION_SETTINGS = Object.freeze({
  customSettings: Object.freeze({ [LEAN_CONNECTION_SETTING]: 1 }),
});

/** FIRST_SETTINGS_BYTES_MAX: a first SETTINGS frame longer than this (32 parameters) is not read for the mark. */
const FIRST_SETTINGS_BYTES_MAX = 6 * 32;

const PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1');
const FRAME_HEADER_BYTES = 9;
const SETTINGS_FRAME_TYPE = 4;
const ACK_FLAG = 0x1;
const SETTING_BYTES = 6;

/** LeanConnectionLimits: what a lean connection needs beyond transports/h2's defaults. */
export interface LeanConnectionLimits {
  messageBytesMax: number;
  concurrentStreamCountMax: number;
  /**
   * A lean connection is pinged every keepaliveTimeMs and dropped when a ping goes unanswered for
   * keepaliveTimeoutMs, as grpc-js does its own (the node's GrpcLimits); TCP keepalive is set at the same interval.
   */
  keepaliveTimeMs: number;
  keepaliveTimeoutMs: number;
  /** prefaceTimeoutMs bounds the wait for a client's preface and first SETTINGS before grpc-js gets it anyway. */
  prefaceTimeoutMs?: number;
}

/** LeanConnections is what the lean connection path serves (stats, tests) and how it stops. */
export interface LeanConnections {
  /** connections: the lean connections open now. */
  readonly open: ReadonlySet<H2ServerConnection>;
  /** accepted: connections served on the lean path since the start. */
  accepted: number;
  /** calls: unary calls answered by a lean route on them. */
  calls: number;
  /** close sends GOAWAY on every lean connection, lets their calls end for graceMs, then drops what is left. */
  close(graceMs: number): Promise<void>;
}

type ConnectionListener = (this: NetServer, socket: Socket) => void;

/** Verdict: what the bytes read so far say about a connection. */
type Verdict = 'lean' | 'grpc-js' | 'more';

/** firstSettingsVerdict reads a connection's first bytes: the preface, then the first SETTINGS frame. */
export function firstSettingsVerdict(bytes: Buffer): Verdict {
  const prefix = Math.min(bytes.length, PREFACE.length);
  if (bytes.compare(PREFACE, 0, prefix, 0, prefix) !== 0) return 'grpc-js';
  if (bytes.length < PREFACE.length + FRAME_HEADER_BYTES) return 'more';
  const at = PREFACE.length;
  const length = bytes.readUIntBE(at, 3);
  const type = bytes[at + 3]!;
  const flags = bytes[at + 4]!;
  const streamId = bytes.readUInt32BE(at + 5) & 0x7fffffff;
  if (type !== SETTINGS_FRAME_TYPE || (flags & ACK_FLAG) !== 0 || streamId !== 0) return 'grpc-js';
  if (length % SETTING_BYTES !== 0 || length > FIRST_SETTINGS_BYTES_MAX) return 'grpc-js';
  if (bytes.length < at + FRAME_HEADER_BYTES + length) return 'more';
  for (let offset = at + FRAME_HEADER_BYTES; offset < at + FRAME_HEADER_BYTES + length; offset += SETTING_BYTES)
    if (bytes.readUInt16BE(offset) === LEAN_CONNECTION_SETTING && bytes.readUInt32BE(offset + 2) === 1) return 'lean';
  return 'grpc-js';
}

/**
 * serveLeanConnections puts the dispatcher in front of the connection listeners of every http2 server `server`
 * has bound (call it after bindAsync). It returns what it serves, or the reason it attached nothing.
 */
export function serveLeanConnections(
  server: grpc.Server,
  routes: ReadonlyMap<string, LeanUnaryHandler>,
  limits: LeanConnectionLimits,
): LeanConnections | string {
  const servers = grpcJsHttp2Servers(server);
  if (typeof servers === 'string') return servers;
  const found: Array<[NetServer, 'secureConnection' | 'connection', ConnectionListener[]]> = [];
  for (const candidate of servers) {
    // A secure server's sockets are TLS sockets once 'secureConnection' fires (the handshake done and the client
    // certificate verified by grpc-js's credentials); a plaintext server's are read from 'connection'.
    const event = candidate instanceof TlsServer ? 'secureConnection' : 'connection';
    const listeners = candidate.listeners(event) as ConnectionListener[];
    if (listeners.length === 0) return `a grpc-js http2 server has no '${event}' listener`;
    found.push([candidate, event, listeners]);
  }
  const served = new LeanConnectionSet(routes, limits);
  for (const [http2Server, event, grpcJs] of found) {
    const toGrpcJs = (socket: Socket): void => {
      for (const listener of grpcJs) listener.call(http2Server, socket);
    };
    http2Server.removeAllListeners(event);
    http2Server.on(event, (socket: Socket) => served.sort(socket, toGrpcJs));
  }
  return served;
}

class LeanConnectionSet implements LeanConnections {
  readonly open = new Set<H2ServerConnection>();
  accepted = 0;
  calls = 0;
  private closing = false;
  private readonly h2Limits: H2Limits;
  private readonly prefaceTimeoutMs: number;
  private readonly onStream: ReturnType<typeof serveGrpcUnary>;

  constructor(
    routes: ReadonlyMap<string, LeanUnaryHandler>,
    private readonly limits: LeanConnectionLimits,
  ) {
    this.h2Limits = resolveH2Limits({
      messageBytesMax: limits.messageBytesMax,
      concurrentStreamCountMax: limits.concurrentStreamCountMax,
      keepaliveTimeMs: limits.keepaliveTimeMs,
      keepaliveTimeoutMs: limits.keepaliveTimeoutMs,
      ...(limits.prefaceTimeoutMs === undefined ? {} : { prefaceTimeoutMs: limits.prefaceTimeoutMs }),
    });
    this.prefaceTimeoutMs = this.h2Limits.prefaceTimeoutMs;
    const handlers = new Map<string, UnaryHandler>();
    for (const [path, handler] of routes) handlers.set(path, this.adapt(path, handler));
    this.onStream = serveGrpcUnary({ handlers, messageBytesMax: limits.messageBytesMax });
  }

  /** sort reads a new connection's first bytes and gives it to the lean path or back to grpc-js. */
  sort(socket: Socket, toGrpcJs: (socket: Socket) => void): void {
    const chunks: Buffer[] = [];
    let decided = false;
    const decide = (verdict: 'lean' | 'grpc-js'): void => {
      if (decided) return;
      decided = true;
      clearTimeout(timer);
      socket.removeListener('data', onData);
      socket.removeListener('close', onClose);
      socket.pause();
      if (chunks.length > 0) socket.unshift(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks));
      if (verdict === 'lean' && !this.closing) this.adopt(socket);
      else if (verdict === 'lean') socket.destroy();
      else toGrpcJs(socket);
    };
    const onData = (chunk: Buffer): void => {
      chunks.push(chunk);
      const verdict = firstSettingsVerdict(chunks.length === 1 ? chunk : Buffer.concat(chunks));
      if (verdict !== 'more') decide(verdict);
    };
    const onClose = (): void => {
      decided = true;
      clearTimeout(timer);
    };
    // A slow or silent client goes to grpc-js as it is, which then treats it as it always did.
    const timer = setTimeout(() => decide('grpc-js'), this.prefaceTimeoutMs);
    timer.unref();
    // A reset during the read is the client's: nothing to report (grpc-js adds its own listener after).
    socket.on('error', noop);
    socket.on('close', onClose);
    socket.on('data', onData);
  }

  private adopt(socket: Socket): void {
    this.accepted++;
    socket.setKeepAlive(true, this.limits.keepaliveTimeMs);
    const connection = new H2ServerConnection(socket, this.h2Limits, {
      onStream: this.onStream,
      onClose: () => this.open.delete(connection),
    });
    this.open.add(connection);
    socket.resume();
  }

  async close(graceMs: number): Promise<void> {
    this.closing = true;
    if (this.open.size === 0) return;
    const ended = Promise.all(
      [...this.open].map((connection) => new Promise<void>((resolve) => connection.socket.once('close', resolve))),
    );
    for (const connection of this.open) connection.close();
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<void>((resolve) => {
      timer = setTimeout(() => {
        for (const connection of this.open) connection.destroy();
        resolve();
      }, graceMs);
    });
    await Promise.race([ended, late]);
    clearTimeout(timer);
  }

  /** adapt makes a lean route's handler (grpc-js's signature) a handler of transports/h2's unary layer. */
  private adapt(path: string, handler: LeanUnaryHandler): UnaryHandler {
    return (request, call) => {
      this.calls++;
      const lean = new LeanConnectionCall(request, call, path, this.limits.messageBytesMax);
      // An unnamed closure: a class-field arrow would be named per call by esbuild's keepNames (a defineProperty,
      // ~300 bytes of garbage per call on a leader: bench/write-alloc.ts).
      handler(lean, (error, value, trailer) => lean.respond(error, value, trailer));
      return undefined;
    };
  }
}

const noop = (): void => undefined;
const LEGAL_TEXT_VALUE = /^[ -~]*$/;

/**
 * FieldMetadata reads a request header as lean-serve.ts's HeaderMetadata does from node:http2's headers: the
 * values of `key` joined with ', ' when repeated (node:http2 joins them so), [] when absent, a value that is
 * not printable ASCII dropped.
 */
class FieldMetadata implements MetadataReader {
  constructor(private readonly fields: readonly HeaderField[]) {}

  get(key: string): string[] {
    let joined: string | undefined;
    for (const [name, value] of this.fields)
      if (name === key) joined = joined === undefined ? value : `${joined}, ${value}`;
    return joined !== undefined && LEGAL_TEXT_VALUE.test(joined) ? [joined] : [];
  }
}

/** LeanConnectionCall is a call on a lean connection as a lean route's handler reads it (UnaryServerCall). */
class LeanConnectionCall implements UnaryServerCall {
  readonly metadata: MetadataReader;
  private readonly startedMs = Date.now();
  private cancelListeners: Array<() => void> | null = null;

  constructor(
    readonly request: Buffer,
    private readonly call: UnaryCall,
    private readonly path: string,
    private readonly messageBytesMax: number,
  ) {
    this.metadata = new FieldMetadata(call.stream.head.fields);
  }

  /** http2Session keys the peer certificate's cache (peer-identity.ts): the connection, read once. */
  get http2Session(): object {
    return this.call.stream.connection;
  }

  getPeer(): string {
    const socket = this.call.stream.connection.socket;
    if (!socket.remoteAddress) return 'unknown';
    return socket.remotePort ? `${socket.remoteAddress}:${socket.remotePort}` : socket.remoteAddress;
  }

  getDeadline(): grpc.Deadline {
    const timeout = headerValue(this.call.stream.head, 'grpc-timeout');
    const ms = timeout === undefined ? null : grpcTimeoutMs(timeout);
    return ms === null ? Infinity : this.startedMs + ms;
  }

  /** getAuthContext is lean-serve.ts's (grpc-js's reading): a verified TLS connection's peer certificate. */
  getAuthContext(): ReturnType<NonNullable<UnaryServerCall['getAuthContext']>> {
    const connection = this.call.stream.connection;
    const socket = connection.socket;
    if (!(socket instanceof TLSSocket) || !socket.authorized) return {};
    const peerCertificate = connection.peerCertificate;
    return {
      transportSecurityType: 'ssl',
      sslPeerCertificate: peerCertificate?.raw ? peerCertificate : undefined,
    } as ReturnType<NonNullable<UnaryServerCall['getAuthContext']>>;
  }

  on(event: 'cancelled', listener: () => void): this {
    if (event !== 'cancelled') return this;
    if (this.cancelListeners === null) {
      this.cancelListeners = [];
      this.call.onCancel = () => {
        const listeners = this.cancelListeners ?? [];
        this.cancelListeners = [];
        // On a later tick, as grpc-js and lean-serve.ts tell a handler.
        process.nextTick(() => listeners.forEach((each) => each()));
      };
    }
    this.cancelListeners.push(listener);
    return this;
  }

  /** respond is the handler's answer, read as grpc-js's sendUnaryData and serverErrorToStatus read it. */
  respond(error: RespondError, value?: Buffer | null, trailer?: grpc.Metadata): void {
    let answer: UnaryAnswer;
    if (error) {
      const metadata = trailer ?? error.metadata ?? null;
      let code: number = StatusCode.UNKNOWN;
      let details = 'message' in error && typeof error.message === 'string' ? error.message : 'Unknown Error';
      if (typeof error.code === 'number' && Number.isInteger(error.code)) {
        code = error.code;
        if (typeof error.details === 'string') details = error.details;
      }
      answer = { code, details, trailers: metadataFields(metadata) };
    } else {
      answer = trailer ? { message: value ?? EMPTY, trailers: metadataFields(trailer) } : { message: value ?? EMPTY };
      // As lean-serve.ts (and grpc-js): an answer above messageBytesMax is not sent.
      if (answer.message.length > this.messageBytesMax)
        answer = {
          code: StatusCode.RESOURCE_EXHAUSTED,
          details: `Sent message larger than max (${answer.message.length + GRPC_PREFIX_BYTES} vs. ${this.messageBytesMax})`,
        };
    }
    this.call.answer(answer);
    if (tracing()) stamp('answer.written', 0, this.path);
  }
}

/** RespondError: sendUnaryData's first argument (named parameters: a rest tuple would be an array per call). */
type RespondError = Parameters<UnaryRespond>[0];

const EMPTY = Buffer.alloc(0);
const GRPC_PREFIX_BYTES = 5;

/** metadataFields: a grpc-js Metadata's headers as HPACK fields (none for null). */
function metadataFields(metadata: grpc.Metadata | null): HeaderField[] {
  if (metadata === null) return [];
  const fields: HeaderField[] = [];
  for (const [name, value] of Object.entries(metadata.toHttp2Headers())) {
    if (value === undefined) continue;
    for (const each of Array.isArray(value) ? value : [value]) fields.push([name, String(each)]);
  }
  return fields;
}
