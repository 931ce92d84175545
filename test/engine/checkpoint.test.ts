// Engine checkpoints (engine/checkpoint.ts, engine/engine-state.ts): an engine rebuilt from a state
// exported at any step takes the same decisions as the original for every input after it. Checked on
// whole simulated runs: every engine of a seed is exported at a step drawn from the seed, the state goes
// through the recording's text encoding (as the flight recorder writes it), a twin is built from it, and
// from then on both are fed every input and must give the same effects digest at every step.
import assert from 'node:assert/strict';
import { Engine } from '../../engine/engine.js';
import { Prng } from '../../engine/prng.js';
import { emptyRestoredState } from '../../engine/restored.js';
import type { EngineConfig, Input } from '../../engine/types.js';
import { decodeLine, encodeLine, LENGTHS_ONLY } from '../../recording/codec.js';
import type { PayloadMode } from '../../recording/format.js';
import { effectsDigest } from '../../recording/digest.js';
import { optionsFor } from '../../sim/options.js';
import type { EngineFactory } from '../../sim/node.js';
import { runSim } from '../../sim/run.js';
import { founderConfig } from './founders.js';

const KEY = new Uint8Array(32);
const SEEDS = Number(process.env.SVC_CHECKPOINT_SEEDS ?? 8);

/**
 * roundTrip is the state as a recording line holds it and a replay reads it back: with full payloads, or as
 * the recorder writes a checkpoint by default (values by their length alone, zeros when read back).
 */
function roundTrip(engine: Engine, mode: PayloadMode): unknown {
  return decodeLine(encodeLine(engine.exportState(), mode, mode === 'full' ? KEY : LENGTHS_ONLY));
}

interface Tally {
  twins: number;
  comparedSteps: number;
  divergences: string[];
}

/** twinning wraps each engine; one step drawn per engine, it builds the twin and compares from then on. */
function twinning(seed: number, tally: Tally): EngineFactory {
  const prng = new Prng(seed * 7919 + 17);
  // Odd seeds: full payloads, and the twin must export the very same state; even seeds: values as lengths
  // (what a replay from a recorded checkpoint has), compared with the hashed-mode digest the recording holds.
  const mode: PayloadMode = seed % 2 === 1 ? 'full' : 'hashed';
  let made = 0;
  return (config: EngineConfig, restored) => {
    const engine = new Engine(config, restored);
    const at = prng.intBetween(1, 400);
    const which = made++;
    let steps = 0;
    let twin: Engine | null = null;
    const step = (input: Input): ReturnType<Engine['step']> => {
      const effects = engine.step(input);
      if (twin) {
        const mine = effectsDigest(effects, mode);
        const theirs = effectsDigest(twin.step(input), mode);
        tally.comparedSteps++;
        if (mine !== theirs && tally.divergences.length < 5)
          tally.divergences.push(
            `seed ${seed} engine ${which} step ${steps + 1} (${input.type}) after a checkpoint at ${at}`,
          );
      }
      if (++steps === at) {
        twin = Engine.fromState(config, roundTrip(engine, mode) as ReturnType<Engine['exportState']>);
        tally.twins++;
        // The import is complete: the twin exports the very same state.
        if (mode === 'full')
          assert.equal(encodeLine(twin.exportState(), 'full', KEY), encodeLine(engine.exportState(), 'full', KEY));
      }
      return effects;
    };
    return { step, status: () => engine.status(), entries: () => engine.entries(), snapshot: () => engine.snapshot() };
  };
}

describe('engine checkpoint', () => {
  it(`an engine rebuilt from a checkpoint at a random step gives the same effects for every later input (${SEEDS} sim seeds)`, function () {
    const tally: Tally = { twins: 0, comparedSteps: 0, divergences: [] };
    for (let seed = 1; seed <= SEEDS; seed++) {
      const result = runSim(optionsFor(seed), { engineFactory: twinning(seed, tally) });
      assert.ok(result.ok, `seed ${seed}: ${result.failure?.message ?? ''}`);
    }
    process.stdout.write(
      `      seeds 1..${SEEDS}: ${tally.twins} engines rebuilt from a checkpoint, ${tally.comparedSteps} later steps compared\n`,
    );
    assert.deepEqual(tally.divergences, []);
    assert.ok(tally.twins >= SEEDS * 2 && tally.comparedSteps > 10_000, 'the twins ran');
  });

  it('also with filtered members (community overlays: the filters, filtered data and the log generation)', function () {
    const tally: Tally = { twins: 0, comparedSteps: 0, divergences: [] };
    for (const seed of [22, 54]) {
      const result = runSim({ ...optionsFor(seed), filteredCount: 4 }, { engineFactory: twinning(seed, tally) });
      assert.ok(result.ok, `seed ${seed} --filtered 4: ${result.failure?.message ?? ''}`);
    }
    assert.deepEqual(tally.divergences, []);
    assert.ok(tally.twins >= 4 && tally.comparedSteps > 1_000, 'the twins ran');
  });

  it('an export does not change the engine: the same inputs give the same effects with and without it', () => {
    const config = founderConfig('solo', ['solo']);
    const a = new Engine(config, emptyRestoredState());
    const b = new Engine(config, emptyRestoredState());
    const inputs: Input[] = [{ type: 'start' }, ...Array.from({ length: 40 }, (): Input => ({ type: 'tick' }))];
    for (const input of inputs) {
      a.exportState();
      assert.equal(effectsDigest(a.step(input), 'full'), effectsDigest(b.step(input), 'full'));
    }
    assert.equal(a.status().role, 'leader');
  });

  it('refuses a state of another version, and a state naming a class it does not know', () => {
    const config = founderConfig('solo', ['solo']);
    const state = new Engine(config, emptyRestoredState()).exportState();
    assert.throws(() => Engine.fromState(config, { ...state, v: 99 }), /engine state version 99/);
    const tree = JSON.parse(JSON.stringify(state.tree).replace('"$class":"Prng"', '"$class":"Nope"')) as unknown;
    assert.throws(() => Engine.fromState(config, { ...state, tree }), /unknown class Nope/);
  });
});
