// History records what the simulated clients saw: each operation's invocation and completion in
// virtual time, as the linearizability checker reads them (sim/linearizability). An operation is
// completed (an answer), indeterminate (timed out or its connection lost: it may have taken effect
// at any time after its call, or never), or dropped (definitely refused, so it never took effect).
//
// Each operation runs on a client of its own for its whole life ("one client, one operation at a
// time"): a client is reused once its operation completed or was dropped, and retired for good
// once an operation of it is indeterminate (Jepsen's rule: that process may still be acting).
import type { KvInput, KvOperation, KvOutput } from './linearizability/index.js';

export interface OpenOperation {
  readonly id: number;
  readonly input: KvInput;
  readonly callTimeUs: number;
  readonly clientId: string;
  settled: boolean;
}

export class History {
  private readonly done: KvOperation[] = [];
  /** open: invoked, not yet settled, in invocation order. */
  private readonly open = new Map<number, OpenOperation>();
  private readonly freeClients: string[] = [];
  private nextClient = 1;
  private nextId = 1;
  completedCount = 0;
  indeterminateCount = 0;
  droppedCount = 0;

  invoke(input: KvInput, callTimeUs: number): OpenOperation {
    const clientId = this.freeClients.pop() ?? `c${this.nextClient++}`;
    const op: OpenOperation = { id: this.nextId++, input, callTimeUs, clientId, settled: false };
    this.open.set(op.id, op);
    return op;
  }

  complete(op: OpenOperation, output: KvOutput, returnTimeUs: number): void {
    if (!this.settle(op)) return;
    this.completedCount++;
    this.done.push({
      id: op.id,
      clientId: op.clientId,
      input: op.input,
      callTime: op.callTimeUs,
      returnTime: returnTimeUs,
      output,
    });
    this.freeClients.push(op.clientId);
  }

  /** indeterminate: the client gave up without knowing (timeout, connection lost); its client retires. */
  indeterminate(op: OpenOperation): void {
    if (!this.settle(op)) return;
    this.indeterminateCount++;
    this.done.push({
      id: op.id,
      clientId: op.clientId,
      input: op.input,
      callTime: op.callTimeUs,
      returnTime: null,
      output: null,
    });
  }

  /** drop: the operation was refused before it could take effect; it is not part of the history. */
  drop(op: OpenOperation): void {
    if (!this.settle(op)) return;
    this.droppedCount++;
    this.freeClients.push(op.clientId);
  }

  get openCount(): number {
    return this.open.size;
  }

  /** operations: every settled operation, plus the open ones as indeterminate (the run ended), by id. */
  operations(): KvOperation[] {
    const all = [...this.done];
    for (const op of this.open.values()) {
      all.push({
        id: op.id,
        clientId: op.clientId,
        input: op.input,
        callTime: op.callTimeUs,
        returnTime: null,
        output: null,
      });
    }
    return all.sort((a, b) => a.id - b.id);
  }

  private settle(op: OpenOperation): boolean {
    if (op.settled) return false;
    op.settled = true;
    this.open.delete(op.id);
    return true;
  }
}
