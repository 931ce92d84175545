// Every simulator limit and default has a name here. Per-seed choices (swarm
// testing) live in options.ts and draw their ranges from these.
export const SIM_LIMITS = {
  /** tickMs is the engine's tick period on each node's own (drifting) clock. */
  tickMs: 100,
  /** clockDriftFractionMax bounds how fast or slow a node's clock runs (0.02 = ±2%). */
  clockDriftFractionMax: 0.02,
  /** founderCountMax bounds the founding cluster (the 1-7 nodes). */
  founderCountMax: 7,
  /** joinerCountMax bounds nodes that join during a run. */
  joinerCountMax: 3,
  /** oldPeerCountMax bounds founders running an older binary. */
  oldPeerCountMax: 2,
  /** callDeadlineElectionTimeouts: a lost unary call fails after this many election timeouts. */
  callDeadlineElectionTimeouts: 2,
  /** pullDeadlineExtraTicks: streams and snapshot fetches get the engine's pull timeout plus this. */
  pullDeadlineExtraTicks: 10,
  /** connectRefusedDelayMs: a call to a crashed or unknown address fails this fast. */
  connectRefusedDelayMs: 2,
  oneWayDelayMsMin: 1,
  oneWayDelayMsMax: 15,
  /** reorderExtraDelayMsMax: a reordered message is held back by up to this much. */
  reorderExtraDelayMsMax: 300,
  /** replayDelayMsMax: a replayed request arrives again up to this long after the original. */
  replayDelayMsMax: 20_000,
  /** linkInflightCountMax: a link carrying this many messages drops new ones (capacity). */
  linkInflightCountMax: 512,
  diskSyncDelayMsMin: 0.1,
  diskSyncDelayMsMax: 8,
  snapshotStageDelayMsMin: 1,
  snapshotStageDelayMsMax: 50,
  /** artifactRetainCountMax: each node keeps only its newest artifacts. */
  artifactRetainCountMax: 3,
  statsIntervalMs: 1_000,
  /** clientTimeoutMs: a client gives up on an unanswered proposal attempt after this long. */
  clientTimeoutMs: 3_000,
  clientAttemptCountMax: 6,
  clientRetryDelayMsMax: 200,
  /** keySpaceCount: writes go to this many keys, so they overwrite each other. */
  keySpaceCount: 16,
  /** registerActiveKeyCount: the recorded clients (register-clients.ts) share this many keys at a time. */
  registerActiveKeyCount: 2,
  /** registerKeyOpCountMax: a recorded key is retired after this many operations (bounds the checker's work per key). */
  registerKeyOpCountMax: 60,
  /** registerKeyIndeterminateWriteCountMax: ... or after this many writes of unknown outcome. */
  registerKeyIndeterminateWriteCountMax: 4,
  safetyPhaseMsDefault: 90_000,
  /** livenessPhaseMsMax: after healing, the cluster must converge within this long. */
  livenessPhaseMsMax: 60_000,
  /** livenessProbeIntervalMs: how often the liveness phase checks for convergence. */
  livenessProbeIntervalMs: 250,
  /** wireRoundTripEvery: every Nth message takes the full protobuf round trip (1 = all; see wire.ts). */
  wireRoundTripEvery: 8,
  /** eventCountMax bounds one run's event loop (a hang becomes a failure, not a hang). */
  eventCountMax: 20_000_000,
  /** shrinkRunCountMax and shrinkWallMsMax bound the search for a smaller failing schedule. */
  shrinkRunCountMax: 150,
  shrinkWallMsMax: 180_000,
} as const;

export const MS = 1_000;

export function msToUs(ms: number): number {
  return Math.round(ms * MS);
}
