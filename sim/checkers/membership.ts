// Membership safety: a leader's log holds at most one kind-4 record above the
// cluster's commit point; learners never campaign (they may grant votes: a
// candidate's roster decides whether a grant counts, see checkers/election.ts); kind-4
// records are appended by a leader only while every voter has capability bit 0,
// and a member never ships one to a voter that lacks it. (A learner without the bit
// may be shipped one: it halts, harming nobody, spec; so may a voter whose first kind-4
// record is the one removing it — the gate leaves out the voter a change removes while
// its leader never heard its bits, engine/membership.ts: it halts, and it was leaving
// the voter set anyway; a script's client call is no member's doing.)
import { CAPABILITY_KIND4, EntryKind, MemberRole, type EngineStatus, type Entry } from '../../engine/types.js';
import { decodeRoster, voterIds } from '../../engine/roster.js';
import { decodeSegmentFrame } from '../../engine/segment-frame.js';
import type { ShipSegmentRequest } from '../../engine/rpc.js';
import type { SimNode } from '../node.js';
import { violate } from '../violation.js';
import type { Checker, CheckerWorld, StepRecord } from './checker.js';

export class MembershipChecker implements Checker {
  readonly name = 'membership-safety';
  /** kind4SeqsByNode: ascending seqs of kind-4 entries in each node's written log. */
  private readonly kind4SeqsByNode = new Map<number, number[]>();
  /** clusterCommitSeq is the highest commit seqno any node has reported. */
  private clusterCommitSeq = 0;

  constructor(private readonly world: CheckerWorld) {}

  onStart(node: SimNode): void {
    const seqs = node.storage.written.entries.filter((e) => e.kind === EntryKind.Membership).map((e) => e.seq);
    this.kind4SeqsByNode.set(node.index, seqs);
  }

  onAppend(node: SimNode, fromSeq: number, entries: readonly Entry[]): void {
    let seqs = this.kind4SeqsByNode.get(node.index);
    if (!seqs) this.kind4SeqsByNode.set(node.index, (seqs = []));
    while (seqs.length > 0 && seqs[seqs.length - 1]! >= fromSeq) seqs.pop();
    for (const e of entries) if (e.kind === EntryKind.Membership) seqs.push(e.seq);
  }

  afterStep(step: StepRecord): void {
    const { node, input, effects, before, after } = step;
    if (
      (node.id.compat.capabilities & CAPABILITY_KIND4) === 0 &&
      !(before && roleOf(before, before.id) === MemberRole.Learner) &&
      !(input.type === 'request' && this.world.clientCall?.(input.callId))
    ) {
      this.checkNoKind4Delivered(node, input);
    }
    for (const effect of effects) {
      if (
        effect.type === 'send' &&
        effect.request.method === 'RequestVote' &&
        before &&
        roleOf(before, before.id) === MemberRole.Learner &&
        roleOf(after, after.id) === MemberRole.Learner
      ) {
        violate(
          this.name,
          `learner ${node.name} sent RequestVote (term ${effect.request.body.term}, prevote ${effect.request.body.prevote})`,
          node.index,
        );
      }
      if (
        effect.type === 'append' &&
        after.role === 'leader' &&
        effect.entries.some((e) => e.kind === EntryKind.Membership)
      ) {
        this.checkGate(node, after);
      }
    }
    if (after.commitSeq > this.clusterCommitSeq) this.clusterCommitSeq = after.commitSeq;
    if (after.role === 'leader') {
      // "Uncommitted" is judged by the cluster's commit point, not the leader's own view: a
      // freshly elected leader may not know yet that older records were committed.
      const seqs = this.kind4SeqsByNode.get(node.index) ?? [];
      let uncommitted = 0;
      for (let i = seqs.length - 1; i >= 0 && seqs[i]! > this.clusterCommitSeq; i--) uncommitted++;
      if (uncommitted > 1) {
        violate(
          this.name,
          `leader ${node.name} holds ${uncommitted} uncommitted kind-4 records (cluster commit ${this.clusterCommitSeq}, ` +
            `kind-4 at [${seqs.slice(-uncommitted).join(',')}])`,
          node.index,
        );
      }
    }
  }

  private checkGate(node: SimNode, after: EngineStatus): void {
    for (const id of voterIds(after.roster)) {
      const member = this.world.nodeByMemberId(id);
      if (member && (member.id.compat.capabilities & CAPABILITY_KIND4) === 0) {
        violate(
          this.name,
          `leader ${node.name} appended a kind-4 record while voter ${member.name} lacks capability bit 0`,
          node.index,
        );
      }
    }
  }

  private checkNoKind4Delivered(node: SimNode, input: StepRecord['input']): void {
    let segment: ShipSegmentRequest | null = null;
    if (input.type === 'request' && input.request.method === 'ShipSegment') segment = input.request.body;
    if (input.type === 'streamChunk') segment = input.chunk;
    if (!segment || segment.payload.length === 0) return;
    const decoded = decodeSegmentFrame(segment.payload);
    const first = decoded.ok ? decoded.frame.entries.find((e) => e.kind === EntryKind.Membership) : undefined;
    if (first !== undefined && !removes(first, node.memberId)) {
      violate(this.name, `a kind-4 record reached ${node.name}, which lacks capability bit 0`, node.index);
    }
  }
}

/** removes: the kind-4 record's roster marks member `id` removed (its own removal: it halts, leaving anyway). */
function removes(entry: Entry, id: number): boolean {
  const roster = decodeRoster(entry.data);
  return id !== 0 && roster !== null && roster.members.some((m) => m.id === id && m.role === MemberRole.Removed);
}

function roleOf(status: EngineStatus, id: number): number | undefined {
  return status.roster.members.find((m) => m.id === id)?.role;
}
