// plantedWallClock: a test-only engine that reads the wall clock in one handler, the kind of
// non-determinism replay exists to catch. engine/ must stay pure (its lint fence forbids a clock), so
// the bug is planted around it instead: before each `tick` it hands the engine the replaying machine's
// wall clock as if the tick handler had read it (NodeStats.nowNs), which the next heartbeat carries.
// Replay must then diverge at the first step whose heartbeat went out with a clock the node never saw.
import type { Effect, Input, NodeStats } from '../../engine/types.js';
import { realReplayEngine, type ReplayEngineFactory } from './replay.js';

export function plantedWallClock(inner: ReplayEngineFactory = realReplayEngine): ReplayEngineFactory {
  return (config, restored) => {
    const engine = inner(config, restored);
    let stats: NodeStats = { entityCount: 0, signalThroughputEps: 0, diskBytes: 0, nowNs: '0' };
    return {
      step(input: Input): Effect[] {
        if (input.type === 'stats') stats = input.stats;
        if (input.type === 'tick') {
          const nowNs = (BigInt(Date.now()) * 1_000_000n + (process.hrtime.bigint() % 1_000_000n)).toString();
          engine.step({ type: 'stats', stats: { ...stats, nowNs } });
        }
        return engine.step(input);
      },
    };
  };
}
