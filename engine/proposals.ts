// PendingProposals: a leader's proposals appended to its log and awaiting commit (seq → proposal id).
// Each is answered exactly once: committed when the commit seqno reaches its entry, or leadership-lost
// (outcome unknown: the entry may yet commit under the next leader) when this node stops leading.
// The queue is bounded (limits.proposalQueueCountMax): a full queue refuses, never grows.

export class PendingProposals {
  private readonly bySeq = new Map<number, number>();

  /** size: how many proposals await their commit. */
  get size(): number {
    return this.bySeq.size;
  }

  /** add: proposal `proposalId` is the entry at `seq` of our log. */
  add(seq: number, proposalId: number): void {
    this.bySeq.set(seq, proposalId);
  }

  /** settle removes and returns, in the order proposed, the proposals whose entry is at or below `commitSeq`. */
  settle(commitSeq: number): { seq: number; proposalId: number }[] {
    const committed: { seq: number; proposalId: number }[] = [];
    for (const [seq, proposalId] of this.bySeq) {
      if (seq > commitSeq) continue;
      this.bySeq.delete(seq);
      committed.push({ seq, proposalId });
    }
    return committed;
  }

  /** abandon empties the queue (leadership lost) and returns every waiting proposal id, in the order proposed. */
  abandon(): number[] {
    const proposalIds = [...this.bySeq.values()];
    this.bySeq.clear();
    return proposalIds;
  }
}
