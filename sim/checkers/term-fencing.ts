// Term fencing: a node never accepts or applies a ship (unary segment or stream
// chunk) whose term is below its own; term-0 traffic counts as below term >= 1.
import type { Effect } from '../../engine/types.js';
import { violate } from '../violation.js';
import type { Checker, StepRecord } from './checker.js';

export class TermFencingChecker implements Checker {
  readonly name = 'term-fencing';

  afterStep(step: StepRecord): void {
    const { input, before, effects, node } = step;
    if (!before) return;
    let shipTerm: number;
    let what: string;
    let callId = -1;
    if (input.type === 'request' && input.request.method === 'ShipSegment') {
      shipTerm = input.request.body.term;
      what = `ShipSegment (call ${input.callId})`;
      callId = input.callId;
    } else if (input.type === 'streamChunk') {
      shipTerm = input.chunk.term;
      what = `stream chunk (request ${input.requestId})`;
    } else {
      return;
    }
    if (shipTerm >= before.term) return;
    for (const effect of effects) {
      if (wroteOrApplied(effect, before.commitSeq)) {
        violate(
          this.name,
          `${node.name} at term ${before.term} took a ${what} from term ${shipTerm}: ${effect.type}`,
          node.index,
        );
      }
      if (
        effect.type === 'reply' &&
        effect.callId === callId &&
        effect.response.method === 'ShipSegment' &&
        effect.response.body.accepted
      ) {
        violate(this.name, `${node.name} at term ${before.term} accepted a ${what} from term ${shipTerm}`, node.index);
      }
    }
  }
}

/**
 * wroteOrApplied: the step appended, or applied past the commit point it started with. Applies at or below
 * it are not the ship's doing: a restarted engine replays its committed log in its first step, whatever
 * that step's input (a stale ship replayed after a boundary crash, seed 9).
 */
function wroteOrApplied(effect: Effect, commitSeqBefore: number): boolean {
  if (effect.type === 'append') return effect.entries.length > 0;
  return effect.type === 'apply' && effect.entries.some((e) => e.seq > commitSeqBefore);
}
