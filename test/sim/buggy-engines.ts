// Deliberately broken engines (wrappers around the real one), to show the
// simulator catches each kind of bug: a checker that never fires proves nothing.
import { Engine } from '../../engine/engine.js';
import { voterIds } from '../../engine/roster.js';
import { EntryKind, type Effect, type Input, type ReadIndexAsker } from '../../engine/types.js';
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

/** acksOnAppend acknowledges a proposal as soon as the leader appends it, before any quorum. */
export const acksOnAppend: EngineFactory = (() => {
  const early = new WeakMap<object, Set<number>>();
  return wrap((engine, input, effects) => {
    let acked = early.get(engine);
    if (!acked) early.set(engine, (acked = new Set()));
    const out = effects.filter((e) => !(e.type === 'proposalResult' && e.ok && acked!.has(e.proposalId)));
    if (input.type === 'propose') {
      const append = effects.find(
        (e): e is Extract<Effect, { type: 'append' }> =>
          e.type === 'append' && e.entries.some((x) => x.kind === EntryKind.EventBatch),
      );
      const last = append?.entries[append.entries.length - 1];
      if (last) {
        acked.add(input.proposalId);
        out.push({
          type: 'proposalResult',
          proposalId: input.proposalId,
          ok: true,
          code: 'committed',
          seq: last.seq,
          reason: '',
          leaderHint: '',
        });
      }
    }
    return out;
  });
})();

/** ignoresStaleTerms lifts every incoming ship's term to the receiver's own: no term fencing. */
export const ignoresStaleTerms: EngineFactory = wrap(
  (_engine, _input, effects) => effects,
  (engine, input) => {
    if (input.type !== 'request' || input.request.method !== 'ShipSegment') return input;
    const term = engine.status().term;
    if (input.request.body.term >= term) return input;
    return { ...input, request: { method: 'ShipSegment', body: { ...input.request.body, term } } };
  },
);

/** forgetsHardState never makes its term and vote durable. */
export const forgetsHardState: EngineFactory = wrap((_engine, _input, effects) =>
  effects.filter((e) => e.type !== 'saveHardState'),
);

/** readyAtOnce claims readiness on the first heartbeat it sees, caught up or not. */
export const readyAtOnce: EngineFactory = (() => {
  const claimed = new WeakSet<object>();
  return wrap((engine, input, effects) => {
    if (
      input.type === 'request' &&
      input.request.method === 'Heartbeat' &&
      !claimed.has(engine) &&
      engine.status().role !== 'leader'
    ) {
      claimed.add(engine);
      return [...effects, { type: 'readiness', ready: true, reason: 'caught-up-to-heartbeat-frontier' } as const];
    }
    return effects;
  });
})();

/** grantsEveryVote answers every vote request with a grant (two votes in one term, stale logs elected). */
export const grantsEveryVote: EngineFactory = wrap((_engine, _input, effects) =>
  effects.map((e) =>
    e.type === 'reply' && e.response.method === 'RequestVote'
      ? { ...e, response: { method: 'RequestVote', body: { ...e.response.body, granted: true } } }
      : e,
  ),
);

/**
 * readsFromBareCommit answers a leader's read at once from its commit seqno, with no heartbeat round
 * and no wait for a commit of its term (what the store did before the read index): a deposed leader
 * serves stale reads.
 */
export const readsFromBareCommit: EngineFactory = (() => {
  const answered = new WeakMap<object, Set<number>>();
  return wrap((engine, input, effects) => {
    let early = answered.get(engine);
    if (!early) answered.set(engine, (early = new Set()));
    const out = effects.filter((e) => !(e.type === 'readIndexResult' && early!.delete(e.readId)));
    if (
      input.type === 'readIndex' &&
      engine.status().role === 'leader' &&
      !out.some((e) => e.type === 'readIndexResult' && e.readId === input.readId)
    ) {
      early.add(input.readId);
      out.push({
        type: 'readIndexResult',
        readId: input.readId,
        index: engine.status().commitSeq,
        refusal: null,
        leaderHint: '',
      });
    }
    return out;
  });
})();

/**
 * reusesAskerAck: the ack a forwarded read carried (engine/read-index.ts, "The asker's ack") also confirms the
 * leader's later reads, as if it raised the asker's acked round: a read that began after the request was sent
 * is vouched for by an asker that may since have voted a newer leader in. A deposed leader serves stale reads.
 */
export const reusesAskerAck: EngineFactory = (() => {
  const lastAsker = new WeakMap<object, ReadIndexAsker>();
  return wrap(
    (_engine, _input, effects) => effects,
    (engine, input) => {
      if (input.type !== 'readIndex') return input;
      if (input.asker) {
        lastAsker.set(engine, input.asker);
        return input;
      }
      const seen = lastAsker.get(engine);
      return seen ? { ...input, asker: seen } : input;
    },
  );
})();

/**
 * countsLearnerAsker: a read forwarded by a member that is no voter (a learner) counts as a voter's ack, as if
 * the leader took the asker for a voter it is not (or read its identity from a field of the request).
 */
export const countsLearnerAsker: EngineFactory = wrap(
  (_engine, _input, effects) => effects,
  (engine, input) => {
    if (input.type !== 'readIndex' || !input.asker) return input;
    const status = engine.status();
    const voters = voterIds(status.roster);
    if (voters.includes(input.asker.id)) return input;
    const standIn = voters.find((id) => id !== status.id);
    return standIn === undefined ? input : { ...input, asker: { ...input.asker, id: standIn } };
  },
);
