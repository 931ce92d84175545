// The unary Propose call's two messages read and written by hand, byte for byte as the generated code
// (proto/gen/svc/store/v1/store.ts) reads and writes them: a leader serves one Propose per write from a client
// that sends one write per call, and the generated reader and writer (a BinaryReader, a default Uint8Array, a
// TextDecoder string; a BinaryWriter's arrays, fork and join, a copy and a view of it) were ~1.4 KB of garbage
// per write there (bench/write-alloc.ts). Anything off the usual shape goes to the generated decoder.
import * as pb from '../../proto/gen/svc/store/v1/store.js';
import { varintBytes, writeVarint } from '../grpc/varint.js';

/** ProposeRequest's fields' tags (field number << 3 | wire type 2, length-delimited). */
const COMMAND_TAG = 10;
const REQUEST_ID_TAG = 18;
/** CommandResult's fields' tags (wire type 0, varint; reason length-delimited) and ProposeResponse's. */
const OUTCOME_TAG = 8;
const VERSION_TAG = 16;
const EXISTED_TAG = 24;
const ACTUAL_VERSION_TAG = 32;
const REASON_TAG = 42;
const SEQ_TAG = 8;
const RESULT_TAG = 18;
/** A varint up to 2^35 takes at most 5 bytes; lengths and tags here are far below. */
const LENGTH_VARINT_BYTES_MAX = 5;

/**
 * decodeProposeRequest reads a ProposeRequest as pb.ProposeRequest.decode does (command a view of `bytes`).
 * Read here: the command then a request id of ASCII bytes, each at most once and in that order (what every
 * encoder of ours sends); anything else is left to the generated decoder, which also throws on malformed input.
 */
export function decodeProposeRequest(bytes: Buffer): pb.ProposeRequest {
  let at = 0;
  let command: Buffer | null = null;
  let requestId = '';
  if (at < bytes.length && bytes[at] === COMMAND_TAG) {
    const end = lengthDelimitedEnd(bytes, at + 1);
    if (end < 0) return pb.ProposeRequest.decode(bytes);
    command = bytes.subarray(end - lengthAt, end);
    at = end;
  }
  if (at < bytes.length && bytes[at] === REQUEST_ID_TAG) {
    const end = lengthDelimitedEnd(bytes, at + 1);
    if (end < 0) return pb.ProposeRequest.decode(bytes);
    const start = end - lengthAt;
    for (let i = start; i < end; i++) if (bytes[i]! >= 0x80) return pb.ProposeRequest.decode(bytes);
    requestId = bytes.toString('latin1', start, end);
    at = end;
  }
  if (at !== bytes.length || command === null) return pb.ProposeRequest.decode(bytes);
  return { command, requestId };
}

/** lengthAt: the length lengthDelimitedEnd read last (a module variable, so reading one allocates nothing). */
let lengthAt = 0;

/** lengthDelimitedEnd reads a length varint at `at`: the end of the bytes it counts, or -1 past the input. */
function lengthDelimitedEnd(bytes: Buffer, at: number): number {
  let length = 0;
  for (let i = 0; i < LENGTH_VARINT_BYTES_MAX; i++) {
    if (at >= bytes.length) return -1;
    const byte = bytes[at++]!;
    length += (byte & 0x7f) * 2 ** (7 * i);
    if ((byte & 0x80) === 0) {
      lengthAt = length;
      return at + length > bytes.length ? -1 : at + length;
    }
  }
  return -1;
}

/** encodeProposeResponse writes ProposeResponse {seq, result} as pb.ProposeResponse.encode(...).finish() does. */
export function encodeProposeResponse(seq: number, result: pb.CommandResult): Buffer {
  if (!isVarint(seq) || !isVarint(result.outcome) || !isVarint(result.version) || !isVarint(result.actualVersion)) {
    const bytes = pb.ProposeResponse.encode({ seq, result }).finish();
    return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }
  const reasonBytes = result.reason === '' ? 0 : Buffer.byteLength(result.reason);
  const resultBytes =
    (result.outcome !== 0 ? 1 + varintBytes(result.outcome) : 0) +
    (result.version !== 0 ? 1 + varintBytes(result.version) : 0) +
    (result.existed ? 2 : 0) +
    (result.actualVersion !== 0 ? 1 + varintBytes(result.actualVersion) : 0) +
    (reasonBytes !== 0 ? 1 + varintBytes(reasonBytes) + reasonBytes : 0);
  const out = Buffer.allocUnsafe((seq !== 0 ? 1 + varintBytes(seq) : 0) + 1 + varintBytes(resultBytes) + resultBytes);
  let at = 0;
  if (seq !== 0) {
    out[at++] = SEQ_TAG;
    at = writeVarint(out, at, seq);
  }
  out[at++] = RESULT_TAG;
  at = writeVarint(out, at, resultBytes);
  if (result.outcome !== 0) {
    out[at++] = OUTCOME_TAG;
    at = writeVarint(out, at, result.outcome);
  }
  if (result.version !== 0) {
    out[at++] = VERSION_TAG;
    at = writeVarint(out, at, result.version);
  }
  if (result.existed) {
    out[at++] = EXISTED_TAG;
    out[at++] = 1;
  }
  if (result.actualVersion !== 0) {
    out[at++] = ACTUAL_VERSION_TAG;
    at = writeVarint(out, at, result.actualVersion);
  }
  if (reasonBytes !== 0) {
    out[at++] = REASON_TAG;
    at = writeVarint(out, at, reasonBytes);
    at += out.write(result.reason, at, 'utf8');
  }
  if (at !== out.length) throw new Error(`encodeProposeResponse wrote ${at} of ${out.length} bytes`);
  return out;
}

/** isVarint: a non-negative safe integer, what this file writes as a plain varint (anything else: the generated writer). */
function isVarint(value: number): boolean {
  return Number.isSafeInteger(value) && value >= 0;
}
