// A scripted HTTP/2 server for the client's tests: it reads the client's frames (preface, HEADERS, DATA) and lets a
// test answer each request with frames of its choosing (split, padded, broken), or send anything at all.
import * as net from 'node:net';
import {
  CONNECTION_PREFACE,
  DEFAULT_FRAME_BYTES,
  Flag,
  frame,
  FRAME_HEADER_BYTES,
  FrameType,
  settingsPayload,
} from '../../../transports/h2/frames.js';
import { encodeHeaderBlock, type HeaderField } from '../../../transports/h2/hpack.js';

export interface ReceivedFrame {
  type: number;
  flags: number;
  streamId: number;
  payload: Buffer;
}

/** ScriptedPeer is one accepted connection. */
export class ScriptedPeer {
  readonly frames: ReceivedFrame[] = [];
  /** Called with a request's stream id once its END_STREAM arrives. */
  onRequest: (streamId: number) => void = () => undefined;
  private buffered = Buffer.alloc(0);
  private prefaceSeen = false;

  constructor(readonly socket: net.Socket) {
    socket.on('data', (chunk: Buffer) => this.read(chunk));
    socket.on('error', () => undefined);
  }

  write(bytes: Buffer): void {
    if (!this.socket.destroyed) this.socket.write(bytes);
  }

  settings(pairs: ReadonlyArray<readonly [number, number]> = []): void {
    this.write(frame(FrameType.SETTINGS, 0, 0, settingsPayload(pairs)));
  }

  /** answer sends headers, the message (length-prefixed) and trailers: the plain gRPC OK answer. */
  answer(streamId: number, message: Buffer, trailers: HeaderField[] = [['grpc-status', '0']]): void {
    // DATA in frames of the default SETTINGS_MAX_FRAME_SIZE; windows are not looked at.
    const body = grpcMessage(message);
    const frames = [frame(FrameType.HEADERS, Flag.END_HEADERS, streamId, ANSWER_HEADERS)];
    for (let at = 0; at < body.length; at += DEFAULT_FRAME_BYTES)
      frames.push(frame(FrameType.DATA, 0, streamId, body.subarray(at, at + DEFAULT_FRAME_BYTES)));
    frames.push(frame(FrameType.HEADERS, Flag.END_HEADERS | Flag.END_STREAM, streamId, encodeHeaderBlock(trailers)));
    this.write(Buffer.concat(frames));
  }

  private read(chunk: Buffer): void {
    this.buffered = Buffer.concat([this.buffered, chunk]);
    if (!this.prefaceSeen) {
      if (this.buffered.length < CONNECTION_PREFACE.length) return;
      this.prefaceSeen = true;
      this.buffered = this.buffered.subarray(CONNECTION_PREFACE.length);
    }
    while (this.buffered.length >= FRAME_HEADER_BYTES) {
      const length = this.buffered.readUIntBE(0, 3);
      if (this.buffered.length < FRAME_HEADER_BYTES + length) return;
      const received: ReceivedFrame = {
        type: this.buffered[3]!,
        flags: this.buffered[4]!,
        streamId: this.buffered.readUInt32BE(5) & 0x7fffffff,
        payload: Buffer.from(this.buffered.subarray(FRAME_HEADER_BYTES, FRAME_HEADER_BYTES + length)),
      };
      this.buffered = this.buffered.subarray(FRAME_HEADER_BYTES + length);
      this.frames.push(received);
      const ends =
        (received.type === FrameType.DATA || received.type === FrameType.HEADERS) &&
        (received.flags & Flag.END_STREAM) !== 0;
      if (ends) this.onRequest(received.streamId);
    }
  }
}

export const ANSWER_HEADERS = encodeHeaderBlock([
  [':status', '200'],
  ['content-type', 'application/grpc'],
]);

export function grpcMessage(message: Buffer): Buffer {
  const out = Buffer.alloc(5 + message.length);
  out.writeUInt32BE(message.length, 1);
  message.copy(out, 5);
  return out;
}

/** ScriptedServer accepts connections and hands each to `onPeer`. */
export class ScriptedServer {
  readonly peers: ScriptedPeer[] = [];

  private constructor(private readonly server: net.Server) {}

  static async start(onPeer: (peer: ScriptedPeer) => void): Promise<ScriptedServer> {
    const server = net.createServer();
    const scripted = new ScriptedServer(server);
    server.on('connection', (socket) => {
      const peer = new ScriptedPeer(socket);
      scripted.peers.push(peer);
      onPeer(peer);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return scripted;
  }

  get address(): string {
    return `127.0.0.1:${(this.server.address() as net.AddressInfo).port}`;
  }

  async close(): Promise<void> {
    for (const peer of this.peers) peer.socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
