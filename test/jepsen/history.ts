// The run's client history, as the linearizability checker reads it (sim/linearizability): every operation's
// invocation and completion in µs since the run began, one clock for every client (they share this process).
// An operation that timed out or lost its connection stays open (indeterminate): it may have taken effect at
// any time after its call, or never. One that certainly never took effect (refused before anything was
// proposed) is dropped. A client whose operation went indeterminate is retired and continues under a new id,
// as Jepsen does, since one client id has one operation open at a time.
import { performance } from 'node:perf_hooks';
import type { KvInput, KvOperation, KvOutput } from '../../sim/linearizability/index.js';

export class History {
  private nextId = 1;
  private readonly operations: KvOperation[] = [];
  private readonly dropped = new Set<number>();

  constructor(private readonly startedAtMs = performance.now()) {}

  /** nowUs is the run's clock: µs since the run began. */
  nowUs(): number {
    return Math.round((performance.now() - this.startedAtMs) * 1000);
  }

  /** nowMs is the same clock in ms (the nemesis timeline's unit). */
  nowMs(): number {
    return Math.round(performance.now() - this.startedAtMs);
  }

  invoke(clientId: string, input: KvInput): KvOperation {
    const op: KvOperation = {
      id: this.nextId++,
      clientId,
      input,
      callTime: this.nowUs(),
      returnTime: null,
      output: null,
    };
    this.operations.push(op);
    return op;
  }

  complete(op: KvOperation, output: KvOutput): void {
    op.returnTime = this.nowUs();
    op.output = output;
  }

  /** drop takes out an operation that certainly never took effect. */
  drop(op: KvOperation): void {
    this.dropped.add(op.id);
  }

  /** operations is the history to check: every operation but the dropped ones. */
  get ops(): KvOperation[] {
    return this.operations.filter((op) => !this.dropped.has(op.id));
  }
}

/** ClientIdentity is a client's id in the history: `c3`, then `c3.1`, `c3.2`… after each indeterminate operation. */
export class ClientIdentity {
  private generation = 0;

  constructor(private readonly base: string) {}

  get id(): string {
    return this.generation === 0 ? this.base : `${this.base}.${this.generation}`;
  }

  retire(): void {
    this.generation++;
  }
}

/** HistoryTally counts a history's operations by kind and outcome, for the run's summary. */
export function tallyHistory(ops: readonly KvOperation[]): Record<string, number> {
  const tally: Record<string, number> = {};
  for (const op of ops) {
    const outcome =
      op.output === null
        ? 'indeterminate'
        : op.output.kind === 'cas'
          ? op.output.swapped
            ? 'swapped'
            : 'not-swapped'
          : op.output.kind === 'get'
            ? op.output.value === null
              ? 'absent'
              : 'value'
            : 'ok';
    const name = `${op.input.key.startsWith('apikey/') ? 'apikey ' : ''}${op.input.kind} ${outcome}`;
    tally[name] = (tally[name] ?? 0) + 1;
  }
  return tally;
}
