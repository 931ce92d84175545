// Recovery's effects come out of the `start` step, before any other input: a restarted node applies
// the committed entries it found on disk there, so they never ride on (and are never attributed to)
// the first message that happens to arrive, a forged one say (sim seed 121, foreign-traffic).
import assert from 'node:assert/strict';
import { Engine, emptyRestoredState, EntryKind, type Effect, type RestoredState } from '../../engine/index.js';
import { founderConfig } from './founders.js';

const config = founderConfig('n1', ['n1', 'n2', 'n3']);

/** A node that crashed with entries 1..3 committed (hard state says so) and none applied. */
function restoredWithCommitted(): RestoredState {
  const restored = emptyRestoredState();
  restored.hardState = { ...restored.hardState, term: 1, selfId: 1, commitSeq: 3 };
  restored.entries = [1, 2, 3].map((seq) => ({
    seq,
    term: 1,
    kind: EntryKind.EventBatch,
    data: new TextEncoder().encode(`{"n":${seq}}`),
  }));
  return restored;
}

const applied = (effects: Effect[]): number[] =>
  effects.flatMap((e) => (e.type === 'apply' ? e.entries.map((x) => x.seq) : []));

describe('engine: the start input carries out recovery', () => {
  it('applies the committed entries found on disk in the start step, and only there', () => {
    const engine = new Engine(config, restoredWithCommitted());
    assert.deepEqual(applied(engine.step({ type: 'start' })), [1, 2, 3]);
    assert.equal(engine.status().appliedSeq, 3);
    // A stranger's ReportApplied next: refused, and nothing of recovery rides on it.
    const forged = engine.step({
      type: 'request',
      callId: 1,
      request: {
        method: 'ReportApplied',
        body: { reporterShard: 99, sourceShard: 0, appliedSeqno: 50, reporterTerm: 1_000, capabilities: 0 },
      },
    });
    assert.deepEqual(applied(forged), []);
    assert.ok(
      forged.some((e) => e.type === 'replyError'),
      'the stranger is refused',
    );
    assert.equal(engine.status().term, 1);
  });

  it("a new founder's start step saves the id it took from the founding roster, and applies nothing", () => {
    const engine = new Engine(config, emptyRestoredState());
    const effects = engine.step({ type: 'start' });
    assert.deepEqual(
      effects.map((e) => e.type),
      ['saveHardState'],
    );
    assert.equal(effects[0]!.type === 'saveHardState' && effects[0].hardState.selfId, 1);
    assert.deepEqual(engine.step({ type: 'start' }), [], 'a second start has nothing left to do');
  });
});
