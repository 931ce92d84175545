// The engine config of a founding member, as the hand-driven engine tests build it: every founder is
// NAME at NAME:7000 / http://NAME:8080, election jitter seeded with 1, today's compat and limits.
import { bootstrapRoster, CURRENT_COMPAT, DEFAULT_LIMITS, type EngineConfig } from '../../engine/index.js';

/** founderConfig: the config of founder `name` of a cluster founded by `founders` (in id order). */
export function founderConfig(name: string, founders: readonly string[]): EngineConfig {
  return {
    name,
    grpcAddr: `${name}:7000`,
    httpAddr: `http://${name}:8080`,
    bootstrapRoster: bootstrapRoster(
      founders.map((n) => ({ name: n, grpcAddr: `${n}:7000`, httpAddr: `http://${n}:8080` })),
    ),
    seeds: [],
    randomSeed: 1,
    compat: CURRENT_COMPAT,
    limits: DEFAULT_LIMITS,
  };
}
