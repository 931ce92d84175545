// The engine limits a node defaults otherwise than the engine, apart from node.ts so the config schema can read
// them without loading the node.
import type { EngineLimits } from '../../engine/types.js';

/**
 * NODE_ENGINE_DEFAULTS are the engine limits a node defaults otherwise than the engine: autopilot is on
 * (`--engine-limit autopilotEnabled=0` turns it off), so a pod that joins becomes a voter by itself.
 */
export const NODE_ENGINE_DEFAULTS: Partial<EngineLimits> = { autopilotEnabled: 1 };
