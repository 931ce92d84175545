// State-machine safety: no two nodes apply different entries at one seqno.
// Every applied entry is compared with the canonical history (first applier wins).
import type { Entry } from '../../engine/types.js';
import type { SimNode } from '../node.js';
import type { CanonicalLog } from './canonical-log.js';
import type { Checker } from './checker.js';

export class StateMachineSafetyChecker implements Checker {
  readonly name = 'state-machine-safety';

  constructor(private readonly canonical: CanonicalLog) {}

  onApply(node: SimNode, entries: readonly Entry[]): void {
    for (const entry of entries) this.canonical.record(node.index, node.name, entry);
  }
}
