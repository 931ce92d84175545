// A removed node never campaigns after it learns it was removed: once its
// status says removed, it sends no RequestVote (pre-vote included).
import { violate } from '../violation.js';
import type { Checker, StepRecord } from './checker.js';

export class RemovedChecker implements Checker {
  readonly name = 'removed-never-campaigns';

  afterStep(step: StepRecord): void {
    const { before, effects, node } = step;
    if (!before?.removed) return;
    for (const effect of effects) {
      if (effect.type === 'send' && effect.request.method === 'RequestVote') {
        violate(
          this.name,
          `${node.name} knows it was removed yet sent RequestVote (term ${effect.request.body.term}, prevote ${effect.request.body.prevote})`,
          node.index,
        );
      }
    }
  }
}
