// The engine speaks the proto's own message types. An RPC is one tagged union
// for requests and one for responses, so every switch can close with `never`.
import type {
  AppliedReport,
  AppliedReportAck,
  HeartbeatRequest,
  HeartbeatResponse,
  JoinRequest,
  JoinResponse,
  ShipSegmentRequest,
  ShipSegmentResponse,
  SnapshotRequest,
  StreamRequest,
  TimeoutNowRequest,
  TimeoutNowResponse,
  VoteRequest,
  VoteResponse,
  SnapshotHeader,
} from '../proto/gen/svc/replication/v1/replication.js';

export type {
  AppliedReport,
  AppliedReportAck,
  HeartbeatRequest,
  HeartbeatResponse,
  JoinRequest,
  JoinResponse,
  ShipSegmentRequest,
  ShipSegmentResponse,
  SnapshotRequest,
  StreamRequest,
  TimeoutNowRequest,
  TimeoutNowResponse,
  VoteRequest,
  VoteResponse,
  SnapshotHeader,
};
export type { MemberInfo, SnapshotFileEntry, WalSegmentId } from '../proto/gen/svc/replication/v1/replication.js';

/** RpcRequest is what one node asks another; `method` is the gRPC method name. */
export type RpcRequest =
  | { method: 'ShipSegment'; body: ShipSegmentRequest }
  | { method: 'StreamSegments'; body: StreamRequest }
  | { method: 'FetchSnapshot'; body: SnapshotRequest }
  | { method: 'Heartbeat'; body: HeartbeatRequest }
  | { method: 'ReportApplied'; body: AppliedReport }
  | { method: 'RequestVote'; body: VoteRequest }
  | { method: 'TimeoutNow'; body: TimeoutNowRequest }
  | { method: 'JoinCluster'; body: JoinRequest };

/** RpcResponse answers a unary RpcRequest of the same method. */
export type RpcResponse =
  | { method: 'ShipSegment'; body: ShipSegmentResponse }
  | { method: 'Heartbeat'; body: HeartbeatResponse }
  | { method: 'ReportApplied'; body: AppliedReportAck }
  | { method: 'RequestVote'; body: VoteResponse }
  | { method: 'TimeoutNow'; body: TimeoutNowResponse }
  | { method: 'JoinCluster'; body: JoinResponse };

export type RpcMethod = RpcRequest['method'];
export type UnaryMethod = RpcResponse['method'];

/** StatusCode mirrors the gRPC status codes the protocol uses (same numbers as grpc-js `status`). */
export const StatusCode = {
  OK: 0,
  CANCELLED: 1,
  INVALID_ARGUMENT: 3,
  DEADLINE_EXCEEDED: 4,
  FAILED_PRECONDITION: 9,
  RESOURCE_EXHAUSTED: 8,
  ABORTED: 10,
  UNIMPLEMENTED: 12,
  INTERNAL: 13,
  UNAVAILABLE: 14,
} as const;
export type StatusCode = (typeof StatusCode)[keyof typeof StatusCode];

/**
 * RpcStatus is a non-OK gRPC outcome. `trailers` carry protocol metadata:
 * `x-svc-catchup` (JSON, see docs/protocol.md) and `x-svc-term` (the
 * responder's term, so a FAILED_PRECONDITION still delivers the step-down signal).
 */
export interface RpcStatus {
  code: StatusCode;
  details: string;
  trailers: Record<string, string>;
}

/**
 * CLOSED_HERE_DETAILS_PREFIX starts the details of a call this node ended itself (an open call to a member that
 * stopped leading or left: OpenCalls.retain). No answer was lost to the network, so a recording's reader
 * (sim/replay/to-scenario.ts) does not take the failure as a sign of a partition.
 */
export const CLOSED_HERE_DETAILS_PREFIX = 'closed here: ';

export const TRAILER_CATCHUP = 'x-svc-catchup';
export const TRAILER_TERM = 'x-svc-term';
/**
 * TRAILER_REFUSAL names, machine-readably, why a peer call was refused before the protocol's
 * rules looked at it (docs/protocol.md, "Identity and trust"): one of REFUSAL_CODES.
 */
export const TRAILER_REFUSAL = 'x-svc-refusal';

/**
 * RefusalCode: not-a-member (no roster of ours lists the sender), removed-member (our committed roster
 * lists it Removed), not-admitted (we are a joiner whose join has not been answered: we know no roster).
 */
export const REFUSAL_CODES = {
  notAMember: 'not-a-member',
  removedMember: 'removed-member',
  notAdmitted: 'not-admitted',
} as const;
export type RefusalCode = (typeof REFUSAL_CODES)[keyof typeof REFUSAL_CODES];

/** CatchupTrailer is the JSON body of the `x-svc-catchup` trailer. */
export interface CatchupTrailer {
  /** First seqno the source's WAL can still serve. */
  firstAvailableSeq: number;
  /** Seqno of the newest staged snapshot artifact (0 = none staged yet). */
  snapshotSeq: number;
  /** The source's term. */
  term: number;
  /** The source's member id. */
  leaderRegion: number;
}
