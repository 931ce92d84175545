// A real incident turned into a permanent test (issue 22): three real nodes, each in its own network
// namespace, record every engine step while the nemesis cuts the leader off (iptables DROP both ways) and
// the others elect a new one. The recordings replay step for step, and `--to-scenario`'s scenario (the
// partition, the leader change, the old leader's step-down while cut off) passes on the lockstep world and
// fails on an engine whose leader keeps leading without a quorum: the rule the incident exercised.
// It needs root (namespaces, iptables) and skips, saying why, without them. See test/jepsen/README.md.
import assert from 'node:assert/strict';
import { runScenario } from '../../sim/scenario.js';
import { neverStepsDown } from '../sim/buggy-engines-power.js';
import { launchJepsen } from './launch.js';
import { SHORT_FORM, type JepsenOptions } from './options.js';

/** INCIDENT_FORM: one round, a partition of the leader held long enough for an election and the step-down. */
const INCIDENT_FORM: JepsenOptions = {
  ...SHORT_FORM,
  seed: 22,
  rounds: 1,
  schedule: ['partition-leader'],
  holdMs: 6_000,
  clients: 3,
  keys: 2,
  apiKeys: false,
  timeoutMs: 120_000,
};

describe('jepsen: a recorded leader change under a partition becomes a scenario that catches the mutated rule', function () {
  this.timeout(INCIDENT_FORM.timeoutMs + 30_000);

  it('records, replays, and the scenario passes on the real engine and fails on neverStepsDown', async function () {
    const output: string[] = [];
    const outcome = await launchJepsen(INCIDENT_FORM, (line) => output.push(line));
    if ('skipped' in outcome) {
      console.log(`      skipped: ${outcome.skipped}`);
      this.skip();
    }
    const { report } = outcome;
    const context = `\n${output.join('\n')}\n\n${report.text}`;
    assert.equal(report.roundsRun, 1, context);
    assert.ok(report.replayOk, `a flight recording did not replay identically${context}`);
    console.log(`      flight recordings: ${report.replaySteps}`);
    console.log(report.scenario.replace(/^/gm, '      | '));
    const isolated = /^isolate (\S+)/m.exec(report.scenario)?.[1];
    assert.ok(isolated !== undefined, `the partition is not in the scenario${context}`);
    assert.match(report.scenario, new RegExp(`^until not leader ${isolated}\\b`, 'm'), 'the leader change is');
    assert.match(
      report.scenario,
      new RegExp(`^until not role ${isolated} leader\\b`, 'm'),
      `the cut-off leader's step-down is in the scenario${context}`,
    );
    // Passes on the lockstep world with this build's engine (every simulator checker watching)...
    assert.equal(report.scenarioError, '', `the generated scenario failed${context}`);
    runScenario(report.scenario, 'recorded-incident');
    // ...and fails with the rule mutated: a leader cut off from its quorum never steps down.
    let mutantError = '';
    try {
      runScenario(report.scenario, 'recorded-incident', { engine: neverStepsDown });
    } catch (error) {
      mutantError = (error as Error).message;
    }
    assert.notEqual(mutantError, '', 'the scenario passes on an engine whose leader never steps down');
    console.log(`      on neverStepsDown: ${mutantError.split('\n')[0]}`);
  });
});
