// A unary gRPC call's answer as a client reads it, shared by the lean clients (lean-unary.ts over node:http2,
// transports/h2/unary-client.ts over our own framing): the outcome type, the request's length prefix, and the
// reading of headers, message bytes and trailers into an outcome (status, percent-decoded details, x-svc-*
// trailers), so both clients give the same outcome for the same answer.
import type * as http2 from 'node:http2';
import { StatusCode, type RpcStatus } from '../../engine/rpc.js';
import { PROTOCOL_TRAILER_PREFIX, rpcStatus, statusFromCode } from './status.js';

export const GRPC_FRAME_HEADER_BYTES = 5;

/**
 * LeanOutcome is a call's end: the answer's message bytes, or why there is none. status is the engine's view
 * (a code the engine does not name becomes UNAVAILABLE: status.ts statusFromCode); wire is the status as the
 * server sent it, or as this client decided it (a client that maps codes its own way, as the Store client
 * pool does, reads wire).
 */
export type LeanOutcome =
  { ok: true; message: Buffer } | { ok: false; status: RpcStatus; wire: { code: number; details: string } };

const noCancel = (): void => {};

/** failLater reports a failure decided before the call left, on a later turn (never inside call()). */
export function failLater(done: (outcome: LeanOutcome) => void, status: RpcStatus): () => void {
  setImmediate(done, failed(status));
  return noCancel;
}

/** failed is a failure whose wire status is the engine status itself (one this client decided). */
export function failed(status: RpcStatus): LeanOutcome {
  return { ok: false, status, wire: { code: status.code, details: status.details } };
}

/** frame is one gRPC message: flag 0 (not compressed), its length, the bytes. */
export function frame(message: Buffer): Buffer {
  const out = Buffer.allocUnsafe(GRPC_FRAME_HEADER_BYTES + message.length);
  out[0] = 0;
  out.writeUInt32BE(message.length, 1);
  message.copy(out, GRPC_FRAME_HEADER_BYTES);
  return out;
}

/** UnaryAnswer gathers what the server sent: headers, the message's bytes (bounded), trailers. */
export class UnaryAnswer {
  private headers: http2.IncomingHttpHeaders | null = null;
  private trailers: http2.IncomingHttpHeaders | null = null;
  private readonly chunks: Buffer[] = [];
  private bytes = 0;
  private error: Error | null = null;

  constructor(private readonly messageBytesMax: number) {}

  onHeaders(headers: http2.IncomingHttpHeaders): void {
    this.headers = headers;
  }

  /** onData keeps a chunk; false when the answer passed its bound. */
  onData(chunk: Buffer): boolean {
    this.bytes += chunk.length;
    if (this.bytes > this.messageBytesMax + GRPC_FRAME_HEADER_BYTES) return false;
    this.chunks.push(chunk);
    return true;
  }

  onTrailers(trailers: http2.IncomingHttpHeaders): void {
    this.trailers = trailers;
  }

  onError(err: Error): void {
    this.error ??= err;
  }

  outcome(to: string, rstCode: number | undefined): LeanOutcome {
    const headers = this.headers;
    // A trailers-only answer carries its status in the headers.
    const ending = this.trailers ?? (headers && headers['grpc-status'] !== undefined ? headers : null);
    if (headers === null || ending === null) {
      const why = this.error?.message ?? `stream reset (code ${rstCode ?? 'none'})`;
      return failed(rpcStatus(StatusCode.UNAVAILABLE, `${to} gave no answer: ${why}`));
    }
    const httpStatus = Number(headers[':status']);
    if (httpStatus !== 200)
      return failed(rpcStatus(StatusCode.UNAVAILABLE, `${to} answered HTTP status ${httpStatus}`));
    const code = Number(ending['grpc-status']);
    if (!Number.isInteger(code) || code < 0)
      return failed(rpcStatus(StatusCode.INTERNAL, `${to} sent no valid grpc-status`));
    if (code !== StatusCode.OK) {
      const details = grpcMessage(ending['grpc-message']);
      return { ok: false, status: statusFromCode(code, details, protocolTrailers(ending)), wire: { code, details } };
    }
    return this.message(to);
  }

  /** message is the one length-prefixed, uncompressed message an OK answer must hold. */
  private message(to: string): LeanOutcome {
    const body = this.chunks.length === 1 ? this.chunks[0]! : Buffer.concat(this.chunks, this.bytes);
    if (
      body.length < GRPC_FRAME_HEADER_BYTES ||
      body[0] !== 0 ||
      body.readUInt32BE(1) !== body.length - GRPC_FRAME_HEADER_BYTES
    )
      return failed(rpcStatus(StatusCode.INTERNAL, `${to} answered OK without exactly one uncompressed message`));
    return { ok: true, message: body.subarray(GRPC_FRAME_HEADER_BYTES) };
  }
}

/** grpcMessage decodes grpc-message (percent-encoded); text that does not decode is kept as sent. */
function grpcMessage(value: string | string[] | undefined): string {
  const text = Array.isArray(value) ? value.join(',') : (value ?? '');
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

/** protocolTrailers keeps the protocol's x-svc-* trailers (as the grpc-js path's metadataTrailers does). */
function protocolTrailers(headers: http2.IncomingHttpHeaders): Record<string, string> {
  const trailers: Record<string, string> = {};
  for (const [key, value] of Object.entries(headers)) {
    if (typeof value === 'string' && key.startsWith(PROTOCOL_TRAILER_PREFIX)) trailers[key] = value;
  }
  return trailers;
}
