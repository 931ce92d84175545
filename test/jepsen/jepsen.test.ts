// The Jepsen-style real-cluster test, short form (the long form is `make jepsen`): three real nodes, each in
// its own network namespace, real clients through svc.store.v1 and the developer HTTP API, with a partition
// of the leader, kill -9, SIGSTOP and a leadership transfer; the recorded history must be linearizable.
// It needs root (namespaces, iptables) and skips, saying why, without them. See test/jepsen/README.md.
import assert from 'node:assert/strict';
import { launchJepsen } from './launch.js';
import { SHORT_FORM } from './options.js';

describe('jepsen: a real cluster under partitions, kills, pauses and transfers', function () {
  this.timeout(SHORT_FORM.timeoutMs + 30_000);

  it('gives a linearizable history of register and API-key operations', async function () {
    const output: string[] = [];
    const outcome = await launchJepsen(SHORT_FORM, (line) => output.push(line));
    if ('skipped' in outcome) {
      console.log(`      skipped: ${outcome.skipped}`);
      this.skip();
    }
    const { report } = outcome;
    const context = `\n${output.join('\n')}\n\n${report.text}\n(rerun with: npx tsx test/jepsen/main.ts --short --seed ${SHORT_FORM.seed})`;
    assert.equal(report.verdict, 'ok', `the history is not linearizable:${context}`);
    // A run in which nothing happened proves nothing: the workload must have read and written, and every round run.
    assert.equal(report.roundsRun, SHORT_FORM.schedule.length, context);
    assert.ok(
      report.completedGets >= 50 && report.completedWrites >= 50,
      `too little work done: ${report.completedGets} gets, ${report.completedWrites} writes${context}`,
    );
    assert.ok(report.keysRevoked >= 1, `no API key was revoked${context}`);
    // Every node recorded every engine step: each replays with identical digests, through the kill -9, the
    // partition and the pause, and the incident as a generated scenario passes on the lockstep world.
    assert.ok(report.replayOk, `a flight recording did not replay identically${context}`);
    assert.equal(report.scenarioError, '', `the generated scenario failed${context}`);
    console.log(`      flight recordings: ${report.replaySteps}`);
    console.log(report.scenario.replace(/^/gm, '      | '));
    // The partition of the leader is in it (its calls to every peer failed), and so is the kill -9.
    assert.match(report.scenario, /^isolate /m, `the partition is not in the scenario${context}`);
    assert.match(report.scenario, /^crash /m, `the kill -9 is not in the scenario${context}`);
    console.log(
      `      ${report.text.split('\n')[0]}; ${report.operations} operations (${report.completedGets} register reads, ${report.completedWrites} register writes completed), ${report.keysRevoked} API keys revoked, ${report.roundsRun} nemesis rounds`,
    );
  });
});
