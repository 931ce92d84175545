// Lag gauges are monotonic: within one life of a node, no shard's
// EngineStatus.lagGaugeByShard value ever goes down or disappears.
import type { SimNode } from '../node.js';
import { violate } from '../violation.js';
import type { Checker, StepRecord } from './checker.js';

export class LagGaugeChecker implements Checker {
  readonly name = 'lag-gauge-monotonic';
  private readonly lastByNode = new Map<number, Record<number, number>>();
  /** lastFrozen: the frozen record last checked per node; the engine hands out the same one until a gauge moves. */
  private readonly lastFrozen = new Map<number, Record<number, number>>();

  onStart(node: SimNode): void {
    this.lastByNode.delete(node.index);
    this.lastFrozen.delete(node.index);
  }

  afterStep(step: StepRecord): void {
    const { node, after, input } = step;
    // Gauges move on what carries a leader frontier; a drop made elsewhere persists until the
    // next such step, where it is caught against the value kept from the last check.
    if (
      input.type !== 'request' &&
      input.type !== 'streamChunk' &&
      input.type !== 'statusPolled' &&
      this.lastByNode.has(node.index)
    )
      return;
    const current = after.lagGaugeByShard;
    // A frozen record cannot have moved since it was checked (an engine that mutates its own hands out no frozen one).
    if (this.lastFrozen.get(node.index) === current) return;
    if (Object.isFrozen(current)) this.lastFrozen.set(node.index, current);
    const previous = this.lastByNode.get(node.index);
    let changed = previous === undefined;
    if (previous) {
      for (const shard in previous) {
        const was = previous[shard]!;
        const now = current[shard];
        if (now === undefined || now < was) {
          violate(
            this.name,
            `${node.name} lag gauge for shard ${shard} went from ${was} to ${now ?? 'nothing'}`,
            node.index,
          );
        }
        if (now !== was) changed = true;
      }
      for (const shard in current) if (!(shard in previous)) changed = true;
    }
    // Keep a copy only when something moved: the engine may hand out a fresh object per read (a frozen
    // record cannot move, so it is kept as it is).
    if (changed) this.lastByNode.set(node.index, Object.isFrozen(current) ? current : { ...current });
  }
}
