// Presets for scripted use of the world (tests, scenarios): a calm network and
// disk, and a cluster of N founders with room for joiners, on the real engine.
import { Cluster, type ClusterConfig, type FounderSpec } from './cluster.js';
import type { NetworkKnobs, StorageKnobs } from './options.js';
import { realEngine } from './run.js';

export const CALM_NETWORK: NetworkKnobs = {
  lossProbability: 0, duplicateProbability: 0, replayProbability: 0, reorderProbability: 0,
  oneWayDelayMsMin: 1, oneWayDelayMsMax: 5, linkInflightCountMax: 512,
};

export const CALM_STORAGE: StorageKnobs = { tornWriteProbability: 0, diskSyncDelayMsMax: 2, snapshotCorruptProbability: 0 };

/** calmCluster builds (but does not start) a cluster of `founderCount` current-version voters. */
export function calmCluster(founderCount: number, over: Partial<ClusterConfig> = {}): Cluster {
  const founders: FounderSpec[] = Array.from({ length: founderCount }, () => ({}));
  return new Cluster({
    seed: 1, founders, joinerSlotCount: 2, engineFactory: realEngine, network: CALM_NETWORK, storage: CALM_STORAGE, ...over,
  });
}
