// HTTP/2 wire constants (RFC 9113) and the frame writer: everything connection.ts puts on the socket.

export const CONNECTION_PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1');
export const FRAME_HEADER_BYTES = 9;
/** What the peer assumes of us, and we of it, until SETTINGS say otherwise (RFC 9113 6.5.2). */
export const DEFAULT_WINDOW_BYTES = 65_535;
export const DEFAULT_FRAME_BYTES = 16_384;
export const WINDOW_MAX = 2 ** 31 - 1;

export const FrameType = {
  DATA: 0x0,
  HEADERS: 0x1,
  PRIORITY: 0x2,
  RST_STREAM: 0x3,
  SETTINGS: 0x4,
  PUSH_PROMISE: 0x5,
  PING: 0x6,
  GOAWAY: 0x7,
  WINDOW_UPDATE: 0x8,
  CONTINUATION: 0x9,
} as const;

export const Flag = {
  END_STREAM: 0x1,
  ACK: 0x1,
  END_HEADERS: 0x4,
  PADDED: 0x8,
  PRIORITY: 0x20,
} as const;

export const Setting = {
  HEADER_TABLE_SIZE: 0x1,
  ENABLE_PUSH: 0x2,
  MAX_CONCURRENT_STREAMS: 0x3,
  INITIAL_WINDOW_SIZE: 0x4,
  MAX_FRAME_SIZE: 0x5,
  MAX_HEADER_LIST_SIZE: 0x6,
  /**
   * LEAN_CONNECTION (ours, in the registry's experimental range 0xf000-0xffff; a server that does not know it
   * ignores it, RFC 9113 6.5.2): set to 1 in a client's first SETTINGS, it asks a node to serve the connection's
   * unary calls on this framing (transports/grpc/lean-connections.ts).
   */
  LEAN_CONNECTION: 0xf5c1,
} as const;

export const ErrorCode = {
  NO_ERROR: 0x0,
  PROTOCOL_ERROR: 0x1,
  INTERNAL_ERROR: 0x2,
  FLOW_CONTROL_ERROR: 0x3,
  SETTINGS_TIMEOUT: 0x4,
  STREAM_CLOSED: 0x5,
  FRAME_SIZE_ERROR: 0x6,
  REFUSED_STREAM: 0x7,
  CANCEL: 0x8,
  COMPRESSION_ERROR: 0x9,
  ENHANCE_YOUR_CALM: 0xb,
} as const;

/** frame is one whole frame: its 9-byte header and `payload`. */
export function frame(type: number, flags: number, streamId: number, payload: Buffer = EMPTY): Buffer {
  const out = Buffer.allocUnsafe(FRAME_HEADER_BYTES + payload.length);
  writeFrameHeader(out, 0, payload.length, type, flags, streamId);
  payload.copy(out, FRAME_HEADER_BYTES);
  return out;
}

/** writeFrameHeader writes a frame header at `at` of `out`. */
export function writeFrameHeader(
  out: Buffer,
  at: number,
  length: number,
  type: number,
  flags: number,
  streamId: number,
): void {
  out.writeUIntBE(length, at, 3);
  out[at + 3] = type;
  out[at + 4] = flags;
  out.writeUInt32BE(streamId, at + 5);
}

export const EMPTY = Buffer.alloc(0);

export function u32(value: number): Buffer {
  const out = Buffer.allocUnsafe(4);
  out.writeUInt32BE(value);
  return out;
}

export function settingsPayload(settings: ReadonlyArray<readonly [id: number, value: number]>): Buffer {
  const out = Buffer.allocUnsafe(6 * settings.length);
  settings.forEach(([id, value], i) => {
    out.writeUInt16BE(id, 6 * i);
    out.writeUInt32BE(value, 6 * i + 2);
  });
  return out;
}

export function goAwayPayload(lastStreamId: number, code: number, debug: string): Buffer {
  const text = Buffer.from(debug, 'utf8');
  const out = Buffer.allocUnsafe(8 + text.length);
  out.writeUInt32BE(lastStreamId, 0);
  out.writeUInt32BE(code, 4);
  text.copy(out, 8);
  return out;
}
