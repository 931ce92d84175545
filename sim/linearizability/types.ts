// The public shapes of the linearizability checker (the contract other code is written against:
// /work/wt/LINCHECK-API.md). Histories come from the simulator and from real clusters, so every
// field is validated before use (validate.ts).

/** A key-value register operation as a client issued it. Values are opaque strings; null = absent key. */
export type KvInput =
  | { kind: 'put'; key: string; value: string }
  | { kind: 'get'; key: string }
  | { kind: 'cas'; key: string; expected: string | null; value: string };

export type KvOutput =
  | { kind: 'put' } // acknowledged
  | { kind: 'get'; value: string | null }
  | { kind: 'cas'; swapped: boolean };

/**
 * One operation of a history. Times are in any monotonic unit (virtual µs in the simulator, ns/µs in
 * real tests); only their order matters.
 * An indeterminate operation (timed out, connection lost) has `returnTime: null` and `output: null`:
 * it may have taken effect at any point after `callTime`, or never. An indeterminate `get` carries no
 * information and is dropped.
 */
export interface KvOperation {
  id: number; // unique within the history
  clientId: string; // one client issues one operation at a time
  input: KvInput;
  callTime: number;
  returnTime: number | null;
  output: KvOutput | null;
}

export interface CheckOptions {
  /** Deterministic search bound (states visited, summed over keys); past it the verdict is 'undecided'. */
  stepBudget?: number;
  /** The value every key holds before the history starts; default null (absent). */
  initialValue?: string | null;
  /** Bound on the work spent minimising a violation (search steps plus operations per candidate). */
  minimiseStepBudget?: number;
  /** Bound on one key's memo table, in 32-bit words; past it the verdict is 'undecided'. */
  memoTableWordsMax?: number;
}

export type CheckResult =
  | { verdict: 'ok'; keysChecked: number; steps: number }
  | {
      verdict: 'violation';
      key: string;
      steps: number;
      /** a small subset of that key's operations that is itself not linearizable (minimised) */
      minimalOperations: KvOperation[];
      /** human-readable: what failed, then the operations one a line with their times */
      explanation: string;
      /** work spent minimising (not counted in `steps`) */
      minimiseSteps?: number;
      /** true when no single operation of `minimalOperations` could be dropped keeping the violation */
      minimal?: boolean;
    }
  | { verdict: 'undecided'; key: string; steps: number; explanation: string };
