// What both ends of our HTTP/2 connections share (connection.ts, the server's; client-connection.ts, the client's):
// reading whole frames off the socket's bytes, padding, header blocks joined from HEADERS + CONTINUATION and
// decoded, header blocks split into frames within the peer's frame size, PING (answered, and our keepalive's
// own), and the output gathered into one write.
import type { Socket } from 'node:net';
import {
  DEFAULT_FRAME_BYTES,
  DEFAULT_WINDOW_BYTES,
  EMPTY,
  ErrorCode,
  Flag,
  frame,
  FRAME_HEADER_BYTES,
  FrameType,
  Setting,
  WINDOW_MAX,
} from './frames.js';
import { HpackError, type DecodedBlock, type HpackDecoder } from './hpack.js';

/** A header block in more frames than this is a flood (empty CONTINUATION frames grow no byte count). */
export const CONTINUATION_FRAME_COUNT_MAX = 64;

/** A connection error: the connection ends with GOAWAY(code). */
export class ConnectionError extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

/** A header block being joined: its HEADERS frame's stream and END_STREAM, and its fragments so far. */
export interface PendingBlock {
  streamId: number;
  endStream: boolean;
  fragments: Buffer[];
  bytes: number;
}

export interface FramingBounds {
  /** Our SETTINGS_MAX_FRAME_SIZE: a larger frame is a FRAME_SIZE_ERROR. */
  frameBytesMax: number;
  /** Our SETTINGS_MAX_HEADER_LIST_SIZE: a compressed block above twice it ends the connection. */
  headerListBytesMax: number;
  /** A control answer is refused while this much of our output is unsent (the peer does not read). */
  unsentBytesMax: number;
}

export abstract class H2Framing {
  /** Bytes read but not yet a whole frame. */
  protected buffered: Buffer = EMPTY;
  /** Frames produced while parsing one socket read go out together at its end. */
  protected out: Buffer[] = [];
  protected parsing = false;
  protected pendingBlock: PendingBlock | null = null;
  /** The peer's SETTINGS_MAX_FRAME_SIZE (the RFC's default until its SETTINGS). */
  protected peerFrameBytesMax = DEFAULT_FRAME_BYTES;
  /** The peer's SETTINGS_INITIAL_WINDOW_SIZE: a new stream's send window. */
  protected peerInitialWindow = DEFAULT_WINDOW_BYTES;
  private keepaliveTimer: NodeJS.Timeout | null = null;
  /** Set while our keepalive PING waits for its ACK. */
  private pingTimer: NodeJS.Timeout | null = null;
  /** Our keepalive PINGs so far: the last one's count is its payload, so only its own ACK answers it. */
  private pingCount = 0;

  constructor(
    readonly socket: Socket,
    private readonly bounds: FramingBounds,
  ) {}

  /** stopped: the connection has ended; no more frames are read. */
  protected abstract get stopped(): boolean;
  /** onFrame: each whole frame read; the side checks what its start requires, then calls dispatchFrame. */
  protected abstract onFrame(type: number, flags: number, streamId: number, payload: Buffer): void;
  /** The side's own readers of the frames dispatchFrame hands on. */
  protected abstract onData(flags: number, streamId: number, payload: Buffer): void;
  protected abstract onHeaders(flags: number, streamId: number, payload: Buffer): void;
  protected abstract onRstStream(streamId: number, payload: Buffer): void;
  protected abstract onSettings(flags: number, streamId: number, payload: Buffer): void;
  /** onGoAway: a GOAWAY on stream 0 of at least 8 bytes (its last stream id, code and debug data). */
  protected abstract onGoAway(payload: Buffer): void;
  protected abstract onWindowUpdate(streamId: number, payload: Buffer): void;
  /** The PROTOCOL_ERROR's text for a PUSH_PROMISE (neither side accepts one: a client's, or with push disabled). */
  protected abstract readonly pushPromiseRefusal: string;
  /** onHeaderBlock: a whole header block (HEADERS + CONTINUATION joined), still compressed. */
  protected abstract onHeaderBlock(block: PendingBlock, bytes: Buffer): void;

  /** readFrames hands every whole frame of `buffered` from `at` to onFrame and keeps the rest. */
  protected readFrames(at: number): void {
    const input = this.buffered;
    while (!this.stopped && input.length - at >= FRAME_HEADER_BYTES) {
      const length = input.readUIntBE(at, 3);
      if (length > this.bounds.frameBytesMax)
        throw new ConnectionError(
          ErrorCode.FRAME_SIZE_ERROR,
          `a frame of ${length} bytes above SETTINGS_MAX_FRAME_SIZE`,
        );
      if (input.length - at < FRAME_HEADER_BYTES + length) break;
      const type = input[at + 3]!;
      const flags = input[at + 4]!;
      const streamId = input.readUInt32BE(at + 5) & 0x7fffffff;
      const payload = input.subarray(at + FRAME_HEADER_BYTES, at + FRAME_HEADER_BYTES + length);
      at += FRAME_HEADER_BYTES + length;
      this.onFrame(type, flags, streamId, payload);
    }
    this.buffered = at === input.length ? EMPTY : input.subarray(at);
  }

  /**
   * dispatchFrame checks what RFC 9113 asks of a frame on either side (a header block not interrupted, the
   * shape of PRIORITY and GOAWAY, PING answered or our keepalive's ACK taken) and hands the rest to the side's
   * readers. Unknown frame types are ignored (RFC 9113 4.1); PRIORITY is checked and ignored (9113 deprecates it).
   */
  protected dispatchFrame(type: number, flags: number, streamId: number, payload: Buffer): void {
    this.checkBlockNotInterrupted(type, streamId);
    switch (type) {
      case FrameType.DATA:
        return this.onData(flags, streamId, payload);
      case FrameType.HEADERS:
        return this.onHeaders(flags, streamId, payload);
      case FrameType.CONTINUATION:
        return this.continueHeaderBlock(flags, streamId, payload);
      case FrameType.PRIORITY:
        if (streamId === 0) throw new ConnectionError(ErrorCode.PROTOCOL_ERROR, 'PRIORITY on stream 0');
        if (payload.length !== 5) throw new ConnectionError(ErrorCode.FRAME_SIZE_ERROR, 'PRIORITY not 5 bytes');
        return;
      case FrameType.RST_STREAM:
        return this.onRstStream(streamId, payload);
      case FrameType.SETTINGS:
        return this.onSettings(flags, streamId, payload);
      case FrameType.PUSH_PROMISE:
        throw new ConnectionError(ErrorCode.PROTOCOL_ERROR, this.pushPromiseRefusal);
      case FrameType.PING:
        return this.readPing(flags, streamId, payload);
      case FrameType.GOAWAY:
        if (streamId !== 0) throw new ConnectionError(ErrorCode.PROTOCOL_ERROR, 'GOAWAY on a stream');
        if (payload.length < 8) throw new ConnectionError(ErrorCode.FRAME_SIZE_ERROR, 'GOAWAY under 8 bytes');
        return this.onGoAway(payload);
      case FrameType.WINDOW_UPDATE:
        return this.onWindowUpdate(streamId, payload);
      default:
        return;
    }
  }

  /** checkBlockNotInterrupted: while a header block is open only its CONTINUATION may come (RFC 9113 6.10). */
  private checkBlockNotInterrupted(type: number, streamId: number): void {
    if (this.pendingBlock !== null && (type !== FrameType.CONTINUATION || streamId !== this.pendingBlock.streamId))
      throw new ConnectionError(ErrorCode.PROTOCOL_ERROR, 'a header block interrupted (CONTINUATION expected)');
  }

  /** unpad strips a PADDED frame's padding (and the priority fields of HEADERS when flagged). */
  protected unpad(flags: number, payload: Buffer, priority: boolean): Buffer {
    let start = 0;
    let end = payload.length;
    if (flags & Flag.PADDED) {
      if (payload.length < 1) throw new ConnectionError(ErrorCode.FRAME_SIZE_ERROR, 'padded frame without its length');
      start = 1;
      end -= payload[0]!;
    }
    if (priority && flags & Flag.PRIORITY) start += 5;
    if (end < start) throw new ConnectionError(ErrorCode.PROTOCOL_ERROR, 'padding beyond the frame');
    return payload.subarray(start, end);
  }

  /** startHeaderBlock reads a HEADERS frame (its stream id already checked by the caller). */
  protected startHeaderBlock(flags: number, streamId: number, payload: Buffer): void {
    const fragment = this.unpad(flags, payload, true);
    const block: PendingBlock = {
      streamId,
      endStream: (flags & Flag.END_STREAM) !== 0,
      fragments: [fragment],
      bytes: fragment.length,
    };
    this.checkBlockBytes(block.bytes);
    if (flags & Flag.END_HEADERS) this.onHeaderBlock(block, fragment);
    else this.pendingBlock = block;
  }

  protected continueHeaderBlock(flags: number, streamId: number, payload: Buffer): void {
    const block = this.pendingBlock;
    if (block === null || streamId !== block.streamId)
      throw new ConnectionError(ErrorCode.PROTOCOL_ERROR, 'CONTINUATION without a header block');
    block.fragments.push(payload);
    block.bytes += payload.length;
    this.checkBlockBytes(block.bytes);
    if (block.fragments.length > CONTINUATION_FRAME_COUNT_MAX)
      throw new ConnectionError(ErrorCode.ENHANCE_YOUR_CALM, 'a header block in too many CONTINUATION frames');
    if (flags & Flag.END_HEADERS) {
      this.pendingBlock = null;
      this.onHeaderBlock(block, Buffer.concat(block.fragments));
    }
  }

  /** A compressed block above twice the list bound is not buffered: HPACK cannot stay in step, so the connection ends. */
  private checkBlockBytes(bytes: number): void {
    const max = 2 * this.bounds.headerListBytesMax;
    if (bytes > max) throw new ConnectionError(ErrorCode.ENHANCE_YOUR_CALM, `a header block above ${max} bytes`);
  }

  /** decodeBlock decodes a block (fields past the list bound counted, not kept); an HPACK error ends the connection. */
  protected decodeBlock(decoder: HpackDecoder, bytes: Buffer): DecodedBlock {
    try {
      return decoder.decode(bytes, this.bounds.headerListBytesMax);
    } catch (error) {
      if (error instanceof HpackError) throw new ConnectionError(ErrorCode.COMPRESSION_ERROR, error.message);
      throw error;
    }
  }

  /** pushHeaderFrames splits a header block into HEADERS and CONTINUATION frames within the peer's frame size. */
  protected pushHeaderFrames(streamId: number, block: Buffer, flags: number, into: Buffer[] = this.out): void {
    const size = this.peerFrameBytesMax;
    if (block.length <= size) {
      into.push(frame(FrameType.HEADERS, flags | Flag.END_HEADERS, streamId, block));
      return;
    }
    for (let at = 0; at < block.length; at += size) {
      const last = at + size >= block.length;
      const type = at === 0 ? FrameType.HEADERS : FrameType.CONTINUATION;
      into.push(
        frame(type, (at === 0 ? flags : 0) | (last ? Flag.END_HEADERS : 0), streamId, block.subarray(at, at + size)),
      );
    }
  }

  /**
   * readSettings checks a SETTINGS frame, applies what shapes our sending (INITIAL_WINDOW_SIZE, to the open
   * `streams`' send windows too; MAX_FRAME_SIZE), hands every other setting to `other` (which may refuse it),
   * and queues the ACK. False for the peer's ACK of ours.
   */
  protected readSettings(
    flags: number,
    streamId: number,
    payload: Buffer,
    streams: Iterable<{ sendWindow: number }>,
    other: (id: number, value: number) => void,
  ): boolean {
    if (streamId !== 0) throw new ConnectionError(ErrorCode.PROTOCOL_ERROR, 'SETTINGS on a stream');
    if (flags & Flag.ACK) {
      if (payload.length !== 0) throw new ConnectionError(ErrorCode.FRAME_SIZE_ERROR, 'SETTINGS ACK with a payload');
      return false;
    }
    if (payload.length % 6 !== 0) throw new ConnectionError(ErrorCode.FRAME_SIZE_ERROR, 'SETTINGS not a multiple of 6');
    for (let at = 0; at < payload.length; at += 6) {
      const id = payload.readUInt16BE(at);
      const value = payload.readUInt32BE(at + 2);
      if (id === Setting.INITIAL_WINDOW_SIZE) {
        if (value > WINDOW_MAX)
          throw new ConnectionError(ErrorCode.FLOW_CONTROL_ERROR, 'INITIAL_WINDOW_SIZE above 2^31-1');
        const delta = value - this.peerInitialWindow;
        this.peerInitialWindow = value;
        for (const stream of streams) {
          stream.sendWindow += delta;
          if (stream.sendWindow > WINDOW_MAX)
            throw new ConnectionError(ErrorCode.FLOW_CONTROL_ERROR, 'a stream window above 2^31-1');
        }
      } else if (id === Setting.MAX_FRAME_SIZE) {
        if (value < DEFAULT_FRAME_BYTES || value > 2 ** 24 - 1)
          throw new ConnectionError(ErrorCode.PROTOCOL_ERROR, 'MAX_FRAME_SIZE out of range');
        this.peerFrameBytesMax = value;
      } else other(id, value);
    }
    this.checkUnsent();
    this.send(frame(FrameType.SETTINGS, Flag.ACK, 0));
    return true;
  }

  /**
   * readPing answers the peer's PING (ACK with its payload, RFC 9113 6.7) or takes the ACK of our keepalive's:
   * the connection is alive. An ACK that is not our last PING's is ignored.
   */
  protected readPing(flags: number, streamId: number, payload: Buffer): void {
    if (streamId !== 0) throw new ConnectionError(ErrorCode.PROTOCOL_ERROR, 'PING on a stream');
    if (payload.length !== 8) throw new ConnectionError(ErrorCode.FRAME_SIZE_ERROR, 'PING not 8 bytes');
    if ((flags & Flag.ACK) === 0) {
      this.checkUnsent();
      this.send(frame(FrameType.PING, Flag.ACK, 0, payload));
      return;
    }
    if (this.pingTimer !== null && payload.readUInt32BE(4) === this.pingCount) {
      clearTimeout(this.pingTimer);
      this.pingTimer = null;
    }
  }

  /**
   * startKeepalive sends a PING every `timeMs` (one at a time) and calls `unanswered` when one has had no ACK
   * within `timeoutMs`: a peer that vanished without a FIN (power loss, partition) is found in about
   * timeMs + timeoutMs rather than by TCP's own probes, minutes later. Neither timer holds the process open.
   */
  protected startKeepalive(timeMs: number, timeoutMs: number, unanswered: (reason: string) => void): void {
    if (this.keepaliveTimer !== null) return;
    this.keepaliveTimer = setInterval(() => {
      if (this.stopped || this.pingTimer !== null) return;
      this.pingCount = (this.pingCount + 1) >>> 0;
      const opaque = Buffer.alloc(8);
      opaque.writeUInt32BE(this.pingCount, 4);
      this.pingTimer = setTimeout(
        () => unanswered(`keepalive ping unanswered for keepaliveTimeoutMs (${timeoutMs} ms)`),
        timeoutMs,
      );
      this.pingTimer.unref();
      this.send(frame(FrameType.PING, 0, 0, opaque));
      if (!this.parsing) this.flush();
    }, timeMs);
    this.keepaliveTimer.unref();
  }

  /** stopKeepalive clears the keepalive's timers (the connection ended). */
  protected stopKeepalive(): void {
    if (this.keepaliveTimer !== null) clearInterval(this.keepaliveTimer);
    if (this.pingTimer !== null) clearTimeout(this.pingTimer);
    this.keepaliveTimer = null;
    this.pingTimer = null;
  }

  /** checkUnsent refuses to queue another control answer for a peer that does not read what we sent. */
  protected checkUnsent(): void {
    if (this.socket.writableLength > this.bounds.unsentBytesMax)
      throw new ConnectionError(ErrorCode.ENHANCE_YOUR_CALM, 'the peer does not read our answers');
  }

  protected send(bytes: Buffer): void {
    this.out.push(bytes);
  }

  protected flush(): void {
    if (this.out.length === 0 || this.socket.destroyed) {
      this.out = [];
      return;
    }
    const bytes = this.out.length === 1 ? this.out[0]! : Buffer.concat(this.out);
    this.out = [];
    this.socket.write(bytes);
  }
}
