// The knobs of a Jepsen-style run, with the short form (CI, test/jepsen/jepsen.test.ts) and the long form
// (`make jepsen`, test/jepsen/main.ts) as named presets.
import { NEMESIS_KINDS, type NemesisKind } from './nemesis.js';

export interface JepsenOptions {
  /** seed picks the nemesis victims, the long form's kinds, and every client's operations. */
  seed: number;
  /** rounds of faults; round i is schedule[i] while the schedule lasts, then a kind drawn from NEMESIS_KINDS. */
  rounds: number;
  schedule: NemesisKind[];
  /**
   * holdMs is how long a fault lasts: a partition or pause of the leader holds it all (long enough for the others
   * to elect a leader and commit writes meanwhile: the stale-read window), other rounds draw from holdMs/2..holdMs.
   */
  holdMs: number;
  /** quietMs is the calm between rounds; warmupMs the calm before the first. */
  quietMs: number;
  warmupMs: number;
  recoverTimeoutMs: number;
  /** clients: register clients (home nodes round-robin); keys: the registers they share. */
  clients: number;
  keys: number;
  /** apiKeys runs the API-key workload beside the registers. */
  apiKeys: boolean;
  /** tickMs is the nodes' engine tick. */
  tickMs: number;
  /** stepBudget bounds the checker (past it the verdict is 'undecided'). */
  stepBudget: number;
  /** timeoutMs bounds the whole run, set-up to verdict; past it the run is killed and cleaned up. */
  timeoutMs: number;
}

export const SHORT_FORM: JepsenOptions = {
  seed: 1,
  rounds: 4,
  // The partition and the pause of the leader first: the stale-read window of issue 11 is what this test must catch.
  schedule: ['partition-leader', 'pause-leader', 'kill-leader', 'transfer-leader'],
  holdMs: 4_000,
  quietMs: 1_500,
  warmupMs: 2_000,
  recoverTimeoutMs: 20_000,
  clients: 6,
  keys: 4,
  apiKeys: true,
  // The nodes' default tick: elections after 1-2 s. A shorter one shrinks the window in which a cut-off leader
  // still leads while the majority has elected another (it steps down within ~2 election timeouts).
  tickMs: 100,
  stepBudget: 20_000_000,
  timeoutMs: 150_000,
};

export const LONG_FORM: JepsenOptions = {
  ...SHORT_FORM,
  rounds: 24,
  schedule: [...NEMESIS_KINDS],
  holdMs: 5_000,
  quietMs: 2_000,
  clients: 9,
  keys: 6,
  stepBudget: 100_000_000,
  timeoutMs: 30 * 60_000,
};

/** JepsenReport is what a run answers: the verdict, and the text that explains it. */
export interface JepsenReport {
  verdict: 'ok' | 'violation' | 'undecided';
  /** summary: counts, stats, timeline; on a violation the minimal failing operations first. */
  text: string;
  operations: number;
  /** completedGets and completedWrites: completed operations of the register workload (a run that did nothing proves nothing). */
  completedGets: number;
  completedWrites: number;
  keysRevoked: number;
  roundsRun: number;
  unrecoveredRounds: number;
  /** replayOk: every node's flight recording replayed with identical effect digests (sim/replay/). */
  replayOk: boolean;
  replaySteps: string;
  /** scenarioError: '' when the incident, as a generated scenario, passed on the lockstep world. */
  scenarioError: string;
  /** scenario: the run as a scenario file (sim/replay/to-scenario.ts). */
  scenario: string;
}
