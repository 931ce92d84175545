// checkerNames lists every invariant a run checks, as `npm run sim -- --list-checkers` prints them:
// the per-step checkers of the suite (read from a suite, so a new checker is listed once it is in
// it), then those that judge a whole run.
import { LINEARIZABILITY } from './linearizability.js';
import { CheckerSuite } from './suite.js';

/** RUN_CHECKERS judge the whole run: convergence after healing, and the clients' history at the end. */
const RUN_CHECKERS = ['liveness', LINEARIZABILITY];

export function checkerNames(): string[] {
  const suite = new CheckerSuite({ nodes: [], nodeByMemberId: () => undefined });
  return [...suite.checkers.map((c) => c.name), ...RUN_CHECKERS];
}
