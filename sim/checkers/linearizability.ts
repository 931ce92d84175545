// Linearizability: at the end of a run, the clients' recorded history (sim/history.ts: puts,
// compare-and-sets and linearizable reads, with indeterminate ones) must be linearizable per key
// (sim/linearizability). A violation fails the seed; 'undecided' (the deterministic step budget ran
// out) is reported but is not a failure.
import { checkKvHistory, type CheckResult, type KvOperation } from '../linearizability/index.js';
import { InvariantViolation } from '../violation.js';

export const LINEARIZABILITY = 'linearizability';

export interface LinearizabilityReport {
  verdict: CheckResult['verdict'];
  operationCount: number;
  steps: number;
  /** detail: for 'undecided' the checker's explanation, else ''. */
  detail: string;
}

/** checkLinearizability throws an InvariantViolation for a non-linearizable history. */
export function checkLinearizability(history: readonly KvOperation[]): LinearizabilityReport {
  const result = checkKvHistory(history);
  if (result.verdict === 'violation') {
    throw new InvariantViolation(LINEARIZABILITY, `key ${result.key} is not linearizable: ${result.explanation}`);
  }
  return {
    verdict: result.verdict,
    operationCount: history.length,
    steps: result.steps,
    detail: result.verdict === 'undecided' ? result.explanation : '',
  };
}
