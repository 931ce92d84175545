// Every limit the gRPC transports enforce, each with a name and a default, in
// this one place. Servers and clients take a Partial<GrpcLimits> and fill the
// rest from DEFAULT_GRPC_LIMITS.
import { DEFAULT_LIMITS } from '../../engine/limits.js';

const MiB = 1024 * 1024;

export interface GrpcLimits {
  /**
   * messageBytesMax bounds one protobuf message either way (grpc.max_receive_message_length and
   * grpc.max_send_message_length, server and client). A ShipSegmentRequest carries up to the
   * engine's segmentPayloadBytesMax of payload plus a few dozen bytes of fields, so this sits well
   * above it; a larger message is refused with RESOURCE_EXHAUSTED before it is decoded.
   */
  messageBytesMax: number;
  /** replicationLagEntryCountMax bounds HeartbeatRequest.replication_lag; more entries get INVALID_ARGUMENT. */
  replicationLagEntryCountMax: number;
  /** stringFieldBytesMax bounds every string field of a request (names, addresses, build_version). */
  stringFieldBytesMax: number;
  /**
   * streamUnflushedBytesMax bounds the bytes a served stream has handed to grpc-js that HTTP/2 has
   * not yet sent: a slow reader's flow-control window stops the writes' callbacks, and the server
   * stops writing until they come back. The queue above it is bounded by streamBufferedBytesMax.
   */
  streamUnflushedBytesMax: number;
  /**
   * streamBufferedBytesMax bounds everything a served stream holds in memory (queued plus
   * unflushed). StreamSegments chunks arrive from the engine in one burst with no way to wait, so a
   * reader too slow to take a burst of this size gets RESOURCE_EXHAUSTED and pulls again from its
   * frontier. FetchSnapshot never reaches it: its files are read only as fast as the reader takes them.
   */
  streamBufferedBytesMax: number;
  /**
   * handlerIdleTimeoutMs bounds how long the server waits for its handler to act on a call (answer a
   * unary call, write the next stream chunk or end it) before it ends the call with DEADLINE_EXCEEDED,
   * so a call the handler forgot never holds memory for good. Waiting on a slow reader does not count.
   */
  handlerIdleTimeoutMs: number;
  /** maxConcurrentStreamsPerConnection bounds concurrent calls on one HTTP/2 connection (grpc.max_concurrent_streams). */
  maxConcurrentStreamsPerConnection: number;

  /** unaryDeadlineMs is the deadline of a unary call other than JoinCluster. */
  unaryDeadlineMs: number;
  /** joinDeadlineMs is JoinCluster's deadline: the leader answers only after a quorum commit. */
  joinDeadlineMs: number;
  /** streamDeadlineMs is the deadline of one StreamSegments call (the engine bounds its chunks per call). */
  streamDeadlineMs: number;
  /** snapshotIdleTimeoutMs bounds the wait for the next FetchSnapshot message once the installer asked for it. */
  snapshotIdleTimeoutMs: number;

  /** keepaliveTimeMs is the idle time after which either side pings its peer (grpc.keepalive_time_ms). */
  keepaliveTimeMs: number;
  /** keepaliveTimeoutMs is how long a ping may go unanswered before the connection is dropped (grpc.keepalive_timeout_ms). */
  keepaliveTimeoutMs: number;
  /**
   * minPingIntervalWithoutDataMs is the server's grpc.http2.min_ping_interval_without_data_ms. It must
   * not exceed keepaliveTimeMs, or a server that polices pings (grpc-core does; grpc-js 1.14 does not)
   * would answer our keepalives with GOAWAY too_many_pings.
   */
  minPingIntervalWithoutDataMs: number;
  /**
   * connectTimeoutMs bounds a connection attempt of the lean unary client (lean-unary.ts: TCP and TLS). One not
   * connected by then is dropped and its peer backed off, so a peer behind a partition that healed is dialled
   * again within about this long rather than after TCP's SYN retries (a minute or more).
   */
  connectTimeoutMs: number;
  /**
   * nameLookupTimeoutMs bounds one DNS query attempt for a peer's host name (c-ares, transports/node/peer-names.ts;
   * two attempts per name server). Not getaddrinfo: its lookups cannot be cancelled and a process's exit waits for them.
   */
  nameLookupTimeoutMs: number;
  /** initialReconnectBackoffMs is the first reconnect delay after a failed connection (grpc.initial_reconnect_backoff_ms). */
  initialReconnectBackoffMs: number;
  /**
   * maxReconnectBackoffMs caps the reconnect delay (grpc.max_reconnect_backoff_ms). grpc's default
   * (120 s) would keep a restarted peer unreachable for minutes; elections need seconds.
   */
  maxReconnectBackoffMs: number;
  /**
   * flowControlWindowBytes is the client's HTTP/2 receive window (grpc-node.flow_control_window): the
   * receiver of StreamSegments and FetchSnapshot is the client, and 16 MiB measured ~2.4x the
   * default's throughput for 1 MiB messages (shared/design/measured-here.md).
   */
  flowControlWindowBytes: number;
}

export const DEFAULT_GRPC_LIMITS: Readonly<GrpcLimits> = Object.freeze({
  messageBytesMax: DEFAULT_LIMITS.segmentPayloadBytesMax + 4 * MiB,
  replicationLagEntryCountMax: DEFAULT_LIMITS.replicationLagRegionCountMax,
  stringFieldBytesMax: 4096,
  streamUnflushedBytesMax: 4 * MiB,
  streamBufferedBytesMax: 64 * MiB,
  handlerIdleTimeoutMs: 60_000,
  maxConcurrentStreamsPerConnection: 256,

  unaryDeadlineMs: 2_000,
  joinDeadlineMs: 10_000,
  streamDeadlineMs: 30_000,
  snapshotIdleTimeoutMs: 30_000,

  keepaliveTimeMs: 10_000,
  keepaliveTimeoutMs: 5_000,
  minPingIntervalWithoutDataMs: 5_000,
  connectTimeoutMs: 5_000,
  nameLookupTimeoutMs: 2_000,
  initialReconnectBackoffMs: 200,
  maxReconnectBackoffMs: 5_000,
  flowControlWindowBytes: 16 * MiB,
});

/** resolveGrpcLimits fills unset limits with defaults and rejects combinations that cannot work. */
export function resolveGrpcLimits(overrides: Partial<GrpcLimits> = {}): GrpcLimits {
  const limits: GrpcLimits = { ...DEFAULT_GRPC_LIMITS, ...overrides };
  for (const [name, value] of Object.entries(limits)) {
    if (!Number.isSafeInteger(value) || value <= 0) {
      throw new RangeError(`grpc limit ${name} must be a positive integer, got ${String(value)}`);
    }
  }
  if (limits.streamBufferedBytesMax < limits.messageBytesMax) {
    throw new RangeError('streamBufferedBytesMax must hold at least one message of messageBytesMax');
  }
  if (limits.minPingIntervalWithoutDataMs > limits.keepaliveTimeMs) {
    throw new RangeError('minPingIntervalWithoutDataMs must not exceed keepaliveTimeMs');
  }
  return limits;
}
