// A raw HTTP/2 client for tests: it writes whatever frames a test makes (well-formed or not) and reads the
// server's frames back, so the server's refusals (GOAWAY codes, RST_STREAM) can be asserted byte by byte.
import * as net from 'node:net';
import { CONNECTION_PREFACE, FRAME_HEADER_BYTES, frame, FrameType } from '../../../transports/h2/frames.js';

export interface Frame {
  type: number;
  flags: number;
  streamId: number;
  payload: Buffer;
}

export class RawClient {
  readonly frames: Frame[] = [];
  closed = false;
  private buffered = Buffer.alloc(0);
  private waiters: Array<() => void> = [];

  private constructor(readonly socket: net.Socket) {
    socket.on('data', (chunk: Buffer) => {
      this.buffered = Buffer.concat([this.buffered, chunk]);
      while (this.buffered.length >= FRAME_HEADER_BYTES) {
        const length = this.buffered.readUIntBE(0, 3);
        if (this.buffered.length < FRAME_HEADER_BYTES + length) break;
        this.frames.push({
          type: this.buffered[3]!,
          flags: this.buffered[4]!,
          streamId: this.buffered.readUInt32BE(5) & 0x7fffffff,
          payload: this.buffered.subarray(FRAME_HEADER_BYTES, FRAME_HEADER_BYTES + length),
        });
        this.buffered = this.buffered.subarray(FRAME_HEADER_BYTES + length);
      }
      this.wake();
    });
    socket.on('close', () => {
      this.closed = true;
      this.wake();
    });
    socket.on('error', () => undefined);
  }

  /** connect opens a socket; with `handshake` it sends the preface and an empty SETTINGS. */
  static async connect(port: number, handshake = true): Promise<RawClient> {
    const socket = net.connect(port, '127.0.0.1');
    await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
    const client = new RawClient(socket);
    if (handshake) client.write(CONNECTION_PREFACE, frame(FrameType.SETTINGS, 0, 0));
    return client;
  }

  write(...parts: Buffer[]): void {
    this.socket.write(Buffer.concat(parts));
  }

  private wake(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const waiter of waiters) waiter();
  }

  /** until waits (bounded) for `predicate` over what arrived, and returns the first frame it matched. */
  async until(predicate: (frame: Frame) => boolean, timeoutMs = 5_000): Promise<Frame> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = this.frames.find(predicate);
      if (found) return found;
      if (this.closed) throw new Error('the connection closed before the frame came');
      const left = deadline - Date.now();
      if (left <= 0) throw new Error('timed out waiting for a frame');
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  /** goAway waits for the server's GOAWAY and returns its error code. */
  async goAway(): Promise<{ code: number; debug: string }> {
    const found = await this.until((f) => f.type === FrameType.GOAWAY);
    return { code: found.payload.readUInt32BE(4), debug: found.payload.subarray(8).toString() };
  }

  /** closedBySever waits (bounded) for the server to close the connection. */
  async closedByServer(timeoutMs = 5_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!this.closed) {
      if (Date.now() > deadline) throw new Error('the server kept the connection open');
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, deadline - Date.now());
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  destroy(): void {
    this.socket.destroy();
  }
}
