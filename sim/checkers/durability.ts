// Durability: an acknowledged write is never lost, across crashes. An ack binds
// a seqno to the proposed bytes; every later apply at that seqno must carry
// them, and every node that becomes leader of a later term than the one it was
// acknowledged in must hold them (Raft's leader completeness). A leader of an
// older term may rightly lack it: a candidate paused with its vote grants in
// flight can win a term the cluster has since left (seed 500381); it is fenced,
// since a quorum is past its term, and cannot commit.
import { EntryKind, type Entry } from '../../engine/types.js';
import { sameBytes } from '../artifacts.js';
import type { SimNode } from '../node.js';
import { violate } from '../violation.js';
import type { CanonicalLog } from './canonical-log.js';
import type { Checker, StepRecord } from './checker.js';

export interface AckedWrite {
  seq: number;
  data: Uint8Array;
  proposalId: number;
  ackedBy: number;
  /** ackedInTerm: the acknowledging leader's term; the write was committed in it or earlier. */
  ackedInTerm: number;
}

export class DurabilityChecker implements Checker {
  readonly name = 'durability';
  readonly acked = new Map<number, AckedWrite>();
  maxAckedSeq = 0;

  constructor(private readonly canonical: CanonicalLog) {}

  onProposalResult(
    node: SimNode,
    proposalId: number,
    ok: boolean,
    seq: number,
    data: Uint8Array | undefined,
    term: number,
  ): void {
    if (!ok) return;
    if (!data)
      violate(this.name, `${node.name} acknowledged proposal ${proposalId} that nobody proposed to it`, node.index);
    const earlier = this.acked.get(seq);
    if (earlier && !sameBytes(earlier.data, data)) {
      violate(
        this.name,
        `${node.name} acknowledged proposal ${proposalId} at seq ${seq}, where proposal ${earlier.proposalId} was acknowledged by n${earlier.ackedBy + 1}`,
        node.index,
      );
    }
    const own = node.storage.written.entryAt(seq);
    if (own && !sameBytes(own.data, data)) {
      violate(
        this.name,
        `${node.name} acknowledged proposal ${proposalId} at seq ${seq} but its own log holds other bytes there`,
        node.index,
      );
    }
    const applied = this.canonical.at(seq);
    if (applied && !sameBytes(applied.data, data)) {
      violate(
        this.name,
        `${node.name} acknowledged proposal ${proposalId} at seq ${seq}, but another entry was applied there`,
        node.index,
      );
    }
    if (!earlier) this.acked.set(seq, { seq, data, proposalId, ackedBy: node.index, ackedInTerm: term });
    this.maxAckedSeq = Math.max(this.maxAckedSeq, seq);
  }

  onApply(node: SimNode, entries: readonly Entry[]): void {
    if (this.acked.size === 0) return;
    for (const entry of entries) {
      if (entry.kind === EntryKind.Withheld) continue; // a filtered member holds no bytes of other communities
      const write = this.acked.get(entry.seq);
      if (write && !sameBytes(write.data, entry.data)) {
        violate(
          this.name,
          `${node.name} applied other bytes at seq ${entry.seq} than acknowledged proposal ${write.proposalId}: the write was lost`,
          node.index,
        );
      }
    }
  }

  afterStep(step: StepRecord): void {
    const { node, before, after } = step;
    if (after.role !== 'leader' || (before?.role === 'leader' && before.term === after.term)) return;
    const log = node.storage.written;
    for (const write of this.acked.values()) {
      if (write.seq <= log.base || write.ackedInTerm >= after.term) continue;
      const entry = log.entryAt(write.seq);
      if (!entry || !sameBytes(entry.data, write.data)) {
        violate(
          this.name,
          `${node.name} became leader of term ${after.term} without acknowledged write at seq ${write.seq} ` +
            `(proposal ${write.proposalId}; its log ends at ${log.lastSeq})`,
          node.index,
        );
      }
    }
  }
}
