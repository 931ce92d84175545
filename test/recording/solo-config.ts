// The one-member engine configuration the recording tests record and replay (a node named `solo`).
import { CURRENT_COMPAT, DEFAULT_LIMITS } from '../../engine/limits.js';
import { bootstrapRoster } from '../../engine/roster.js';
import type { EngineConfig } from '../../engine/types.js';
import type { EngineLimits } from '../../engine/types.js';
import { emptyRestoredState } from '../../engine/restored.js';

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

/** soloHeadLines: a recording's first two JSON lines (segment 1's `seg`, the run's `run`) for `config` at format `version`. */
export function soloHeadLines(version: number, config: EngineConfig): Record<string, unknown>[] {
  return [
    { t: 'seg', v: version, run: 'r1', node: 'solo', index: 1, firstStep: 1 },
    {
      t: 'run',
      v: version,
      run: 'r1',
      node: 'solo',
      build: 'test',
      startedAtMs: 1_000,
      tickMs: 100,
      payloads: 'hashed',
      config,
      restored: emptyRestoredState(),
    },
  ];
}
