// After a Jepsen-style run: every node's flight recording (on by default, <data-dir>/recording/) replayed on
// this build's engine, and the incident turned into a scenario that the lockstep world runs (sim/replay/).
// Each nemesis fault (a partition, kill -9, SIGSTOP, a transfer) must replay with identical effect digests.
import { join } from 'node:path';
import { replayPaths } from '../../sim/replay/cli.js';
import { toScenario } from '../../sim/replay/to-scenario.js';
import { runScenario } from '../../sim/scenario.js';

export interface RecordingsReport {
  /** ok: every step of every member's runs replayed with the recorded digest, and the checkers passed. */
  ok: boolean;
  /** lines: the replay's report, one line per run (step counts), then the checkers. */
  lines: string[];
  scenario: string;
  /** scenarioError: '' when the generated scenario passed on the lockstep world. */
  scenarioError: string;
}

export function replayRecordings(dataRoot: string, names: readonly string[]): RecordingsReport {
  const lines: string[] = [];
  const outcome = replayPaths(
    names.map((name) => join(dataRoot, name, 'recording')),
    (line) => lines.push(line),
  );
  const scenario = toScenario(outcome.runs, `${dataRoot}/*/recording`);
  let scenarioError = '';
  try {
    runScenario(scenario, 'recorded-jepsen');
  } catch (error) {
    scenarioError = (error as Error).message;
  }
  return { ok: outcome.ok, lines, scenario, scenarioError };
}
