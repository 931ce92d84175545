// The one-member engine configuration the recording tests record and replay (a node named `solo`).
import { CURRENT_COMPAT, DEFAULT_LIMITS } from '../../engine/limits.js';
import { bootstrapRoster } from '../../engine/roster.js';
import type { EngineConfig } from '../../engine/types.js';
import type { EngineLimits } from '../../engine/types.js';

export function soloConfig(limits: Partial<EngineLimits> = {}): EngineConfig {
  return {
    name: 'solo',
    grpcAddr: '127.0.0.1:1',
    httpAddr: 'http://127.0.0.1:2',
    bootstrapRoster: bootstrapRoster([{ name: 'solo', grpcAddr: '127.0.0.1:1', httpAddr: 'http://127.0.0.1:2' }]),
    seeds: [],
    randomSeed: 7,
    compat: CURRENT_COMPAT,
    limits: { ...DEFAULT_LIMITS, ...limits },
  };
}
