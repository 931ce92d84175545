// Dead-configuration detection for the search. Per value: how many pending (not yet linearized)
// operations need the state to hold it (gets, swapped cas) and how many may still write it. A value
// with readers left and no writers left is "stranded": unless it is the state right now, it can never
// be again (only writes change the state), so its readers can never take effect and the branch has no
// solution. Counters move by one per linearized (or undone) operation: O(1) per search step.
import type { EncodedOp } from './encode.js';
import { requiredValue, writtenValue } from './kv-model.js';

export class ValueWatch {
  private readonly readersLeft: Int32Array;
  private readonly writersLeft: Int32Array;
  private readonly reads: Int32Array;
  private readonly writes: Int32Array;
  /** values with readers left and no writers left */
  private stranded = 0;

  constructor(ops: readonly EncodedOp[], initialState: number) {
    let valueCount = initialState + 1;
    for (const op of ops) valueCount = Math.max(valueCount, op.a + 1, op.b + 1);
    this.readersLeft = new Int32Array(valueCount);
    this.writersLeft = new Int32Array(valueCount);
    this.reads = Int32Array.from(ops, requiredValue);
    this.writes = Int32Array.from(ops, writtenValue);
    for (let i = 0; i < ops.length; i++) {
      if (this.reads[i]! >= 0) this.readersLeft[this.reads[i]!]!++;
      if (this.writes[i]! >= 0) this.writersLeft[this.writes[i]!]!++;
    }
    for (let v = 0; v < valueCount; v++) if (this.isStranded(v)) this.stranded++;
  }

  private isStranded(v: number): boolean {
    return this.readersLeft[v]! > 0 && this.writersLeft[v] === 0;
  }

  /** Operation `op` was linearized. */
  take(op: number): void {
    this.move(this.writes[op]!, this.writersLeft, -1);
    this.move(this.reads[op]!, this.readersLeft, -1);
  }

  /** Linearizing `op` was undone. */
  untake(op: number): void {
    this.move(this.reads[op]!, this.readersLeft, 1);
    this.move(this.writes[op]!, this.writersLeft, 1);
  }

  /** true when some pending read can never take effect from `state`. */
  deadIn(state: number): boolean {
    return this.stranded > (this.isStranded(state) ? 1 : 0);
  }

  private move(v: number, counts: Int32Array, delta: number): void {
    if (v < 0) return;
    const before = this.isStranded(v);
    counts[v]! += delta;
    const after = this.isStranded(v);
    if (before !== after) this.stranded += after ? 1 : -1;
  }
}
