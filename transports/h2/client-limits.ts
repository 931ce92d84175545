// Every limit of the HTTP/2 client connection (client-connection.ts) and its unary gRPC client (unary-client.ts)
// that transports/grpc's GrpcLimits does not already name, each with its default. (The message bound, keepalive,
// connect timeout and reconnect back-off are GrpcLimits', shared with lean-unary.ts.)
import { checkConnectionLimits } from './limits.js';

export interface H2ClientLimits {
  /** SETTINGS_INITIAL_WINDOW_SIZE we advertise: what a server may send on one stream before we replenish. */
  streamWindowBytes: number;
  /** Our connection receive window (raised from 65,535 by a WINDOW_UPDATE at the start). */
  connectionWindowBytes: number;
  /** SETTINGS_MAX_FRAME_SIZE we advertise (RFC range 16,384 to 2^24-1); a larger frame is a FRAME_SIZE_ERROR. */
  frameBytesMax: number;
  /**
   * SETTINGS_MAX_HEADER_LIST_SIZE we advertise (name + value + 32 per field). An answer's decoded header list
   * above it fails its call (RESOURCE_EXHAUSTED); a compressed block above twice it ends the connection
   * (ENHANCE_YOUR_CALM: we will not buffer it, and cannot skip it and keep HPACK in step).
   */
  headerListBytesMax: number;
  /** SETTINGS_HEADER_TABLE_SIZE we advertise: the HPACK dynamic table the server may fill in our decoder. */
  headerTableBytesMax: number;
  /**
   * Calls waiting for a stream on one connection (the server's SETTINGS not yet in, or its
   * MAX_CONCURRENT_STREAMS reached): one more fails at once with RESOURCE_EXHAUSTED rather than queue without bound.
   */
  queuedCallCountMax: number;
  /**
   * A PING or SETTINGS needs an answer while this many bytes we wrote are still unsent (the server does not
   * read): the connection ends (ENHANCE_YOUR_CALM) instead of queueing answers without bound.
   */
  unsentBytesMax: number;
  /** After our GOAWAY for a protocol error, the socket is destroyed this long later if the server keeps it open. */
  closeGraceMs: number;
}

export const DEFAULT_H2_CLIENT_LIMITS: Readonly<H2ClientLimits> = Object.freeze({
  streamWindowBytes: 1024 * 1024,
  connectionWindowBytes: 16 * 1024 * 1024,
  frameBytesMax: 16 * 1024,
  headerListBytesMax: 16 * 1024,
  headerTableBytesMax: 4096,
  queuedCallCountMax: 10_000,
  unsentBytesMax: 4 * 1024 * 1024,
  closeGraceMs: 1_000,
});

/** resolveH2ClientLimits fills the defaults and refuses values HTTP/2 cannot carry (limits.ts checkConnectionLimits). */
export function resolveH2ClientLimits(given: Partial<H2ClientLimits> = {}): H2ClientLimits {
  const limits = { ...DEFAULT_H2_CLIENT_LIMITS, ...given };
  checkConnectionLimits(limits);
  return limits;
}
