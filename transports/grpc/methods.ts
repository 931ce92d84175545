// The eight WalShipping methods: their gRPC paths and the ts-proto codecs for
// their messages. grpc-js itself moves raw bytes (identity serializers), so
// decoding happens here, where a malformed message becomes a clear
// INVALID_ARGUMENT instead of grpc-js's generic INTERNAL.
import * as pb from '../../proto/gen/svc/replication/v1/replication.js';
import type { RpcMethod, RpcRequest, RpcResponse, UnaryMethod } from '../../engine/rpc.js';
import { varintBytes, writeVarint } from './varint.js';

export const RPC_METHODS: readonly RpcMethod[] = [
  'ShipSegment',
  'StreamSegments',
  'FetchSnapshot',
  'Heartbeat',
  'ReportApplied',
  'RequestVote',
  'TimeoutNow',
  'JoinCluster',
];

export type StreamMethod = Exclude<RpcMethod, UnaryMethod>;

export function isUnaryMethod(method: RpcMethod): method is UnaryMethod {
  return method !== 'StreamSegments' && method !== 'FetchSnapshot';
}

const SERVICE_KEY: Record<RpcMethod, keyof typeof pb.WalShippingService> = {
  ShipSegment: 'shipSegment',
  StreamSegments: 'streamSegments',
  FetchSnapshot: 'fetchSnapshot',
  Heartbeat: 'heartbeat',
  ReportApplied: 'reportApplied',
  RequestVote: 'requestVote',
  TimeoutNow: 'timeoutNow',
  JoinCluster: 'joinCluster',
};

/** methodPath is the HTTP/2 path of a method, taken from the generated service so the two cannot drift. */
export function methodPath(method: RpcMethod): string {
  return pb.WalShippingService[SERVICE_KEY[method]].path;
}

function bytesOf(writer: { finish(): Uint8Array }): Buffer {
  const bytes = writer.finish();
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

export function encodeRequest(request: RpcRequest): Buffer {
  switch (request.method) {
    case 'ShipSegment':
      return bytesOf(pb.ShipSegmentRequest.encode(request.body));
    case 'StreamSegments':
      return bytesOf(pb.StreamRequest.encode(request.body));
    case 'FetchSnapshot':
      return bytesOf(pb.SnapshotRequest.encode(request.body));
    case 'Heartbeat':
      return bytesOf(pb.HeartbeatRequest.encode(request.body));
    case 'ReportApplied':
      return bytesOf(pb.AppliedReport.encode(request.body));
    case 'RequestVote':
      return bytesOf(pb.VoteRequest.encode(request.body));
    case 'TimeoutNow':
      return bytesOf(pb.TimeoutNowRequest.encode(request.body));
    case 'JoinCluster':
      return bytesOf(pb.JoinRequest.encode(request.body));
    default:
      return unreachable(request);
  }
}

/** decodeRequest throws on bytes that are not a valid encoding of the method's request message. */
export function decodeRequest(method: RpcMethod, bytes: Uint8Array): RpcRequest {
  switch (method) {
    case 'ShipSegment':
      return { method, body: pb.ShipSegmentRequest.decode(bytes) };
    case 'StreamSegments':
      return { method, body: pb.StreamRequest.decode(bytes) };
    case 'FetchSnapshot':
      return { method, body: pb.SnapshotRequest.decode(bytes) };
    case 'Heartbeat':
      return { method, body: pb.HeartbeatRequest.decode(bytes) };
    case 'ReportApplied':
      return { method, body: pb.AppliedReport.decode(bytes) };
    case 'RequestVote':
      return { method, body: pb.VoteRequest.decode(bytes) };
    case 'TimeoutNow':
      return { method, body: pb.TimeoutNowRequest.decode(bytes) };
    case 'JoinCluster':
      return { method, body: pb.JoinRequest.decode(bytes) };
    default:
      return unreachable(method);
  }
}

export function encodeResponse(response: RpcResponse): Buffer {
  switch (response.method) {
    case 'ShipSegment':
      return bytesOf(pb.ShipSegmentResponse.encode(response.body));
    case 'Heartbeat':
      return bytesOf(pb.HeartbeatResponse.encode(response.body));
    case 'ReportApplied':
      return bytesOf(pb.AppliedReportAck.encode(response.body));
    case 'RequestVote':
      return bytesOf(pb.VoteResponse.encode(response.body));
    case 'TimeoutNow':
      return bytesOf(pb.TimeoutNowResponse.encode(response.body));
    case 'JoinCluster':
      return bytesOf(pb.JoinResponse.encode(response.body));
    default:
      return unreachable(response);
  }
}

export function decodeResponse(method: UnaryMethod, bytes: Uint8Array): RpcResponse {
  switch (method) {
    case 'ShipSegment':
      return { method, body: pb.ShipSegmentResponse.decode(bytes) };
    case 'Heartbeat':
      return { method, body: pb.HeartbeatResponse.decode(bytes) };
    case 'ReportApplied':
      return { method, body: pb.AppliedReportAck.decode(bytes) };
    case 'RequestVote':
      return { method, body: pb.VoteResponse.decode(bytes) };
    case 'TimeoutNow':
      return { method, body: pb.TimeoutNowResponse.decode(bytes) };
    case 'JoinCluster':
      return { method, body: pb.JoinResponse.decode(bytes) };
    default:
      return unreachable(method);
  }
}

export function encodeSegmentChunk(chunk: pb.ShipSegmentRequest): Buffer {
  return bytesOf(pb.ShipSegmentRequest.encode(chunk));
}

export function decodeSegmentChunk(bytes: Uint8Array): pb.ShipSegmentRequest {
  return pb.ShipSegmentRequest.decode(bytes);
}

export function encodeSnapshotChunk(chunk: pb.SnapshotChunk): Buffer {
  if (chunk.chunk?.$case === 'file') return encodeSnapshotFileChunk(chunk.chunk.value);
  return bytesOf(pb.SnapshotChunk.encode(chunk));
}

// SnapshotChunk field 2 (file), SnapshotFileChunk fields 1 path, 2 offset, 3 data, 4 last: wire tags.
const TAG_CHUNK_FILE = 18;
const TAG_FILE_PATH = 10;
const TAG_FILE_OFFSET = 16;
const TAG_FILE_DATA = 26;
const TAG_FILE_LAST = 32;

/**
 * encodeSnapshotFileChunk writes SnapshotChunk{file} byte for byte as ts-proto would (same field
 * order, same omitted defaults), but into one exact-size buffer with a single copy of the data:
 * ts-proto's writer grows, copies and joins each 1 MiB chunk several times, which measured twice
 * the serving CPU of a raw stream.
 */
export function encodeSnapshotFileChunk(file: pb.SnapshotFileChunk): Buffer {
  const pathBytes = Buffer.byteLength(file.path, 'utf8');
  if (!Number.isSafeInteger(file.offset) || file.offset < 0)
    throw new RangeError(`snapshot chunk offset ${file.offset} is not a non-negative safe integer`);
  const bodyBytes =
    (pathBytes > 0 ? 1 + varintBytes(pathBytes) + pathBytes : 0) +
    (file.offset !== 0 ? 1 + varintBytes(file.offset) : 0) +
    (file.data.length > 0 ? 1 + varintBytes(file.data.length) + file.data.length : 0) +
    (file.last ? 2 : 0);
  const out = Buffer.allocUnsafe(1 + varintBytes(bodyBytes) + bodyBytes);
  let at = 0;
  out[at++] = TAG_CHUNK_FILE;
  at = writeVarint(out, at, bodyBytes);
  if (pathBytes > 0) {
    out[at++] = TAG_FILE_PATH;
    at = writeVarint(out, at, pathBytes);
    at += out.write(file.path, at, 'utf8');
  }
  if (file.offset !== 0) {
    out[at++] = TAG_FILE_OFFSET;
    at = writeVarint(out, at, file.offset);
  }
  if (file.data.length > 0) {
    out[at++] = TAG_FILE_DATA;
    at = writeVarint(out, at, file.data.length);
    out.set(file.data, at);
    at += file.data.length;
  }
  if (file.last) {
    out[at] = TAG_FILE_LAST;
    out[at + 1] = 1;
  }
  return out;
}

export function decodeSnapshotChunk(bytes: Uint8Array): pb.SnapshotChunk {
  return pb.SnapshotChunk.decode(bytes);
}

/** identity passes grpc-js's bytes through untouched; the codecs above do the protobuf work. */
export function identity(bytes: Buffer): Buffer {
  return bytes;
}

function unreachable(value: never): never {
  throw new Error(`unknown method ${JSON.stringify(value)}`);
}
