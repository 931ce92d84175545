// Deliberately broken engines, one per rule the newer checkers watch (barrier, report-honesty,
// leader-step-down, roster-replay, match-honesty): a checker that never fires proves nothing.
// Engine methods are replaced on the core instance (engine/core.ts); TypeScript's `private` is compile-time only.
import { Engine } from '../../engine/engine.js';
import type { Effect, Input, Roster } from '../../engine/types.js';
import type { EngineFactory, EngineLike } from '../../sim/node.js';

type Rewrite = (engine: Engine, input: Input, effects: Effect[]) => Effect[];

function wrap(rewrite: Rewrite, rewriteInput: (engine: Engine, input: Input) => Input = (_e, i) => i): EngineFactory {
  return (config, restored) => {
    const engine = new Engine(config, restored);
    const wrapped: EngineLike = {
      step: (input) => rewrite(engine, input, engine.step(rewriteInput(engine, input))),
      status: () => engine.status(),
      entries: () => engine.entries(),
      snapshot: () => engine.snapshot(),
    };
    return wrapped;
  };
}

/** patched replaces methods of the engine's core (engine/core.ts: the state machine Engine fronts, as RawNode fronts raft). */
function patched(patch: (core: object) => void): EngineFactory {
  return (config, restored) => {
    const engine = new Engine(config, restored);
    patch((engine as unknown as { core: object }).core);
    return engine;
  };
}

/** savesHardStateLast carries out its hard-state save after the step's messages (a vote leaves before it is durable). */
export const savesHardStateLast: EngineFactory = wrap((_engine, _input, effects) => [
  ...effects.filter((e) => e.type !== 'saveHardState'),
  ...effects.filter((e) => e.type === 'saveHardState'),
]);

/** reportsUnmatched reports its durable frontier as applied_seqno, matched against the leader or not. */
export const reportsUnmatched: EngineFactory = wrap((engine, _input, effects) =>
  effects.map((e): Effect => {
    const durableSeq = engine.status().durableSeq;
    if (e.type === 'send' && e.request.method === 'ReportApplied') {
      return {
        ...e,
        request: {
          method: 'ReportApplied',
          body: { ...e.request.body, appliedSeqno: Math.max(e.request.body.appliedSeqno, durableSeq) },
        },
      };
    }
    if (e.type === 'reply' && e.response.method === 'ShipSegment') {
      return {
        ...e,
        response: {
          method: 'ShipSegment',
          body: { ...e.response.body, appliedSeqno: Math.max(e.response.body.appliedSeqno, durableSeq) },
        },
      };
    }
    return e;
  }),
);

/** neverStepsDown: check-quorum always finds a quorum, so a leader cut off stays leader. */
export const neverStepsDown: EngineFactory = patched((engine) => {
  (engine as unknown as { checkQuorum: () => boolean }).checkQuorum = () => true;
});

/** countsUnackedShips: a leader takes an accepted ship as matching its last entry, durable on the follower or not. */
export const countsUnackedShips: EngineFactory = (() => {
  const shipped = new WeakMap<Engine, Map<number, number>>();
  const ships = (engine: Engine): Map<number, number> => {
    let map = shipped.get(engine);
    if (!map) shipped.set(engine, (map = new Map()));
    return map;
  };
  return wrap(
    (engine, _input, effects) => {
      for (const e of effects)
        if (e.type === 'send' && e.request.method === 'ShipSegment')
          ships(engine).set(e.requestId, e.request.body.leaderLastSeq);
      return effects;
    },
    (engine, input) => {
      if (input.type !== 'response' || input.response.method !== 'ShipSegment') return input;
      const last = ships(engine).get(input.requestId);
      ships(engine).delete(input.requestId);
      const body = input.response.body;
      if (last === undefined || !body.accepted || last <= body.appliedSeqno) return input;
      return { ...input, response: { method: 'ShipSegment', body: { ...body, appliedSeqno: last } } };
    },
  );
})();

/** forgetsCompactedRoster: the roster at the log's base (snapshot or compaction) is forgotten; only kind-4 records and the admission roster count. */
export const forgetsCompactedRoster: EngineFactory = patched((engine) => {
  const e = engine as unknown as { rosterAt: (seq: number) => Roster; baseRoster: Roster | null };
  const rosterAt = e.rosterAt.bind(engine);
  e.rosterAt = (seq: number) => {
    const base = e.baseRoster;
    e.baseRoster = null;
    try {
      return rosterAt(seq);
    } finally {
      e.baseRoster = base;
    }
  };
});
