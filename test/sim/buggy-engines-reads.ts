// Deliberately broken engines around the read index's asker's ack (engine/read-index.ts, "The asker's ack"),
// caught by the read-quorum checker (sim/checkers/read-quorum.ts): test/sim/read-quorum.test.ts.
import { Engine } from '../../engine/engine.js';
import type { Input } from '../../engine/types.js';
import type { EngineFactory, EngineLike } from '../../sim/node.js';

function rewritingInputs(rewrite: (engine: Engine, input: Input) => Input): EngineFactory {
  return (config, restored) => {
    const engine = new Engine(config, restored);
    const wrapped: EngineLike = {
      step: (input) => engine.step(rewrite(engine, input)),
      status: () => engine.status(),
      entries: () => engine.entries(),
      snapshot: () => engine.snapshot(),
    };
    return wrapped;
  };
}

/**
 * countsAnyTermAsker: a forwarded read's asker counts as an ack whatever term its request names (the mutation
 * bench's `asker-ack-any-term`): an asker of a higher term may have voted a newer leader in, which committed and
 * acknowledged writes this leader's index does not cover.
 */
export const countsAnyTermAsker: EngineFactory = rewritingInputs((engine, input) => {
  if (input.type !== 'readIndex' || !input.asker) return input;
  const status = engine.status();
  if (status.role !== 'leader' || input.asker.term === status.term) return input;
  return { ...input, asker: { ...input.asker, term: status.term } };
});
