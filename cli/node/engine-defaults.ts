// The engine limits a node defaults otherwise than the engine, apart from node.ts so the config schema can read
// them without loading the node.
import type { EngineLimits } from '../../engine/types.js';

/**
 * NODE_ENGINE_DEFAULTS are the engine limits a node defaults otherwise than the engine: autopilot is on
 * (`--engine-limit autopilotEnabled=0` turns it off), so a pod that joins becomes a voter by itself; and a
 * snapshot is staged every snapshotEntryCountThreshold entries whatever the store's size
 * (snapshotLogBytesPercentMin 0), because the store stages a delta of what changed since its last snapshot
 * (store/snapshot-layers.ts), so a staging's work is what was written since, not the store's size; the store's
 * own limits decide when to write everything again (storeLimits.snapshotLayerCountMax, snapshotLayerRowsPercentMax).
 */
export const NODE_ENGINE_DEFAULTS: Partial<EngineLimits> = { autopilotEnabled: 1, snapshotLogBytesPercentMin: 0 };
