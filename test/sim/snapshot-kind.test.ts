// Snapshot kind (sim/checkers/snapshot-kind.ts, part of snapshot-integrity): a member the committed roster does not
// filter never installs a cut, and a filtered member never a full snapshot. A wrong leader serving one kind for the
// other, to a puller that skips the driver's check (buggy-engines-snapshots.ts), is caught in `--filtered 4` seeds
// by the checker, before the engine's own assert would stop the run.
import assert from 'node:assert/strict';
import type { EngineFactory } from '../../sim/node.js';
import { optionsFor } from '../../sim/options.js';
import { runSim } from '../../sim/run.js';
import { servesCutToFull, servesFullToFiltered } from './buggy-engines-snapshots.js';

/** KIND_SEED_COUNT_MAX: each wrong engine must be caught within `--filtered 4` seeds 1..this (both are at seed 3). */
const KIND_SEED_COUNT_MAX = 8;

function firstCaught(what: string, factory: EngineFactory, rule: RegExp): void {
  for (let seed = 1; seed <= KIND_SEED_COUNT_MAX; seed++) {
    const result = runSim(optionsFor(seed, { filtered: 4 }), { engineFactory: factory });
    if (result.failure?.invariant !== 'snapshot-integrity') continue;
    assert.match(result.failure.message, rule, `seed ${seed}`);
    console.log(`      ${what}: caught at --filtered 4 seed ${seed}: ${result.failure.message}`);
    return;
  }
  assert.fail(`${what} not caught by snapshot-integrity in --filtered 4 seeds 1..${KIND_SEED_COUNT_MAX}`);
}

describe('sim: snapshot-integrity judges the kind of an installed snapshot', function () {
  this.timeout(600_000);

  it('a full snapshot served to a filtered member and installed is caught', () => {
    firstCaught('servesFullToFiltered', servesFullToFiltered, /a filtered member never installs a full snapshot/);
  });

  it("a cut of another member's filter served to a full member and installed is caught", () => {
    firstCaught('servesCutToFull', servesCutToFull, /a full member never installs a cut/);
  });
});
