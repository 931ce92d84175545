// Wire: messages between simulated nodes go through their protobuf codec, as
// they would over gRPC, so a field the proto cannot carry (a number past 2^53, a
// missing message) shows up in simulation rather than first in production. The
// codec is slow next to the engine, so a deterministic sample of messages takes
// the round trip and the rest are shallow-copied (the receiver never holds the
// sender's body object).
import * as pb from '../proto/gen/svc/replication/v1/replication.js';
import type { RpcRequest, RpcResponse, ShipSegmentRequest, SnapshotHeader } from '../engine/rpc.js';

interface Codec<T> {
  encode(message: T): { finish(): Uint8Array };
  decode(bytes: Uint8Array): T;
}

function roundTrip<T>(codec: Codec<T>, message: T): T {
  return codec.decode(codec.encode(message).finish());
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
