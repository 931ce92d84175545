// Every limit of the HTTP/2 server connection (connection.ts) and its gRPC unary layer (grpc-unary.ts), each
// with its default. A peer that passes one is refused with a named code: a GOAWAY for the connection's, a
// RST_STREAM or a gRPC status for a call's.

export interface H2Limits {
  /** SETTINGS_MAX_CONCURRENT_STREAMS we advertise; a stream beyond it is refused (RST_STREAM REFUSED_STREAM). */
  concurrentStreamCountMax: number;
  /**
   * SETTINGS_MAX_HEADER_LIST_SIZE we advertise (RFC 9113's measure: name + value + 32 per field). A decoded
   * list above it is answered RESOURCE_EXHAUSTED; a header block (HEADERS + CONTINUATION, still compressed)
   * above twice it ends the connection (ENHANCE_YOUR_CALM): we will not buffer it to keep HPACK in step.
   */
  headerListBytesMax: number;
  /** SETTINGS_MAX_FRAME_SIZE we advertise (RFC range 16,384 to 2^24-1); a larger frame is a FRAME_SIZE_ERROR. */
  frameBytesMax: number;
  /** SETTINGS_HEADER_TABLE_SIZE we advertise: the HPACK dynamic table the peer may fill in our decoder. */
  headerTableBytesMax: number;
  /** SETTINGS_INITIAL_WINDOW_SIZE we advertise: what a peer may send on one stream before we replenish. */
  streamWindowBytes: number;
  /** The connection's receive window (raised from 65,535 by a WINDOW_UPDATE at the start). */
  connectionWindowBytes: number;
  /** A gRPC message (its 5-byte prefix's length) above this is refused RESOURCE_EXHAUSTED at the prefix. */
  messageBytesMax: number;
  /** The client's preface and first SETTINGS must arrive within this, or the connection closes. */
  prefaceTimeoutMs: number;
  /**
   * A PING or SETTINGS needs an answer while this many bytes we wrote are still unsent (the peer is not reading):
   * the connection ends with ENHANCE_YOUR_CALM instead of queueing answers without bound (a ping flood).
   */
  unsentBytesMax: number;
  /**
   * Once the client's preface is in, a PING every keepaliveTimeMs; unanswered for keepaliveTimeoutMs, the
   * connection is dropped and its streams aborted (grpc-js's server keepalive; a node passes its GrpcLimits').
   * The defaults are gRPC's server defaults: two hours and 20 s.
   */
  keepaliveTimeMs: number;
  keepaliveTimeoutMs: number;
}

export const DEFAULT_H2_LIMITS: Readonly<H2Limits> = Object.freeze({
  concurrentStreamCountMax: 256,
  headerListBytesMax: 16 * 1024,
  frameBytesMax: 16 * 1024,
  headerTableBytesMax: 4096,
  streamWindowBytes: 1024 * 1024,
  connectionWindowBytes: 16 * 1024 * 1024,
  messageBytesMax: 4 * 1024 * 1024,
  prefaceTimeoutMs: 10_000,
  unsentBytesMax: 4 * 1024 * 1024,
  keepaliveTimeMs: 2 * 60 * 60 * 1000,
  keepaliveTimeoutMs: 20_000,
});

const WINDOW_MAX = 2 ** 31 - 1;

/** resolveH2Limits fills the defaults and refuses values HTTP/2 cannot carry. */
export function resolveH2Limits(given: Partial<H2Limits> = {}): H2Limits {
  const limits = { ...DEFAULT_H2_LIMITS, ...given };
  checkConnectionLimits(limits);
  return limits;
}

/**
 * checkConnectionLimits refuses what either end's limits (these, client-limits.ts's) cannot carry: a value not a
 * positive integer, a frame size outside 16,384..2^24-1, a window above 2^31-1 or a connection window below
 * the 65,535 it starts at.
 */
export function checkConnectionLimits(
  limits: Readonly<Record<string, number>> & {
    frameBytesMax: number;
    streamWindowBytes: number;
    connectionWindowBytes: number;
  },
): void {
  for (const [name, value] of Object.entries(limits))
    if (!Number.isSafeInteger(value) || value <= 0) throw new RangeError(`${name} must be a positive integer`);
  if (limits.frameBytesMax < 16_384 || limits.frameBytesMax > 2 ** 24 - 1)
    throw new RangeError('frameBytesMax must be within 16,384 .. 2^24-1 (RFC 9113 6.5.2)');
  if (limits.streamWindowBytes > WINDOW_MAX || limits.connectionWindowBytes > WINDOW_MAX)
    throw new RangeError('a window must be at most 2^31-1 bytes');
  if (limits.connectionWindowBytes < 65_535) throw new RangeError('connectionWindowBytes must be at least 65,535');
}
