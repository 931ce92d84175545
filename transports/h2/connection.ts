// One server-side HTTP/2 connection (RFC 9113) over a socket the caller accepted (net, or tls with ALPN h2):
// the preface, frame parsing, SETTINGS, PING (answered, and a keepalive of its own), flow control both ways, HEADERS + CONTINUATION through HPACK,
// RST_STREAM and GOAWAY. It knows nothing of gRPC: each request stream is handed to `onStream` once its
// headers are decoded, and answered with `H2Stream.respond` (headers, a body, trailers) in one socket write
// when the peer's windows allow. A protocol error ends the connection with GOAWAY and its code; a stream's own
// error resets only that stream.
//
// What node:http2 costs per call and this does not: a ServerHttp2Stream (a Duplex) per request, its headers
// object, and the turn of the event loop between an answer's message and its trailers.
import type { Socket } from 'node:net';
import type { PeerCertificate, TLSSocket } from 'node:tls';
import { decodeHeaderFields, type RequestHead } from './request-head.js';
import {
  CONNECTION_PREFACE,
  DEFAULT_WINDOW_BYTES,
  EMPTY,
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
import { encodeHeaderBlock, HpackDecoder, type HeaderField } from './hpack.js';
import type { H2Limits } from './limits.js';

/** A header list, or its HPACK block already encoded (hpack.ts's encodeHeaderBlock: constant answers encode once). */
export type HeaderBlock = readonly HeaderField[] | Buffer;

function encoded(block: HeaderBlock): Buffer {
  return Buffer.isBuffer(block) ? block : encodeHeaderBlock(block);
}

/**
 * ignore is every new stream's handler until the application sets its own: one function for all streams, as a
 * default arrow per field would be three closures per request (each named by esbuild's keepNames, tsx's and the
 * bundle's, a defineProperty apiece: ~900 bytes of garbage per write on a leader, bench/write-alloc.ts).
 */
const ignore = (): void => undefined;

/** H2Stream is one request stream as the application sees it. */
export class H2Stream {
  /** Called with each DATA payload (a view of the socket's buffer: copy to keep it past the call). */
  onData: (chunk: Buffer) => void = ignore;
  /** Called once when the peer ends its side (END_STREAM). */
  onEnd: () => void = ignore;
  /** Called once if the stream ends before our answer went out: the peer's RST_STREAM, or the connection lost. */
  onAbort: (code: number) => void = ignore;

  remoteClosed = false;
  localClosed = false;
  /** Set once the stream is out of the connection's table (answered and ended both ways, reset, or lost). */
  closed = false;
  sendWindow: number;
  recvWindow: number;
  /** DATA bytes received since our last WINDOW_UPDATE for this stream. */
  recvUnacked = 0;
  /** The answer's DATA still to send (what the windows have not let out yet) and its trailers' frames. */
  outData: Buffer = EMPTY;
  outDataAt = 0;
  outTrailers: Buffer | null = null;

  constructor(
    readonly connection: H2ServerConnection,
    readonly id: number,
    readonly head: RequestHead,
    sendWindow: number,
    recvWindow: number,
  ) {
    this.sendWindow = sendWindow;
    this.recvWindow = recvWindow;
  }

  /**
   * respond sends the answer: `headers` (a HEADERS frame), `body` as DATA within the peer's windows, then
   * `trailers` with END_STREAM, all in one socket write when the windows allow (the rest when they open).
   * Trailers-only: pass `headers` null and the whole header set as `trailers`.
   */
  respond(headers: HeaderBlock | null, body: Buffer, trailers: HeaderBlock): void {
    this.connection.respond(this, headers, body, trailers);
  }

  /** reset ends the stream with RST_STREAM(code); a later respond is dropped. */
  reset(code: number): void {
    this.connection.resetStream(this, code);
  }
}

export interface H2ConnectionEvents {
  /** A new request stream with its headers decoded (END_STREAM may already be set: `stream.remoteClosed`). */
  onStream(stream: H2Stream): void;
  /** The connection ended (after GOAWAY, the peer's close or an error), once. */
  onClose?(reason: string): void;
}

export class H2ServerConnection extends H2Framing {
  protected readonly pushPromiseRefusal = 'PUSH_PROMISE from a client';
  private readonly streams = new Map<number, H2Stream>();
  private readonly decoder: HpackDecoder;
  private prefaceSeen = false;
  private settingsSeen = false;
  private lastStreamId = 0;
  /** Peer settings that shape what we send. */
  private connSendWindow = DEFAULT_WINDOW_BYTES;
  private connRecvWindow: number;
  private connRecvUnacked = 0;
  /** Streams with DATA held back by the connection's window, in the order they asked. */
  private readonly blocked = new Set<H2Stream>();
  private ended = false;
  private readonly prefaceTimer: NodeJS.Timeout;
  private peerGoingAway = false;

  constructor(
    socket: Socket,
    private readonly limits: H2Limits,
    private readonly events: H2ConnectionEvents,
  ) {
    super(socket, limits);
    this.decoder = new HpackDecoder(limits.headerTableBytesMax);
    this.connRecvWindow = limits.connectionWindowBytes;
    socket.setNoDelay(true);
    const settings = settingsPayload([
      [Setting.MAX_CONCURRENT_STREAMS, limits.concurrentStreamCountMax],
      [Setting.INITIAL_WINDOW_SIZE, limits.streamWindowBytes],
      [Setting.MAX_FRAME_SIZE, limits.frameBytesMax],
      [Setting.MAX_HEADER_LIST_SIZE, limits.headerListBytesMax],
      [Setting.HEADER_TABLE_SIZE, limits.headerTableBytesMax],
    ]);
    this.out.push(frame(FrameType.SETTINGS, 0, 0, settings));
    if (limits.connectionWindowBytes > DEFAULT_WINDOW_BYTES)
      this.out.push(frame(FrameType.WINDOW_UPDATE, 0, 0, u32(limits.connectionWindowBytes - DEFAULT_WINDOW_BYTES)));
    this.flush();
    this.prefaceTimer = setTimeout(
      () => this.fail(new ConnectionError(ErrorCode.SETTINGS_TIMEOUT, 'no preface and SETTINGS in time')),
      limits.prefaceTimeoutMs,
    );
    this.prefaceTimer.unref();
    socket.on('data', (chunk: Buffer) => this.onSocketData(chunk));
    socket.on('close', () => this.onSocketClosed('socket closed'));
    // A reset or a TLS error: 'close' follows, which ends the streams.
    socket.on('error', () => undefined);
  }

  /**
   * peerCertificate is the TLS client's certificate, read once per connection (undefined in plaintext or when
   * the client presented none): what a gate checks, instead of once per call.
   */
  get peerCertificate(): PeerCertificate | undefined {
    if (this.peerCertificateRead === null) {
      const socket = this.socket as Partial<TLSSocket>;
      const certificate = socket.getPeerCertificate?.(false);
      this.peerCertificateRead = {
        certificate: certificate && Object.keys(certificate).length > 0 ? certificate : undefined,
      };
    }
    return this.peerCertificateRead.certificate;
  }

  protected get stopped(): boolean {
    return this.ended;
  }

  private peerCertificateRead: { certificate: PeerCertificate | undefined } | null = null;

  /** openStreamCount is how many streams the connection holds (for tests and stats). */
  get openStreamCount(): number {
    return this.streams.size;
  }

  /** destroy drops the connection at once: its open streams are aborted (their handlers told). */
  destroy(reason = 'destroyed'): void {
    this.socket.destroy();
    this.onSocketClosed(reason);
  }

  /** close sends GOAWAY(NO_ERROR) and ends the connection once its open streams are answered. */
  close(): void {
    if (this.ended) return;
    this.peerGoingAway = true;
    this.send(frame(FrameType.GOAWAY, 0, 0, goAwayPayload(this.lastStreamId, ErrorCode.NO_ERROR, '')));
    this.flush();
    this.endIfIdle();
  }

  // --- input -----------------------------------------------------------------------------------------------

  private onSocketData(chunk: Buffer): void {
    if (this.ended) return;
    this.buffered = this.buffered.length === 0 ? chunk : Buffer.concat([this.buffered, chunk]);
    this.parsing = true;
    try {
      this.parse();
    } catch (error) {
      this.fail(
        error instanceof ConnectionError
          ? error
          : new ConnectionError(ErrorCode.INTERNAL_ERROR, `internal: ${(error as Error).message}`),
      );
    } finally {
      this.parsing = false;
    }
    this.flush();
  }

  private parse(): void {
    let at = 0;
    const input = this.buffered;
    if (!this.prefaceSeen) {
      const have = Math.min(input.length, CONNECTION_PREFACE.length);
      if (input.compare(CONNECTION_PREFACE, 0, have, 0, have) !== 0)
        throw new ConnectionError(ErrorCode.PROTOCOL_ERROR, 'not the HTTP/2 connection preface');
      if (have < CONNECTION_PREFACE.length) return;
      this.prefaceSeen = true;
      at = CONNECTION_PREFACE.length;
    }
    this.readFrames(at);
  }

  protected onFrame(type: number, flags: number, streamId: number, payload: Buffer): void {
    if (!this.settingsSeen) {
      if (type !== FrameType.SETTINGS || (flags & Flag.ACK) !== 0)
        throw new ConnectionError(ErrorCode.PROTOCOL_ERROR, 'the first frame must be SETTINGS');
      this.settingsSeen = true;
      clearTimeout(this.prefaceTimer);
      this.startKeepalive(this.limits.keepaliveTimeMs, this.limits.keepaliveTimeoutMs, (reason) =>
        this.destroy(reason),
      );
    }
    this.dispatchFrame(type, flags, streamId, payload);
  }

  protected onData(flags: number, streamId: number, payload: Buffer): void {
    if (streamId === 0) throw new ConnectionError(ErrorCode.PROTOCOL_ERROR, 'DATA on stream 0');
    if (streamId > this.lastStreamId) throw new ConnectionError(ErrorCode.PROTOCOL_ERROR, 'DATA on an idle stream');
    // The whole payload, padding included, counts against both windows (RFC 9113 6.9.1).
    this.connRecvWindow -= payload.length;
    if (this.connRecvWindow < 0)
      throw new ConnectionError(ErrorCode.FLOW_CONTROL_ERROR, 'DATA beyond the connection window');
    this.connRecvUnacked += payload.length;
    if (this.connRecvUnacked >= this.limits.connectionWindowBytes / 2) {
      this.send(frame(FrameType.WINDOW_UPDATE, 0, 0, u32(this.connRecvUnacked)));
      this.connRecvWindow += this.connRecvUnacked;
      this.connRecvUnacked = 0;
    }
    const data = this.unpad(flags, payload, false);
    const stream = this.streams.get(streamId);
    // A stream we closed (answered and reset, or refused) may still have DATA in flight: counted, dropped.
    if (stream === undefined) return;
    if (stream.remoteClosed) return this.resetStream(stream, ErrorCode.STREAM_CLOSED);
    stream.recvWindow -= payload.length;
    if (stream.recvWindow < 0) return this.resetStream(stream, ErrorCode.FLOW_CONTROL_ERROR);
    const endStream = (flags & Flag.END_STREAM) !== 0;
    stream.recvUnacked += payload.length;
    if (!endStream && stream.recvUnacked >= this.limits.streamWindowBytes / 2) {
      this.send(frame(FrameType.WINDOW_UPDATE, 0, streamId, u32(stream.recvUnacked)));
      stream.recvWindow += stream.recvUnacked;
      stream.recvUnacked = 0;
    }
    if (data.length > 0) stream.onData(data);
    if (endStream && !stream.closed) this.endRemote(stream);
  }

  protected onHeaders(flags: number, streamId: number, payload: Buffer): void {
    if (streamId === 0) throw new ConnectionError(ErrorCode.PROTOCOL_ERROR, 'HEADERS on stream 0');
    if (streamId % 2 === 0) throw new ConnectionError(ErrorCode.PROTOCOL_ERROR, 'HEADERS on a server stream id');
    this.startHeaderBlock(flags, streamId, payload);
  }

  protected onHeaderBlock(block: PendingBlock, bytes: Buffer): void {
    const { fields, listBytes } = this.decodeBlock(this.decoder, bytes);
    const { streamId, endStream } = block;
    const existing = this.streams.get(streamId);
    if (existing !== undefined) {
      // Trailers: they must end the stream (RFC 9113 8.1); their fields are not read.
      if (!endStream || existing.remoteClosed) return this.resetStream(existing, ErrorCode.PROTOCOL_ERROR);
      return this.endRemote(existing);
    }
    if (streamId <= this.lastStreamId) {
      // A stream already closed: its block was decoded above to keep HPACK in step; nothing else to do.
      return;
    }
    this.lastStreamId = streamId;
    if (this.peerGoingAway) return;
    const head = decodeHeaderFields(fields, listBytes, this.limits.headerListBytesMax);
    const stream = new H2Stream(this, streamId, head, this.peerInitialWindow, this.limits.streamWindowBytes);
    if (this.streams.size >= this.limits.concurrentStreamCountMax) {
      this.send(frame(FrameType.RST_STREAM, 0, streamId, u32(ErrorCode.REFUSED_STREAM)));
      return;
    }
    if (head.malformed !== null) {
      this.send(frame(FrameType.RST_STREAM, 0, streamId, u32(ErrorCode.PROTOCOL_ERROR)));
      return;
    }
    this.streams.set(streamId, stream);
    stream.remoteClosed = endStream;
    this.events.onStream(stream);
    if (endStream && !stream.closed) stream.onEnd();
  }

  protected onRstStream(streamId: number, payload: Buffer): void {
    if (streamId === 0) throw new ConnectionError(ErrorCode.PROTOCOL_ERROR, 'RST_STREAM on stream 0');
    if (payload.length !== 4) throw new ConnectionError(ErrorCode.FRAME_SIZE_ERROR, 'RST_STREAM not 4 bytes');
    if (streamId > this.lastStreamId)
      throw new ConnectionError(ErrorCode.PROTOCOL_ERROR, 'RST_STREAM on an idle stream');
    const stream = this.streams.get(streamId);
    if (stream === undefined) return;
    this.forget(stream);
    stream.onAbort(payload.readUInt32BE(0));
  }

  protected onSettings(flags: number, streamId: number, payload: Buffer): void {
    const read = this.readSettings(flags, streamId, payload, this.streams.values(), (id, value) => {
      // HEADER_TABLE_SIZE: our encoder never indexes. MAX_CONCURRENT_STREAMS: we push nothing. Unknown: ignored.
      if (id === Setting.ENABLE_PUSH && value > 1)
        throw new ConnectionError(ErrorCode.PROTOCOL_ERROR, 'ENABLE_PUSH not 0 or 1');
    });
    if (read) for (const stream of this.streams.values()) this.pump(stream);
  }

  protected onGoAway(): void {
    this.peerGoingAway = true;
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
      for (const stream of [...this.blocked]) {
        this.blocked.delete(stream);
        this.pump(stream);
      }
      return;
    }
    if (streamId > this.lastStreamId)
      throw new ConnectionError(ErrorCode.PROTOCOL_ERROR, 'WINDOW_UPDATE on an idle stream');
    const stream = this.streams.get(streamId);
    if (stream === undefined) return;
    if (increment === 0) return this.resetStream(stream, ErrorCode.PROTOCOL_ERROR);
    stream.sendWindow += increment;
    if (stream.sendWindow > WINDOW_MAX) return this.resetStream(stream, ErrorCode.FLOW_CONTROL_ERROR);
    this.pump(stream);
  }

  private endRemote(stream: H2Stream): void {
    stream.remoteClosed = true;
    if (stream.localClosed) this.forget(stream);
    stream.onEnd();
  }

  // --- output ----------------------------------------------------------------------------------------------

  respond(stream: H2Stream, headers: HeaderBlock | null, body: Buffer, trailers: HeaderBlock): void {
    if (stream.closed || stream.localClosed || stream.outTrailers !== null || this.ended) return;
    const headerBlock = headers === null ? null : encoded(headers);
    const trailerBlock = encoded(trailers);
    if (headerBlock !== null && this.respondInOneBuffer(stream, headerBlock, body, trailerBlock)) return;
    if (headerBlock !== null) this.pushHeaderFrames(stream.id, headerBlock, 0);
    stream.outData = body;
    stream.outDataAt = 0;
    const trailerFrames: Buffer[] = [];
    this.pushHeaderFrames(stream.id, trailerBlock, Flag.END_STREAM, trailerFrames);
    stream.outTrailers = trailerFrames.length === 1 ? trailerFrames[0]! : Buffer.concat(trailerFrames);
    this.pump(stream);
    if (!this.parsing) this.flush();
  }

  /**
   * respondInOneBuffer writes a whole answer, HEADERS, one DATA frame and trailers, into one buffer when each fits
   * one frame and the windows take the body at once, and the request has ended (the usual unary answer): the same
   * frames respond's general path sends, without its five buffers and a list per answer (a leader answers one
   * per write). False, having done nothing, otherwise.
   */
  private respondInOneBuffer(stream: H2Stream, headerBlock: Buffer, body: Buffer, trailerBlock: Buffer): boolean {
    const frameBytesMax = this.peerFrameBytesMax;
    if (
      !stream.remoteClosed ||
      headerBlock.length > frameBytesMax ||
      trailerBlock.length > frameBytesMax ||
      body.length === 0 ||
      body.length > Math.min(this.connSendWindow, stream.sendWindow, frameBytesMax)
    )
      return false;
    const out = Buffer.allocUnsafe(3 * FRAME_HEADER_BYTES + headerBlock.length + body.length + trailerBlock.length);
    writeFrameHeader(out, 0, headerBlock.length, FrameType.HEADERS, Flag.END_HEADERS, stream.id);
    let at = FRAME_HEADER_BYTES + headerBlock.copy(out, FRAME_HEADER_BYTES);
    writeFrameHeader(out, at, body.length, FrameType.DATA, 0, stream.id);
    at += FRAME_HEADER_BYTES + body.copy(out, at + FRAME_HEADER_BYTES);
    writeFrameHeader(out, at, trailerBlock.length, FrameType.HEADERS, Flag.END_STREAM | Flag.END_HEADERS, stream.id);
    trailerBlock.copy(out, at + FRAME_HEADER_BYTES);
    stream.sendWindow -= body.length;
    this.connSendWindow -= body.length;
    stream.localClosed = true;
    this.out.push(out);
    this.forget(stream);
    if (!this.parsing) this.flush();
    return true;
  }

  /** pump sends what the windows allow of a stream's answer, then its trailers once the body is all out. */
  private pump(stream: H2Stream): void {
    if (stream.outTrailers === null || stream.closed) return;
    const data = stream.outData;
    while (stream.outDataAt < data.length) {
      const n = Math.min(
        data.length - stream.outDataAt,
        this.connSendWindow,
        stream.sendWindow,
        this.peerFrameBytesMax,
      );
      if (n <= 0) {
        if (this.connSendWindow <= 0) this.blocked.add(stream);
        return;
      }
      const header = Buffer.allocUnsafe(FRAME_HEADER_BYTES);
      writeFrameHeader(header, 0, n, FrameType.DATA, 0, stream.id);
      this.out.push(header, data.subarray(stream.outDataAt, stream.outDataAt + n));
      stream.outDataAt += n;
      stream.sendWindow -= n;
      this.connSendWindow -= n;
    }
    this.out.push(stream.outTrailers);
    stream.outTrailers = null;
    stream.outData = EMPTY;
    stream.localClosed = true;
    if (stream.remoteClosed) this.forget(stream);
    else {
      // Answered before the request ended: tell the peer to stop sending (RFC 9113 8.1).
      this.send(frame(FrameType.RST_STREAM, 0, stream.id, u32(ErrorCode.NO_ERROR)));
      this.forget(stream);
    }
  }

  resetStream(stream: H2Stream, code: number): void {
    if (stream.closed) return;
    this.send(frame(FrameType.RST_STREAM, 0, stream.id, u32(code)));
    this.forget(stream);
    if (!this.parsing) this.flush();
    if (code !== ErrorCode.NO_ERROR) stream.onAbort(code);
  }

  private forget(stream: H2Stream): void {
    stream.closed = true;
    this.streams.delete(stream.id);
    this.blocked.delete(stream);
    this.endIfIdle();
  }

  private endIfIdle(): void {
    if (this.peerGoingAway && this.streams.size === 0 && !this.ended) this.end('going away', false);
  }

  /** fail ends the connection for a connection error: GOAWAY(code) with the last stream we processed. */
  private fail(error: ConnectionError): void {
    if (this.ended) return;
    this.out = [frame(FrameType.GOAWAY, 0, 0, goAwayPayload(this.lastStreamId, error.code, error.message))];
    this.flush();
    this.end(error.message, true);
  }

  private end(reason: string, abortStreams: boolean): void {
    this.ended = true;
    clearTimeout(this.prefaceTimer);
    this.flush();
    this.socket.end();
    // A peer that never closes its side must not hold the socket.
    setTimeout(() => this.socket.destroy(), 1_000).unref();
    this.onSocketClosed(reason, abortStreams);
  }

  private closedReported = false;

  private onSocketClosed(reason: string, abortStreams = true): void {
    this.ended = true;
    clearTimeout(this.prefaceTimer);
    this.stopKeepalive();
    if (abortStreams)
      for (const stream of [...this.streams.values()]) {
        this.forget(stream);
        stream.onAbort(ErrorCode.CANCEL);
      }
    if (!this.closedReported) {
      this.closedReported = true;
      this.events.onClose?.(reason);
    }
  }
}
