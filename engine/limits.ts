// Every engine limit has a name and a default here; drivers override them by name.
import type { Compat, EngineLimits } from './types.js';

/** DEFAULT_LIMITS are tuned for a 100 ms tick: heartbeats every 200 ms, elections after 1-2 s. */
export const DEFAULT_LIMITS: EngineLimits = {
  heartbeatIntervalTicks: 2,
  electionTimeoutTicks: 10,
  segmentEntryCountMax: 256,
  segmentPayloadBytesMax: 4 * 1024 * 1024,
  inflightSegmentCountMax: 8,
  shipRetryTicks: 5,
  streamChunkCountMax: 64,
  streamPayloadBytesMax: 32 * 1024 * 1024,
  pullTimeoutTicks: 30,
  // 2 s at a 100 ms tick: under pullTimeoutTicks and the transport's 30 s stream deadline (and the simulator's).
  liveStreamTicksMax: 20,
  // etcd's --snapshot-count default. Staging writes and fsyncs the whole state; at 10,000 a node
  // taking ~3,000 writes/s staged every ~3 s and each staging's fsync raised the p99 of writes
  // (bench/cluster/threshold-probe.ts: p99 54-87 ms against 38-59 ms). The cost is memory: the
  // engine keeps up to this many entries (plus compactionRetainEntryCount) in its log.
  snapshotEntryCountThreshold: 100_000,
  // As much data again as the snapshot holds (Redis's auto-aof-rewrite-percentage default): a staging then
  // encodes at most one byte of state per byte of data written, and the log's data is at most the
  // snapshot's size. With 150 B of data per entry this takes over from the threshold once a snapshot passes
  // 15 MB; at 50, bench/cluster.ts (each write a new key, as many bytes of snapshot per key as of data per
  // write) still staged five times in its 700k writes, the last three in its 64-writer one-call rounds.
  snapshotLogBytesPercentMin: 100,
  // 5x the threshold: the log's memory and a restart's replay stay within 5x what the threshold alone kept.
  snapshotEntryCountMax: 500_000,
  compactionRetainEntryCount: 1_000,
  proposalQueueCountMax: 10_000,
  joinRetryTicks: 10,
  statusPollIntervalTicks: 5,
  transferTimeoutTicks: 20,
  clusterMemberCountMax: 15,
  replicationLagRegionCountMax: 64,
  rosterProbeIntervalTicks: 10,
  readIndexPendingCountMax: 10_000,
  // Off: a lease read is only as safe as the clocks and the absence of pauses (engine/read-index.ts).
  readLeaseEnabled: 0,
  clockDriftPercentMax: 5,
  // Off in the engine's defaults (the simulator turns it on per seed, scenarios script every promotion);
  // a node turns it on (cli/node/engine-defaults.ts, NODE_ENGINE_DEFAULTS).
  autopilotEnabled: 0,
  autopilotLagSeqMax: 64,
  // 5 s at the node's 100 ms tick (raft-autopilot's ServerStabilizationTime is 10 s at its defaults).
  autopilotStableTicks: 50,
  autopilotFailureTolerance: 1,
};

/** CURRENT_COMPAT is what this binary speaks: every newer field, capability bit 0. */
export const CURRENT_COMPAT: Compat = {
  sendsLeaderLastSeq: true,
  capabilities: 0x3,
  buildVersion: '0.1.0',
};

// Fixed bounds: part of the protocol's shape rather than tuning, so not in EngineLimits. The
// transports import them (transports/admin/limits.ts, transports/grpc/join-fields.ts).

/** DNS_NAME_CHARS_MAX: the longest DNS name (RFC 1035), the bound on a host in an address. */
export const DNS_NAME_CHARS_MAX = 253;
/** MEMBER_NAME_CHARS_MAX: a member name is 1-253 characters, so it may also be the member's DNS name. */
export const MEMBER_NAME_CHARS_MAX = DNS_NAME_CHARS_MAX;
/** MEMBER_ADDRESS_CHARS_MAX bounds a joiner's grpc_addr and http_addr as the engine accepts them. */
export const MEMBER_ADDRESS_CHARS_MAX = 512;
/** CALL_SWEEP_INTERVAL_ELECTION_TIMEOUTS: how often, in election timeouts, unanswered calls are swept. */
export const CALL_SWEEP_INTERVAL_ELECTION_TIMEOUTS = 4;
/**
 * CALL_FORGET_AGE_ELECTION_TIMEOUTS: a call unanswered for this many election timeouts is forgotten
 * (its answer, should one come, is ignored as unknown): far past any retry, so only lost calls go.
 */
export const CALL_FORGET_AGE_ELECTION_TIMEOUTS = 8;
