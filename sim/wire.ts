// Wire: messages between simulated nodes go through their protobuf codec, as
// they would over gRPC, so a field the proto cannot carry (a number past 2^53, a
// missing message) shows up in simulation rather than first in production. The
// codec is slow next to the engine, so a deterministic sample of messages takes
// the round trip and the rest are shallow-copied (the receiver never holds the
// sender's body object).
import { BinaryWriter } from '@bufbuild/protobuf/wire';
import * as pb from '../proto/gen/svc/replication/v1/replication.js';
import type { RpcRequest, RpcResponse, ShipSegmentRequest, SnapshotHeader } from '../engine/rpc.js';

interface Codec<T> {
  encode(message: T, writer?: BinaryWriter): BinaryWriter;
  decode(bytes: Uint8Array): T;
}

/**
 * SimWriter writes what BinaryWriter writes, with a map's uint32 key turned into a number before BinaryWriter
 * sees it. The generated encoder of a map<uint32, _> field (a heartbeat's replication_lag) passes each key as
 * the string Object.entries gives; BinaryWriter.uint32 accepts it (it checks Number(key)) and stores it into its
 * byte array as is, which V8's optimised uint32 cannot take: it deoptimised on every heartbeat with a gauge and
 * was compiled again, 31 times in seeds 1..10 (a cold run of them took 8-12% more CPU). The bytes are the same.
 */
class SimWriter extends BinaryWriter {
  override uint32(value: number): this {
    return super.uint32(typeof value === 'string' ? Number(value) : value);
  }
}

/**
 * writer: one per thread, reused (finish() copies the bytes out and resets it), so an encode does not grow a
 * fresh buffer from empty. Replaced when an encode throws part way (its position would be left mid-message).
 */
let writer = new SimWriter();

function roundTrip<T>(codec: Codec<T>, message: T): T {
  let bytes: Uint8Array;
  try {
    bytes = codec.encode(message, writer).finish();
  } catch (error) {
    writer = new SimWriter();
    throw error;
  }
  // Handed on as a spread copy, as the messages that skip the round trip are (shallowRequest, ...): a spread copy
  // of an object literal has a hidden class of its own, the same for every copy of that literal's shape, and the
  // decoder's message has the engine literal's. Passed on as decoded, one message in eight reached the receiving
  // engine in a second shape, and each handler optimised on the first was thrown away and compiled again.
  return { ...codec.decode(bytes) };
}

export function carryRequest(request: RpcRequest): RpcRequest {
  switch (request.method) {
    case 'ShipSegment':
      return { method: request.method, body: roundTrip(pb.ShipSegmentRequest, request.body) };
    case 'StreamSegments':
      return { method: request.method, body: roundTrip(pb.StreamRequest, request.body) };
    case 'FetchSnapshot':
      return { method: request.method, body: roundTrip(pb.SnapshotRequest, request.body) };
    case 'Heartbeat':
      return { method: request.method, body: roundTrip(pb.HeartbeatRequest, request.body) };
    case 'ReportApplied':
      return { method: request.method, body: roundTrip(pb.AppliedReport, request.body) };
    case 'RequestVote':
      return { method: request.method, body: roundTrip(pb.VoteRequest, request.body) };
    case 'TimeoutNow':
      return { method: request.method, body: roundTrip(pb.TimeoutNowRequest, request.body) };
    case 'JoinCluster':
      return { method: request.method, body: roundTrip(pb.JoinRequest, request.body) };
    default:
      return unreachable(request);
  }
}

export function carryResponse(response: RpcResponse): RpcResponse {
  switch (response.method) {
    case 'ShipSegment':
      return { method: response.method, body: roundTrip(pb.ShipSegmentResponse, response.body) };
    case 'Heartbeat':
      return { method: response.method, body: roundTrip(pb.HeartbeatResponse, response.body) };
    case 'ReportApplied':
      return { method: response.method, body: roundTrip(pb.AppliedReportAck, response.body) };
    case 'RequestVote':
      return { method: response.method, body: roundTrip(pb.VoteResponse, response.body) };
    case 'TimeoutNow':
      return { method: response.method, body: roundTrip(pb.TimeoutNowResponse, response.body) };
    case 'JoinCluster':
      return { method: response.method, body: roundTrip(pb.JoinResponse, response.body) };
    default:
      return unreachable(response);
  }
}

export function carryChunk(chunk: ShipSegmentRequest): ShipSegmentRequest {
  return roundTrip(pb.ShipSegmentRequest, chunk);
}

export function carryHeader(header: SnapshotHeader): SnapshotHeader {
  return roundTrip(pb.SnapshotHeader, header);
}

export function shallowRequest(request: RpcRequest): RpcRequest {
  return { method: request.method, body: { ...request.body } } as RpcRequest;
}

export function shallowResponse(response: RpcResponse): RpcResponse {
  return { method: response.method, body: { ...response.body } } as RpcResponse;
}

export function unreachable(value: never): never {
  throw new Error(`unreachable: ${JSON.stringify(value)}`);
}
