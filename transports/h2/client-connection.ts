// One client-side HTTP/2 connection (RFC 9113) over a socket the caller dialled (net, or tls offering ALPN h2):
// the preface, frame parsing, the server's SETTINGS (MAX_CONCURRENT_STREAMS, INITIAL_WINDOW_SIZE, MAX_FRAME_SIZE)
// obeyed, flow control both ways, HEADERS + CONTINUATION through HPACK, RST_STREAM, GOAWAY, PING (answered, and
// ours as keepalive) and a connect timeout. It knows nothing of gRPC: `request` sends a header block and a body
// and tells the stream's listener what comes back. A protocol error by the server ends the connection with
// GOAWAY and its code, its streams failed; a stream's own error resets only that stream.
//
// What node:http2's client costs per call and this does not: a ClientHttp2Stream (a Duplex) per request, its
// header objects in and out, and a loop turn between the request's headers and its body. A request whose windows
// allow leaves as HEADERS + DATA in one socket write.
import type { Socket } from 'node:net';
import type { TLSSocket } from 'node:tls';
import type { H2ClientLimits } from './client-limits.js';
import {
  CONNECTION_PREFACE,
  DEFAULT_WINDOW_BYTES,
  ErrorCode,
  Flag,
  frame,
  FRAME_HEADER_BYTES,
  FrameType,
  goAwayPayload,
  Setting,
  settingsPayload,
  u32,
  WINDOW_MAX,
  writeFrameHeader,
} from './frames.js';
import { ConnectionError, H2Framing, type PendingBlock } from './framing.js';
import { HpackDecoder, type HeaderField } from './hpack.js';

/** The highest stream id a client may open (RFC 9113 5.1.1): past it the connection takes no new calls. */
const STREAM_ID_MAX = 2 ** 31 - 1;

/**
 * Why a stream ended without a complete answer. `refused`: the server never processed it (a GOAWAY below its
 * id, REFUSED_STREAM, or it never left a queue): safe to send again. `reset`: the server's RST_STREAM. `lost`:
 * the connection closed or was dropped (keepalive, connect timeout, close). `protocol`: the server broke
 * HTTP/2 on this stream or the connection. `headerListTooLarge`: an answer's header list above our bound.
 */
export type StreamFailureKind = 'refused' | 'reset' | 'lost' | 'protocol' | 'headerListTooLarge';

export interface StreamFailure {
  kind: StreamFailureKind;
  reason: string;
}

/**
 * ClientStreamListener is what a request's owner hears. Every call comes from a socket event or a timer, never
 * from inside `request` or `ClientStream.reset`; onEnd or onFailure ends it, once, and nothing follows.
 */
export interface ClientStreamListener {
  /** A final header block: the answer's headers first (`endStream` when trailers-only), then its trailers. */
  onHeaderBlock(fields: HeaderField[], endStream: boolean): void;
  /** A DATA payload (a view of the socket's bytes: nothing rewrites it, but it keeps that read alive). */
  onData(chunk: Buffer): void;
  /** The server ended the stream (END_STREAM) with its answer complete. */
  onEnd(): void;
  onFailure(failure: StreamFailure): void;
}

type StreamState = 'queued' | 'open' | 'closed';

/** ClientStream is one request: queued until the server's settings let it open, then open until it ends. */
export class ClientStream {
  state: StreamState = 'queued';
  id = 0;
  sendWindow = 0;
  recvWindow = 0;
  /** DATA bytes received since our last WINDOW_UPDATE for this stream. */
  recvUnacked = 0;
  /** The request's body still to send (what the windows have not let out yet). */
  bodyAt = 0;
  localDone = false;
  /** A final (non-1xx) header block arrived: the next one is the trailers. */
  answered = false;
  /** How it ended, for the listener once the current socket read is parsed. */
  ending: StreamFailure | null = null;

  constructor(
    readonly connection: H2ClientConnection,
    readonly block: Buffer,
    readonly body: Buffer,
    readonly listener: ClientStreamListener,
  ) {}

  /** reset ends the stream here: RST_STREAM(code) if it left, dropped from the queue if not. No listener call. */
  reset(code: number): void {
    this.connection.resetStream(this, code);
  }
}

export interface H2ClientConnectionOptions {
  limits: H2ClientLimits;
  /** The connection is dropped if the server's SETTINGS have not arrived within this (TCP, TLS and preface). */
  connectTimeoutMs: number;
  /** A PING every keepaliveTimeMs once connected; unanswered for keepaliveTimeoutMs, the connection is dropped. */
  keepaliveTimeMs: number;
  keepaliveTimeoutMs: number;
  /** Called once the server's first SETTINGS arrived (the connection counts as made). */
  onReady?(): void;
  /** Called once when the connection ended; `ready` says whether it had ever been made. */
  onClose?(reason: string, ready: boolean): void;
}

export class H2ClientConnection extends H2Framing {
  protected readonly pushPromiseRefusal = 'PUSH_PROMISE with push disabled';
  private readonly streams = new Map<number, ClientStream>();
  private queue: ClientStream[] = [];
  private queuedCount = 0;
  private readonly decoder: HpackDecoder;
  private nextStreamId = 1;
  /** The server's settings that shape what we send (RFC defaults until its SETTINGS). */
  private peerConcurrentStreamsMax = 0;
  private connSendWindow = DEFAULT_WINDOW_BYTES;
  private connRecvWindow: number;
  private connRecvUnacked = 0;
  /** Streams with body held back by a window, in the order they asked. */
  private readonly blocked = new Set<ClientStream>();
  /** Streams that ended while parsing: their listeners hear it after the read is parsed and our answers sent. */
  private ended: ClientStream[] = [];
  private ready = false;
  private goingAway = false;
  private closed = false;
  private closeReason = '';
  private socketError: string | null = null;
  private readonly connectTimer: NodeJS.Timeout;
  private referenced = false;

  constructor(
    socket: Socket,
    private readonly options: H2ClientConnectionOptions,
  ) {
    super(socket, options.limits);
    const { limits } = options;
    this.decoder = new HpackDecoder(limits.headerTableBytesMax);
    this.connRecvWindow = limits.connectionWindowBytes;
    socket.setNoDelay(true);
    socket.unref();
    // Written before the socket connects: node holds it until then (after the TLS handshake for a TLSSocket).
    const settings = settingsPayload([
      [Setting.ENABLE_PUSH, 0],
      [Setting.INITIAL_WINDOW_SIZE, limits.streamWindowBytes],
      [Setting.MAX_FRAME_SIZE, limits.frameBytesMax],
      [Setting.MAX_HEADER_LIST_SIZE, limits.headerListBytesMax],
      [Setting.HEADER_TABLE_SIZE, limits.headerTableBytesMax],
      // Served on a node's lean connection path (transports/grpc/lean-connections.ts); any other server ignores it.
      [Setting.LEAN_CONNECTION, 1],
    ]);
    this.out.push(CONNECTION_PREFACE, frame(FrameType.SETTINGS, 0, 0, settings));
    if (limits.connectionWindowBytes > DEFAULT_WINDOW_BYTES)
      this.out.push(frame(FrameType.WINDOW_UPDATE, 0, 0, u32(limits.connectionWindowBytes - DEFAULT_WINDOW_BYTES)));
    this.flush();
    this.connectTimer = setTimeout(
      () => this.destroy(`not connected within connectTimeoutMs (${options.connectTimeoutMs} ms)`),
      options.connectTimeoutMs,
    );
    this.connectTimer.unref();
    socket.on('secureConnect', () => {
      // A server that did not choose h2 would read our frames as something else.
      const alpn = (socket as TLSSocket).alpnProtocol;
      if (alpn !== 'h2') this.destroy(`the server did not agree to h2 by ALPN (${String(alpn)})`);
    });
    socket.on('data', (chunk: Buffer) => this.onSocketData(chunk));
    socket.on('error', (error: Error) => {
      this.socketError ??= error.message;
    });
    socket.on('close', () => this.onSocketClosed(this.socketError ?? 'the server closed the connection'));
  }

  protected get stopped(): boolean {
    return this.closed;
  }

  /** reusable: new requests may go here (not closed, no GOAWAY either way, stream ids left). */
  get reusable(): boolean {
    return !this.closed && !this.goingAway && this.nextStreamId <= STREAM_ID_MAX;
  }

  /** isReady: the server's SETTINGS arrived. */
  get isReady(): boolean {
    return this.ready;
  }

  /** openStreamCount and queuedStreamCount are for tests and stats. */
  get openStreamCount(): number {
    return this.streams.size;
  }

  get queuedStreamCount(): number {
    return this.queuedCount;
  }

  /**
   * request sends a request: `block` (an encoded header block) and `body` (ended with END_STREAM). It opens at
   * once when the server's settings allow, else it waits in a queue (bounded by queuedCallCountMax). It returns
   * the stream, or a reason it cannot be taken (the listener then hears nothing).
   */
  request(block: Buffer, body: Buffer, listener: ClientStreamListener): ClientStream | string {
    if (!this.reusable)
      return this.closed ? `the connection is closed (${this.closeReason})` : 'the connection is going away';
    const stream = new ClientStream(this, block, body, listener);
    if (this.ready && this.queuedCount === 0 && this.streams.size < this.peerConcurrentStreamsMax) {
      this.open(stream);
      if (!this.parsing) this.flush();
      return stream;
    }
    if (this.queuedCount >= this.options.limits.queuedCallCountMax)
      return `${this.queuedCount} calls already wait for a stream (queuedCallCountMax)`;
    this.queue.push(stream);
    this.queuedCount++;
    this.updateRef();
    return stream;
  }

  /** close sends GOAWAY(NO_ERROR) and ends the connection once its open streams have ended; queued ones fail. */
  close(): void {
    if (this.closed || this.goingAway) return;
    this.goingAway = true;
    this.send(frame(FrameType.GOAWAY, 0, 0, goAwayPayload(0, ErrorCode.NO_ERROR, '')));
    this.failQueued('refused', 'the connection is closing');
    this.flush();
    this.endIfIdle();
  }

  /** destroy drops the connection at once: its streams fail `lost` with `reason`. */
  destroy(reason: string): void {
    if (this.closed) return;
    this.socket.destroy();
    this.onSocketClosed(reason);
  }

  // --- output ----------------------------------------------------------------------------------------------

  private open(stream: ClientStream): void {
    const id = this.nextStreamId;
    this.nextStreamId += 2;
    // The last id a client may use: the connection takes no more and ends once its streams have.
    if (this.nextStreamId > STREAM_ID_MAX) this.goingAway = true;
    stream.id = id;
    stream.state = 'open';
    stream.sendWindow = this.peerInitialWindow;
    stream.recvWindow = this.options.limits.streamWindowBytes;
    this.streams.set(id, stream);
    this.updateRef();
    const { block, body } = stream;
    const bodyFits =
      body.length > 0 &&
      body.length <= this.connSendWindow &&
      body.length <= stream.sendWindow &&
      body.length <= this.peerFrameBytesMax;
    if (bodyFits && block.length <= this.peerFrameBytesMax) {
      // The common case: HEADERS and the whole body as one DATA(END_STREAM), in one buffer.
      const out = Buffer.allocUnsafe(2 * FRAME_HEADER_BYTES + block.length + body.length);
      writeFrameHeader(out, 0, block.length, FrameType.HEADERS, Flag.END_HEADERS, id);
      block.copy(out, FRAME_HEADER_BYTES);
      const dataAt = FRAME_HEADER_BYTES + block.length;
      writeFrameHeader(out, dataAt, body.length, FrameType.DATA, Flag.END_STREAM, id);
      body.copy(out, dataAt + FRAME_HEADER_BYTES);
      this.out.push(out);
      stream.bodyAt = body.length;
      stream.sendWindow -= body.length;
      this.connSendWindow -= body.length;
      stream.localDone = true;
      return;
    }
    this.pushHeaderFrames(id, block, body.length === 0 ? Flag.END_STREAM : 0);
    if (body.length === 0) stream.localDone = true;
    else this.pump(stream);
  }

  /** pump sends what the server's windows allow of a stream's body, END_STREAM on its last frame. */
  private pump(stream: ClientStream): void {
    if (stream.state !== 'open' || stream.localDone) return;
    const body = stream.body;
    while (stream.bodyAt < body.length) {
      const n = Math.min(body.length - stream.bodyAt, this.connSendWindow, stream.sendWindow, this.peerFrameBytesMax);
      if (n <= 0) {
        this.blocked.add(stream);
        return;
      }
      const last = stream.bodyAt + n === body.length;
      const header = Buffer.allocUnsafe(FRAME_HEADER_BYTES);
      writeFrameHeader(header, 0, n, FrameType.DATA, last ? Flag.END_STREAM : 0, stream.id);
      this.out.push(header, body.subarray(stream.bodyAt, stream.bodyAt + n));
      stream.bodyAt += n;
      stream.sendWindow -= n;
      this.connSendWindow -= n;
    }
    this.blocked.delete(stream);
    stream.localDone = true;
  }

  /** resetStream: see ClientStream.reset. */
  resetStream(stream: ClientStream, code: number): void {
    if (stream.state === 'closed') return;
    if (stream.state === 'queued') {
      stream.state = 'closed';
      this.queuedCount--;
      this.updateRef();
      // Cancelled entries leave the array when they reach its front; compact it if they pile up behind a stall.
      if (this.queue.length > 2 * this.queuedCount + 64) this.queue = this.queue.filter((s) => s.state === 'queued');
      return;
    }
    this.send(frame(FrameType.RST_STREAM, 0, stream.id, u32(code)));
    this.forget(stream);
    if (!this.parsing) this.flush();
  }

  /** openQueued opens what the queue holds while the server's MAX_CONCURRENT_STREAMS allows. */
  private openQueued(): void {
    while (this.queuedCount > 0 && this.streams.size < this.peerConcurrentStreamsMax && this.reusable) {
      const stream = this.queue.shift()!;
      if (stream.state !== 'queued') continue;
      this.queuedCount--;
      this.open(stream);
    }
    // Cancelled entries left at the front are dropped so the array does not grow with them.
    while (this.queue.length > 0 && this.queue[0]!.state !== 'queued') this.queue.shift();
    if (!this.reusable) this.failQueued('refused', 'the connection is going away');
  }

  private forget(stream: ClientStream): void {
    stream.state = 'closed';
    this.streams.delete(stream.id);
    this.blocked.delete(stream);
    this.updateRef();
    if (this.ready) this.openQueued();
    this.endIfIdle();
  }

  /** The socket holds the process open only while requests are open or queued (as lean-unary.ts's session). */
  private updateRef(): void {
    const busy = this.streams.size + this.queuedCount > 0;
    if (busy === this.referenced || this.socket.destroyed) return;
    this.referenced = busy;
    if (busy) this.socket.ref();
    else this.socket.unref();
  }

  // --- input -----------------------------------------------------------------------------------------------

  private onSocketData(chunk: Buffer): void {
    if (this.closed) return;
    this.buffered = this.buffered.length === 0 ? chunk : Buffer.concat([this.buffered, chunk]);
    this.parsing = true;
    let failure: ConnectionError | null = null;
    try {
      this.readFrames(0);
    } catch (error) {
      failure =
        error instanceof ConnectionError
          ? error
          : new ConnectionError(ErrorCode.INTERNAL_ERROR, `internal: ${(error as Error).message}`);
    } finally {
      this.parsing = false;
    }
    if (failure !== null) this.fail(failure);
    else this.flush();
    this.tellEnded();
  }

  protected onFrame(type: number, flags: number, streamId: number, payload: Buffer): void {
    if (!this.ready && (type !== FrameType.SETTINGS || (flags & Flag.ACK) !== 0))
      throw new ConnectionError(ErrorCode.PROTOCOL_ERROR, 'the server preface must begin with SETTINGS');
    this.dispatchFrame(type, flags, streamId, payload);
  }

  /** checkServerStream refuses a frame on a stream the server could not be talking about. */
  private checkServerStream(streamId: number, what: string): void {
    if (streamId === 0) throw new ConnectionError(ErrorCode.PROTOCOL_ERROR, `${what} on stream 0`);
    if (streamId % 2 === 0) throw new ConnectionError(ErrorCode.PROTOCOL_ERROR, `${what} on a server stream id`);
    if (streamId >= this.nextStreamId) throw new ConnectionError(ErrorCode.PROTOCOL_ERROR, `${what} on an idle stream`);
  }

  protected onData(flags: number, streamId: number, payload: Buffer): void {
    this.checkServerStream(streamId, 'DATA');
    // The whole payload, padding included, counts against both windows (RFC 9113 6.9.1).
    this.connRecvWindow -= payload.length;
    if (this.connRecvWindow < 0)
      throw new ConnectionError(ErrorCode.FLOW_CONTROL_ERROR, 'DATA beyond the connection window');
    this.connRecvUnacked += payload.length;
    if (this.connRecvUnacked >= this.options.limits.connectionWindowBytes / 2) {
      this.send(frame(FrameType.WINDOW_UPDATE, 0, 0, u32(this.connRecvUnacked)));
      this.connRecvWindow += this.connRecvUnacked;
      this.connRecvUnacked = 0;
    }
    const data = this.unpad(flags, payload, false);
    const stream = this.streams.get(streamId);
    // A stream we reset (cancelled, past its deadline) may still have DATA in flight: counted above, dropped.
    if (stream === undefined) return;
    if (!stream.answered) return this.streamError(stream, ErrorCode.PROTOCOL_ERROR, "DATA before the answer's headers");
    stream.recvWindow -= payload.length;
    if (stream.recvWindow < 0)
      return this.streamError(stream, ErrorCode.FLOW_CONTROL_ERROR, 'DATA beyond the stream window');
    const endStream = (flags & Flag.END_STREAM) !== 0;
    stream.recvUnacked += payload.length;
    if (!endStream && stream.recvUnacked >= this.options.limits.streamWindowBytes / 2) {
      this.send(frame(FrameType.WINDOW_UPDATE, 0, streamId, u32(stream.recvUnacked)));
      stream.recvWindow += stream.recvUnacked;
      stream.recvUnacked = 0;
    }
    if (data.length > 0) stream.listener.onData(data);
    if (endStream && stream.state === 'open') this.endRemote(stream);
  }

  protected onHeaders(flags: number, streamId: number, payload: Buffer): void {
    this.checkServerStream(streamId, 'HEADERS');
    this.startHeaderBlock(flags, streamId, payload);
  }

  protected onHeaderBlock(block: PendingBlock, bytes: Buffer): void {
    const listBytesMax = this.options.limits.headerListBytesMax;
    // Decoded even for a stream we no longer hold: the block changes the table the next one is read against.
    const { fields, listBytes } = this.decodeBlock(this.decoder, bytes);
    const stream = this.streams.get(block.streamId);
    if (stream === undefined) return;
    if (listBytes > listBytesMax) {
      this.send(frame(FrameType.RST_STREAM, 0, stream.id, u32(ErrorCode.CANCEL)));
      return this.endStream(stream, {
        kind: 'headerListTooLarge',
        reason: `an answer's header list of ${listBytes} bytes above headerListBytesMax (${listBytesMax})`,
      });
    }
    if (!stream.answered) {
      const status = fields.find(([name]) => name === ':status')?.[1];
      // An informational (1xx) block precedes the answer's headers and may not end the stream.
      if (status !== undefined && status.length === 3 && status[0] === '1') {
        if (block.endStream)
          return this.streamError(stream, ErrorCode.PROTOCOL_ERROR, 'a 1xx answer ending the stream');
        return;
      }
      stream.answered = true;
    } else if (!block.endStream) {
      return this.streamError(stream, ErrorCode.PROTOCOL_ERROR, 'trailers without END_STREAM');
    }
    stream.listener.onHeaderBlock(fields, block.endStream);
    if (block.endStream && stream.state === 'open') this.endRemote(stream);
  }

  /** endRemote: the server ended its side with the answer complete; a body not all sent is cut (RFC 9113 8.1). */
  private endRemote(stream: ClientStream): void {
    if (!stream.localDone) this.send(frame(FrameType.RST_STREAM, 0, stream.id, u32(ErrorCode.CANCEL)));
    this.endStream(stream, null);
  }

  /** streamError resets one stream for the server's mistake on it; the connection goes on. */
  private streamError(stream: ClientStream, code: number, reason: string): void {
    this.send(frame(FrameType.RST_STREAM, 0, stream.id, u32(code)));
    this.endStream(stream, { kind: 'protocol', reason });
  }

  /** endStream closes a stream and has its listener told once this read is parsed (or now, outside a read). */
  private endStream(stream: ClientStream, failure: StreamFailure | null): void {
    if (stream.state === 'closed') return;
    const wasQueued = stream.state === 'queued';
    if (wasQueued) {
      stream.state = 'closed';
      this.queuedCount--;
      this.updateRef();
    } else this.forget(stream);
    stream.ending = failure;
    this.ended.push(stream);
    if (!this.parsing) this.tellEndedLater();
  }

  private tellScheduled = false;

  /**
   * tellEndedLater tells the listeners on a later turn when a stream ended outside a socket read (a reset, a
   * close or destroy by the caller, a timer): never inside the caller's own call, as lean-unary.ts's streams.
   */
  private tellEndedLater(): void {
    if (this.tellScheduled) return;
    this.tellScheduled = true;
    setImmediate(() => {
      this.tellScheduled = false;
      this.tellEnded();
    });
  }

  /** tellEnded tells the listeners of streams that ended (after our frames for this read went out). */
  private tellEnded(): void {
    if (this.ended.length === 0) return;
    const ended = this.ended;
    this.ended = [];
    let thrown: unknown = null;
    for (const stream of ended) {
      try {
        if (stream.ending === null) stream.listener.onEnd();
        else stream.listener.onFailure(stream.ending);
      } catch (error) {
        // One listener's throw must not keep the others from hearing; the first is rethrown after.
        thrown ??= error;
      }
    }
    if (thrown !== null) throw thrown;
  }

  protected onRstStream(streamId: number, payload: Buffer): void {
    if (payload.length !== 4) throw new ConnectionError(ErrorCode.FRAME_SIZE_ERROR, 'RST_STREAM not 4 bytes');
    this.checkServerStream(streamId, 'RST_STREAM');
    const stream = this.streams.get(streamId);
    if (stream === undefined) return;
    const code = payload.readUInt32BE(0);
    this.endStream(
      stream,
      code === ErrorCode.REFUSED_STREAM
        ? { kind: 'refused', reason: 'the server refused the stream (REFUSED_STREAM)' }
        : { kind: 'reset', reason: `stream reset (code ${code})` },
    );
  }

  protected onSettings(flags: number, streamId: number, payload: Buffer): void {
    let concurrentStreamsMax = this.ready ? this.peerConcurrentStreamsMax : Infinity;
    const read = this.readSettings(flags, streamId, payload, this.streams.values(), (id, value) => {
      // A server may only say ENABLE_PUSH 0 (RFC 9113 6.5.2). HEADER_TABLE_SIZE: our encoder never indexes.
      // MAX_HEADER_LIST_SIZE: a call's headers are a few short fields. Unknown settings are ignored.
      if (id === Setting.ENABLE_PUSH && value !== 0)
        throw new ConnectionError(ErrorCode.PROTOCOL_ERROR, 'ENABLE_PUSH from a server not 0');
      if (id === Setting.MAX_CONCURRENT_STREAMS) concurrentStreamsMax = value;
    });
    if (!read) return;
    this.peerConcurrentStreamsMax = concurrentStreamsMax;
    if (!this.ready) {
      this.ready = true;
      clearTimeout(this.connectTimer);
      this.startKeepalive(this.options.keepaliveTimeMs, this.options.keepaliveTimeoutMs, (reason) =>
        this.destroy(reason),
      );
      this.options.onReady?.();
    }
    for (const stream of [...this.blocked]) this.pump(stream);
    this.openQueued();
  }

  /**
   * onGoAway: the server takes no new streams. Those above its last stream id were never processed and fail
   * `refused` (safe to send again, on a new connection); those at or below it go on; queued ones fail `refused`.
   */
  protected onGoAway(payload: Buffer): void {
    const lastStreamId = payload.readUInt32BE(0) & 0x7fffffff;
    const code = payload.readUInt32BE(4);
    const debug = payload.toString('utf8', 8, Math.min(payload.length, 8 + 200));
    this.goingAway = true;
    const why = `the server sent GOAWAY (code ${code}${debug ? `: ${debug}` : ''})`;
    for (const stream of [...this.streams.values()])
      if (stream.id > lastStreamId) this.endStream(stream, { kind: 'refused', reason: `${why}; not processed` });
    this.failQueued('refused', why);
    this.endIfIdle();
  }

  protected onWindowUpdate(streamId: number, payload: Buffer): void {
    if (payload.length !== 4) throw new ConnectionError(ErrorCode.FRAME_SIZE_ERROR, 'WINDOW_UPDATE not 4 bytes');
    const increment = payload.readUInt32BE(0) & 0x7fffffff;
    if (streamId === 0) {
      if (increment === 0) throw new ConnectionError(ErrorCode.PROTOCOL_ERROR, 'WINDOW_UPDATE of 0');
      this.connSendWindow += increment;
      if (this.connSendWindow > WINDOW_MAX)
        throw new ConnectionError(ErrorCode.FLOW_CONTROL_ERROR, 'the connection window above 2^31-1');
      for (const stream of [...this.blocked]) this.pump(stream);
      return;
    }
    this.checkServerStream(streamId, 'WINDOW_UPDATE');
    const stream = this.streams.get(streamId);
    if (stream === undefined) return;
    if (increment === 0) return this.streamError(stream, ErrorCode.PROTOCOL_ERROR, 'WINDOW_UPDATE of 0');
    stream.sendWindow += increment;
    if (stream.sendWindow > WINDOW_MAX)
      return this.streamError(stream, ErrorCode.FLOW_CONTROL_ERROR, 'a stream window above 2^31-1');
    this.pump(stream);
  }

  // --- liveness and ending ---------------------------------------------------------------------------------

  private failQueued(kind: StreamFailureKind, reason: string): void {
    if (this.queuedCount === 0) return;
    const queued = this.queue.splice(0);
    for (const stream of queued) if (stream.state === 'queued') this.endStream(stream, { kind, reason });
  }

  private endIfIdle(): void {
    if (this.goingAway && !this.closed && this.streams.size === 0 && this.queuedCount === 0) {
      this.flush();
      this.socket.end();
      setTimeout(() => this.socket.destroy(), this.options.limits.closeGraceMs).unref();
      this.onSocketClosed('going away');
    }
  }

  /** fail ends the connection for the server's protocol error: GOAWAY(code), its streams failed `protocol`. */
  private fail(error: ConnectionError): void {
    if (this.closed) return;
    this.out = [frame(FrameType.GOAWAY, 0, 0, goAwayPayload(0, error.code, error.message))];
    this.flush();
    this.socket.end();
    setTimeout(() => this.socket.destroy(), this.options.limits.closeGraceMs).unref();
    this.onSocketClosed(error.message, 'protocol');
  }

  private onSocketClosed(reason: string, kind: StreamFailureKind = 'lost'): void {
    if (this.closed) return;
    this.closed = true;
    this.closeReason = reason;
    clearTimeout(this.connectTimer);
    this.stopKeepalive();
    const parsing = this.parsing;
    // Streams fail after this read's parse if it is under way (tellEnded runs at its end), else now.
    this.parsing = true;
    for (const stream of [...this.streams.values()]) this.endStream(stream, { kind, reason });
    this.failQueued(kind === 'protocol' ? 'lost' : kind, reason);
    this.parsing = parsing;
    this.options.onClose?.(reason, this.ready);
    if (!parsing) this.tellEndedLater();
  }
}
