// The limits of the node's /cluster view (cluster-feed.ts), each with its default. They are not node config
// keys: a test passes its own to ClusterFeed; a node runs with these.

export interface ClusterFeedLimits {
  /**
   * clusterEventCountMax bounds the ring of recent elections, role, readiness and membership changes a node
   * keeps in memory for /cluster; the oldest goes first. Nothing is written to disk: a restart starts it empty.
   */
  clusterEventCountMax: number;
  /** clusterPollIntervalMs paces the reads of the other members' /status while a /cluster stream is open. */
  clusterPollIntervalMs: number;
  /** clusterPollTimeoutMs bounds one member's /status read; a member slower than this shows as unreachable. */
  clusterPollTimeoutMs: number;
  /** clusterStatusBytesMax bounds one member's /status body. */
  clusterStatusBytesMax: number;
}

export const DEFAULT_CLUSTER_FEED_LIMITS: Readonly<ClusterFeedLimits> = Object.freeze({
  clusterEventCountMax: 256,
  // A member's figures at most a second old, at three small GETs a second per node with a viewer, none without.
  clusterPollIntervalMs: 1_000,
  clusterPollTimeoutMs: 1_000,
  clusterStatusBytesMax: 1024 * 1024,
});
