// CoverageObserver counts the rare situations checkers can only judge when the faults produce them
// (sim/coverage.ts): membership records cut by truncation, learners granting votes, leaders cut off
// from a quorum by the network for longer than the step-down bound. Other situations are counted
// where they happen (late answers and replays in the cluster, boundary crashes, checkers).
import { voterIds } from '../engine/roster.js';
import type { VoteRequest, VoteResponse } from '../engine/rpc.js';
import { EntryKind, MemberRole, type Effect, type EngineStatus, type Entry } from '../engine/types.js';
import type { Checker, StepRecord } from './checkers/checker.js';
import { LEADER_SILENCE_ELECTION_TIMEOUTS } from './checkers/leader-step-down.js';
import type { Coverage } from './coverage.js';
import { SIM_LIMITS, msToUs } from './limits.js';
import type { SimNode } from './node.js';

export interface CoverageWorld {
  readonly coverage: Coverage;
  readonly tickMs: number;
  readonly limits: { electionTimeoutTicks: number };
  nodeByMemberId(id: number): SimNode | undefined;
  /** cutOff: messages from `from` to `to` cannot get through now (a partition, or a node not up). */
  cutOff(from: SimNode, to: SimNode): boolean;
}

interface CutSpell {
  startUs: number;
  voterIds: readonly number[];
  counted: boolean;
}

export class CoverageObserver implements Checker {
  readonly name = 'coverage';
  private readonly kind4SeqsByNode = new Map<number, number[]>();
  private readonly spells = new Map<number, CutSpell>();

  constructor(private readonly world: CoverageWorld) {}

  onStart(node: SimNode): void {
    this.kind4SeqsByNode.set(
      node.index,
      node.storage.written.entries.filter((e) => e.kind === EntryKind.Membership).map((e) => e.seq),
    );
  }

  onCrash(node: SimNode): void {
    this.spells.delete(node.index);
  }

  onAppend(node: SimNode, fromSeq: number, entries: readonly Entry[]): void {
    let seqs = this.kind4SeqsByNode.get(node.index);
    if (!seqs) this.kind4SeqsByNode.set(node.index, (seqs = []));
    while (seqs.length > 0 && seqs[seqs.length - 1]! >= fromSeq) {
      seqs.pop();
      this.world.coverage.add('kind4-truncated');
    }
    for (const e of entries) if (e.kind === EntryKind.Membership) seqs.push(e.seq);
  }

  /**
   * beforeEffect counts figure 8's tail: an append about to cut, at the first seq where the log and the
   * leader's entries differ, a suffix whose newest entry is of a higher term than the leader's entry
   * there (figure 8 (e): S1 holds [1, 2, 4], S5 of term 5 sends index 2 of term 3 and S1's term-4 tail
   * goes). A log's terms never go down, so its last entry's term is the newest of the suffix.
   */
  readonly beforeEffectTypes: readonly Effect['type'][] = ['append'];

  beforeEffect(node: SimNode, effect: Effect): void {
    if (effect.type !== 'append') return;
    const log = node.storage.written;
    if (effect.fromSeq > log.lastSeq) return;
    if (effect.entries.length === 0) return this.countCutTail(node, effect.fromSeq);
    for (const e of effect.entries) {
      if (e.seq > log.lastSeq) return;
      const held = log.termAt(e.seq);
      if (held === undefined || held === e.term) continue;
      if ((log.termAt(log.lastSeq) ?? 0) > e.term) this.world.coverage.add('figure8-tail');
      return;
    }
  }

  /**
   * countCutTail: a truncation with nothing appended (a heartbeat's divergence rule cuts a tail that was never in
   * the leader's log, engine/core.ts divergentFrom) is figure 8's tail too when the leader it follows (its status
   * is the step's) holds an entry of a lower term at the cut seq than the newest of the cut tail.
   */
  private countCutTail(node: SimNode, fromSeq: number): void {
    const log = node.storage.written;
    const leaderId = node.status?.leaderId ?? 0;
    const leader = leaderId === 0 ? undefined : this.world.nodeByMemberId(leaderId);
    const leaderTerm = leader?.storage.written.termAt(fromSeq);
    if (leaderTerm === undefined || leaderTerm === log.termAt(fromSeq)) return;
    if ((log.termAt(log.lastSeq) ?? 0) > leaderTerm) this.world.coverage.add('figure8-tail');
  }

  onVote(_voter: SimNode, voterStatus: EngineStatus, _request: VoteRequest, response: VoteResponse): void {
    if (
      response.granted &&
      voterStatus.roster.members.find((m) => m.id === voterStatus.id)?.role === MemberRole.Learner
    ) {
      this.world.coverage.add('learner-vote-granted');
    }
  }

  afterStep(step: StepRecord): void {
    if (step.input.type !== 'tick') return;
    const { node, after } = step;
    const spell = this.spells.get(node.index);
    if (!spell) {
      if (after.role !== 'leader') return;
      const voters = voterIds(after.roster);
      if (this.cut(node, voters))
        this.spells.set(node.index, { startUs: step.nowUs, voterIds: voters, counted: false });
      return;
    }
    if (!this.cut(node, spell.voterIds)) {
      this.spells.delete(node.index);
      return;
    }
    // The bound in network terms (checkers/leader-step-down.ts): the call deadline, then the check-quorum windows.
    const electionUs = msToUs(this.world.limits.electionTimeoutTicks * this.world.tickMs);
    const boundUs = (SIM_LIMITS.callDeadlineElectionTimeouts + LEADER_SILENCE_ELECTION_TIMEOUTS) * electionUs;
    if (!spell.counted && step.nowUs - spell.startUs >= boundUs) {
      spell.counted = true;
      this.world.coverage.add('leader-isolated-past-bound');
    }
  }

  /** cut: `leader` cannot exchange messages with a quorum of `voters` (itself counts as reachable). */
  private cut(leader: SimNode, voters: readonly number[]): boolean {
    let reachable = 0;
    for (const id of voters) {
      const other = this.world.nodeByMemberId(id);
      if (!other) continue;
      if (other === leader || (!this.world.cutOff(leader, other) && !this.world.cutOff(other, leader))) reachable++;
    }
    return reachable * 2 <= voters.length;
  }
}
