import assert from 'node:assert/strict';
import { optionsFor } from '../../sim/options.js';
import { runSim } from '../../sim/run.js';
import { runScenarioFile } from '../../sim/scenario.js';

describe('sim/coverage: the rare histories of issue 17', () => {
  it("counts figure 8's tail: the scripted figure 8 cuts a follower's term-3 tail for the term-4 leader's term-2 entry", () => {
    const result = runScenarioFile('scenarios/figure8-old-term-never-counted.txt');
    assert.ok(result.cluster.cluster.coverage.counts['figure8-tail'] >= 1);
  });

  it('counts vote answers that reach a candidate after it moved to a newer term, in default seeds', () => {
    let count = 0;
    for (let seed = 1; seed <= 3 && count === 0; seed++)
      count += runSim(optionsFor(seed, { 'safety-s': 20 })).coverage['vote-answer-new-term'];
    assert.ok(count > 0);
  });
});
