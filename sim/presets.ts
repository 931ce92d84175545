// Presets for scripted use of the world (tests, scenarios), all on the real engine:
// - calm: a calm network and disk, a cluster of N founders with room for joiners; time still
//   passes as in seeded runs (delays, clock drift, tick phases), only the faults are gone.
// - lockstep: no faults and no delays; every node ticks at the same instants and messages are
//   delivered in the order sent (ClusterConfig.lockstep). Scenarios and engine tests run in it
//   through sim/lockstep.ts, as TigerBeetle's replica tests share its simulator's cluster.
import { Cluster, type ClusterConfig, type FounderSpec } from './cluster.js';
import type { NetworkKnobs, StorageKnobs } from './options.js';
import { realEngine } from './run.js';

export const CALM_NETWORK: NetworkKnobs = {
  lossProbability: 0,
  duplicateProbability: 0,
  replayProbability: 0,
  reorderProbability: 0,
  oneWayDelayMsMin: 1,
  oneWayDelayMsMax: 5,
  linkInflightCountMax: 512,
};

export const CALM_STORAGE: StorageKnobs = {
  tornWriteProbability: 0,
  diskSyncDelayMsMax: 2,
  snapshotCorruptProbability: 0,
};

/** calmCluster builds (but does not start) a cluster of `founderCount` current-version voters. */
export function calmCluster(founderCount: number, over: Partial<ClusterConfig> = {}): Cluster {
  const founders: FounderSpec[] = Array.from({ length: founderCount }, () => ({}));
  return new Cluster({
    seed: 1,
    founders,
    joinerSlotCount: 2,
    engineFactory: realEngine,
    network: CALM_NETWORK,
    storage: CALM_STORAGE,
    ...over,
  });
}

/** LOCKSTEP_NETWORK: nothing lost, duplicated or held back, and no delay (a message arrives at the instant it is sent, after those sent before it). */
export const LOCKSTEP_NETWORK: NetworkKnobs = {
  lossProbability: 0,
  duplicateProbability: 0,
  replayProbability: 0,
  reorderProbability: 0,
  oneWayDelayMsMin: 0,
  oneWayDelayMsMax: 0,
  linkInflightCountMax: 1_000_000,
};

/** LOCKSTEP_STORAGE: writes are durable at once; nothing torn or corrupted unless a script says so. */
export const LOCKSTEP_STORAGE: StorageKnobs = {
  tornWriteProbability: 0,
  diskSyncDelayMsMax: 0,
  snapshotCorruptProbability: 0,
};

/** lockstepCluster builds (but does not start) the no-fault, in-order world scripts drive (sim/lockstep.ts). */
export function lockstepCluster(founders: FounderSpec[], over: Partial<ClusterConfig> = {}): Cluster {
  return new Cluster({
    seed: 'lockstep',
    founders,
    joinerSlotCount: 4,
    engineFactory: realEngine,
    network: LOCKSTEP_NETWORK,
    storage: LOCKSTEP_STORAGE,
    clockDriftFractionMax: 0,
    lockstep: true,
    ...over,
  });
}
