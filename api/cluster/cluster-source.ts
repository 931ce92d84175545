// ClusterSource is what the API needs from the node it runs on to serve /cluster (cluster-routes.ts): a feed of
// numbered entries (the node's recent events and its newest view of the members) and a snapshot of the view.
// A node provides it (transports/node/cluster-feed.ts, wired in cli/node/node.ts); the API alone has none, and
// /cluster then answers 404. The entries' data are JSON documents the OpenAPI document describes (ClusterView,
// ClusterEvent); the API passes them through without reading them.

export interface ClusterFeedEntry {
  seq: number;
  event: 'cluster.event' | 'cluster.view';
  data: unknown;
}

export interface ClusterSource {
  /** epoch names the feed's numbering (its process's start): an event id of another epoch reads from the start. */
  readonly epoch: number;
  /** entriesAfter lists up to countMax entries numbered after afterSeq, in order. */
  entriesAfter(afterSeq: number, countMax: number): ClusterFeedEntry[];
  /** listen calls wake whenever the feed may have grown, until the returned function is called. */
  listen(wake: () => void): () => void;
  /** snapshot is the view of the members now (ClusterView). */
  snapshot(): Promise<unknown>;
}
