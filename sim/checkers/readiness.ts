// Readiness honesty: when a node's latch converges (a readiness ready=true
// effect while not leader), it must have seen a real leader frontier in its
// current term (never leader_last_seq = 0), its durable, matched log must have
// reached one such frontier F, and its log must equal the leader's up to F.
// Once latched it stays ready unless removed, halted or reseeding.
import type { Input } from '../../engine/types.js';
import type { SimNode } from '../node.js';
import { violate } from '../violation.js';
import type { Checker, CheckerWorld, StepRecord } from './checker.js';

/**
 * Frontier: built seq first, so it never shares a hidden class with the engine's `{ term, seq }` positions. A forged
 * heartbeat's term (2^53 - 1, sim/foreign.ts) stored into a shared class would turn its term field into a double
 * field, and the engine's later reads of its own positions' terms would box numbers that spread into its state
 * (sim/README.md, "Whole numbers stored as doubles").
 */
interface Frontier {
  seq: number;
  term: number;
}

/**
 * FRONTIER_MEMORY_COUNT_MAX bounds the recent frontiers remembered per node. The lowest frontier of
 * each term is kept beside them whatever its age: a node may rightly converge on an early heartbeat's
 * frontier after many later ones arrived (bursts of writes make many), and forgetting it would be
 * a false alarm (seed 985101).
 */
const FRONTIER_MEMORY_COUNT_MAX = 64;

export class ReadinessChecker implements Checker {
  readonly name = 'readiness-honesty';
  private readonly frontiers = new Map<number, Frontier[]>();
  /** lowestFrontiers: per node, the lowest frontier seen in each term. */
  private readonly lowestFrontiers = new Map<number, Map<number, number>>();

  constructor(private readonly world: CheckerWorld) {}

  onStart(node: SimNode): void {
    this.frontiers.delete(node.index);
    this.lowestFrontiers.delete(node.index);
  }

  afterStep(step: StepRecord): void {
    const { node, input, after, effects } = step;
    const seen = frontierOf(input);
    if (seen !== null && seen.seq > 0) this.remember(node.index, { seq: seen.seq, term: seen.term ?? after.term });
    for (const effect of effects) {
      if (effect.type === 'readiness' && effect.ready && after.role !== 'leader') this.checkConvergence(step);
      // The latch is sticky: only removal, a halted receiver or a reseed marker unlatch it — and a filtered
      // member's refill (its filter set or removed: it dropped what it held, engine/core.ts takesFrameKind).
      if (
        effect.type === 'readiness' &&
        !effect.ready &&
        effect.reason !== 'refilling' &&
        step.before?.ready &&
        !after.removed &&
        after.halted === '' &&
        !after.reseed
      ) {
        violate(
          this.name,
          `${node.name} dropped readiness (${effect.reason}) while not removed, halted or reseeding: the latch is sticky`,
          node.index,
        );
      }
    }
  }

  private remember(nodeIndex: number, frontier: Frontier): void {
    let lowest = this.lowestFrontiers.get(nodeIndex);
    if (!lowest) this.lowestFrontiers.set(nodeIndex, (lowest = new Map()));
    const lowestSeq = lowest.get(frontier.term);
    if (lowestSeq === undefined || frontier.seq < lowestSeq) lowest.set(frontier.term, frontier.seq);
    let list = this.frontiers.get(nodeIndex);
    if (!list) this.frontiers.set(nodeIndex, (list = []));
    // Newest first: a repeated frontier (heartbeats between writes) is most often the last one kept.
    for (let i = list.length - 1; i >= 0; i--) {
      const f = list[i]!;
      if (f.seq === frontier.seq && f.term === frontier.term) return;
    }
    list.push(frontier);
    if (list.length > FRONTIER_MEMORY_COUNT_MAX) list.shift();
  }

  private checkConvergence(step: StepRecord): void {
    const { node, after } = step;
    const inTerm = (this.frontiers.get(node.index) ?? []).filter((f) => f.term === after.term);
    const lowestSeq = this.lowestFrontiers.get(node.index)?.get(after.term);
    if (lowestSeq !== undefined && !inTerm.some((f) => f.seq === lowestSeq))
      inTerm.unshift({ seq: lowestSeq, term: after.term });
    if (inTerm.length === 0) {
      violate(
        this.name,
        `${node.name} became ready in term ${after.term} without having seen a real leader frontier (leader_last_seq > 0) in that term`,
        node.index,
      );
    }
    // The frontier it may have converged on is bounded by what the engine says is durable and
    // matched, and by what the disk really holds; the disk's content up to it is checked below.
    const durableSeq = node.storage.durable.lastSeq;
    const reach = Math.min(after.matchedSeq, after.durableSeq, durableSeq);
    const reached = inTerm.filter((f) => f.seq <= reach).map((f) => f.seq);
    if (reached.length === 0) {
      violate(
        this.name,
        `${node.name} became ready with matched ${after.matchedSeq} / durable ${after.durableSeq} (disk ${durableSeq}), below every leader frontier seen in term ${after.term} ` +
          `([${inTerm.map((f) => f.seq).join(',')}])`,
        node.index,
      );
    }
    const frontier = Math.max(...reached);
    const leader = this.world.nodeByMemberId(after.leaderId);
    if (!leader || leader === node) return;
    const mine = node.storage.durable;
    const theirs = leader.storage.written;
    const from = Math.max(mine.base, theirs.base) + 1;
    const to = Math.min(frontier, theirs.lastSeq);
    for (let seq = from; seq <= to; seq++) {
      const a = mine.entryAt(seq);
      const b = theirs.entryAt(seq);
      if (!a || !b || a.term !== b.term) {
        violate(
          this.name,
          `${node.name} became ready at frontier ${frontier}, but at seq ${seq} its log has term ${a?.term ?? 'nothing'} ` +
            `and leader ${leader.name}'s has ${b?.term ?? 'nothing'}`,
          node.index,
        );
      }
    }
  }
}

/** frontierOf is the leader frontier an input shows, if any (term undefined = the node's own). */
function frontierOf(input: Input): { seq: number; term: number | undefined } | null {
  switch (input.type) {
    case 'request':
      if (input.request.method === 'Heartbeat')
        return { seq: input.request.body.leaderLastSeq, term: input.request.body.term };
      if (input.request.method === 'ShipSegment')
        return { seq: input.request.body.leaderLastSeq, term: input.request.body.term };
      return null;
    case 'streamChunk':
      return { seq: input.chunk.leaderLastSeq, term: input.chunk.term };
    case 'statusPolled':
      return { seq: input.leaderLastSeq, term: undefined };
    default:
      return null;
  }
}
