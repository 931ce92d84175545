// Every limit and timing of the node's driver, HTTP surface and measurements has a name and a
// default here. Engine, gRPC, storage and store limits live with their modules and are overridden
// through NodeConfig by name.

export interface NodeLimits {
  /** tickMs is the length of one engine tick: every engine timeout counts these. */
  tickMs: number;
  /** inputQueueCountMax bounds inputs waiting for the engine; beyond it peer requests and proposals are refused. */
  inputQueueCountMax: number;
  /**
   * proposeBatchCountMax bounds the proposals gathered into one engine step. Proposals arriving in
   * the same event-loop turn ride one step, one WAL append and one ShipSegment per follower.
   */
  proposeBatchCountMax: number;
  /** statusPollTimeoutMs bounds one GET of the leader's /status (status-poll readiness). */
  statusPollTimeoutMs: number;
  /** statusResponseBytesMax bounds the /status body read from the leader. */
  statusResponseBytesMax: number;
  /** diskUsageRefreshMs paces the walk of the data directory that measures disk_bytes. */
  diskUsageRefreshMs: number;
  /** diskUsageFileCountMax bounds the files one walk visits. */
  diskUsageFileCountMax: number;
  /** throughputWindowMs is the window signal_throughput_eps averages over. */
  throughputWindowMs: number;
  /** waiterCountMax bounds store operations waiting on a condition (applied seqno, a leader). */
  waiterCountMax: number;
  /** stopGraceMs bounds how long stop() lets running peer calls finish. */
  stopGraceMs: number;
  /** httpRequestTimeoutMs bounds one request to the node's HTTP server. */
  httpRequestTimeoutMs: number;
  /**
   * handoffTimeoutMs bounds how long a stopping leader tries to hand leadership to its most caught-up voter
   * (SIGTERM, `svc node`); after it the node stops anyway and the others elect after their timeout.
   */
  handoffTimeoutMs: number;
  /**
   * logLinesPerKindWindowMax is how many log lines one kind of peer-driven event (an engine warning code)
   * writes per logThrottleWindowMs; the rest are counted in the metric and summed into the next line.
   */
  logLinesPerKindWindowMax: number;
  /** logThrottleWindowMs is the window of logLinesPerKindWindowMax. */
  logThrottleWindowMs: number;
  /**
   * logRingBytesMax bounds the node's recent log lines kept in memory (transports/node/log-ring.ts) for the
   * Admin Logs call (`svc debug bundle`); every line still goes to stdout.
   */
  logRingBytesMax: number;
}

export const DEFAULT_NODE_LIMITS: Readonly<NodeLimits> = Object.freeze({
  tickMs: 100,
  inputQueueCountMax: 100_000,
  proposeBatchCountMax: 1_024,
  statusPollTimeoutMs: 1_000,
  statusResponseBytesMax: 1024 * 1024,
  diskUsageRefreshMs: 2_000,
  diskUsageFileCountMax: 100_000,
  throughputWindowMs: 10_000,
  waiterCountMax: 10_000,
  stopGraceMs: 1_000,
  httpRequestTimeoutMs: 5_000,
  // Well inside a pod's termination grace (30 s) and the stop bound; a transfer itself ends after
  // transferTimeoutTicks (2 s at the default tick), so this leaves room for a second attempt.
  handoffTimeoutMs: 5_000,
  logLinesPerKindWindowMax: 20,
  logThrottleWindowMs: 60_000,
  // About ten minutes of a busy node's info lines (a line is 200-400 bytes), under one Admin answer.
  logRingBytesMax: 1024 * 1024,
});

export function nodeLimits(overrides: Partial<NodeLimits> = {}): NodeLimits {
  const limits = { ...DEFAULT_NODE_LIMITS, ...overrides };
  for (const [name, value] of Object.entries(limits)) {
    if (!Number.isSafeInteger(value) || value < 1)
      throw new RangeError(`node limit ${name} must be a positive integer, got ${String(value)}`);
  }
  return limits;
}
