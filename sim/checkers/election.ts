// Election safety: at most one leader per term. Quorum honesty: a node that
// becomes leader holds real vote grants from a majority of the voters in its
// roster (so a learner's or a non-member's grant can never make a leader).
import { voterIds } from '../../engine/roster.js';
import type { EngineStatus } from '../../engine/types.js';
import type { VoteRequest, VoteResponse } from '../../engine/rpc.js';
import type { SimNode } from '../node.js';
import { violate } from '../violation.js';
import type { Checker, StepRecord } from './checker.js';

export class ElectionChecker implements Checker {
  readonly name = 'election-safety';
  private readonly leaderOfTerm = new Map<number, number>();
  /** grants: term -> candidate member id -> member ids that granted a real (non-pre) vote. */
  private readonly grants = new Map<number, Map<number, Set<number>>>();

  onVote(_voter: SimNode, voterStatus: EngineStatus, request: VoteRequest, response: VoteResponse): void {
    if (request.prevote || !response.granted) return;
    let byCandidate = this.grants.get(request.term);
    if (!byCandidate) this.grants.set(request.term, (byCandidate = new Map()));
    let voters = byCandidate.get(request.candidateRegion);
    if (!voters) byCandidate.set(request.candidateRegion, (voters = new Set()));
    voters.add(voterStatus.id);
  }

  afterStep(step: StepRecord): void {
    const { node, after, before } = step;
    if (after.role !== 'leader') return;
    const holder = this.leaderOfTerm.get(after.term);
    if (holder !== undefined && holder !== node.index) {
      violate(this.name, `two leaders in term ${after.term}: n${holder + 1} and ${node.name}`, node.index);
    }
    if (holder === undefined) this.leaderOfTerm.set(after.term, node.index);
    if (before?.role === 'leader' && before.term === after.term) return;
    this.checkQuorum(node, after);
  }

  private checkQuorum(node: SimNode, after: EngineStatus): void {
    const voters = voterIds(after.roster);
    const granted = this.grants.get(after.term)?.get(after.id) ?? new Set<number>();
    const counted = voters.filter((id) => id === after.id || granted.has(id));
    if (counted.length * 2 <= voters.length) {
      violate(
        'quorum',
        `${node.name} (id ${after.id}) became leader of term ${after.term} with grants from voters ` +
          `[${counted.join(',')}] of [${voters.join(',')}] (all grants: [${[...granted].join(',')}])`,
        node.index,
      );
    }
  }
}
