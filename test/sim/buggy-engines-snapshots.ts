// A deliberately wrong leader and puller around filtered snapshots (docs/protocol.md, "Filtered snapshots"), caught
// by snapshot-integrity's kind rule (sim/checkers/snapshot-kind.ts): test/sim/snapshot-kind.test.ts.
import { Engine } from '../../engine/engine.js';
import type { EngineFactory, EngineLike } from '../../sim/node.js';

/**
 * servesFullToFiltered: as leader it serves the full snapshot to a filtered member (the serveSnapshot effect's
 * filter dropped), and as puller it skips the driver's check before the swap (its snapshotExpectation takes a full
 * snapshot always: the test-only stand-in for a puller that does not check). The engine's own assert, on hearing
 * snapshotInstalled, would stop the run a step later; the checker sees the install first.
 */
export const servesFullToFiltered: EngineFactory = (config, restored) => {
  const engine = new Engine(config, restored);
  const wrapped: EngineLike = {
    step: (input) =>
      engine.step(input).map((e) => {
        if (e.type !== 'serveSnapshot' || e.filter === undefined) return e;
        const { filter: _cut, ...full } = e;
        return full;
      }),
    status: () => engine.status(),
    entries: () => engine.entries(),
    snapshot: () => engine.snapshot(),
    snapshotExpectation: () => ({ filtered: false }),
  };
  return wrapped;
};

/**
 * servesCutToFull: as leader it serves a member its roster does not filter a snapshot cut to another member's filter
 * (the epoch: the snapshot's seq), and as puller it skips the driver's check (its snapshotExpectation takes a cut of
 * any epoch and filter, and no full snapshot).
 */
export const servesCutToFull: EngineFactory = (config, restored) => {
  const engine = new Engine(config, restored);
  const callers = new Map<number, number>();
  const wrapped: EngineLike = {
    step: (input) => {
      if (input.type === 'request' && input.request.method === 'FetchSnapshot' && input.callerId !== undefined)
        callers.set(input.callId, input.callerId);
      return engine.step(input).map((e) => {
        if (e.type !== 'serveSnapshot') return e;
        const caller = callers.get(e.callId);
        callers.delete(e.callId);
        const filters = engine.status().roster.filters ?? {};
        if (e.filter !== undefined || caller === undefined || filters[caller] !== undefined) return e;
        const other = Object.values(filters)[0];
        if (other === undefined || !e.header.needed) return e;
        return { ...e, filter: { epoch: Math.max(1, e.header.snapshotSeq), filter: other } };
      });
    },
    status: () => engine.status(),
    entries: () => engine.entries(),
    snapshot: () => engine.snapshot(),
    snapshotExpectation: () => ({ filtered: true, epoch: 0, filter: null, newerEpoch: 0 }),
  };
  return wrapped;
};
