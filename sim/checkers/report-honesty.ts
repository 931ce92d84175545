// Report honesty (decision 6): every applied_seqno a follower reports (ReportApplied, and a
// ShipSegment answer's) is at most its durable prefix that matches the leader it reports to. Checked
// as the report leaves, against the reporter's synced WAL and the leader's log at that moment. By log
// matching (checked by log-matching) two logs that hold the same (seq, term) agree up to it, so the
// entry at the reported seqno decides. Checked while that leader still leads the report's term (its
// log then only grew since); a report to a deposed leader is not judged.
import type { RpcRequest } from '../../engine/rpc.js';
import type { Effect } from '../../engine/types.js';
import type { SimNode } from '../node.js';
import { violate } from '../violation.js';
import type { Checker, CheckerWorld } from './checker.js';

export class ReportHonestyChecker implements Checker {
  readonly name = 'report-honesty';

  constructor(private readonly world: CheckerWorld) {}

  readonly beforeEffectTypes: readonly Effect['type'][] = ['send', 'reply'];

  beforeEffect(node: SimNode, effect: Effect, answering: RpcRequest | null): void {
    if (effect.type === 'send' && effect.request.method === 'ReportApplied') {
      const body = effect.request.body;
      this.check(node, body.appliedSeqno, body.reporterTerm, body.sourceShard, 'ReportApplied');
    } else if (
      effect.type === 'reply' &&
      effect.response.method === 'ShipSegment' &&
      answering?.method === 'ShipSegment'
    ) {
      this.check(
        node,
        effect.response.body.appliedSeqno,
        effect.response.body.term,
        answering.body.leaderRegion,
        'a ShipSegment answer',
      );
    }
  }

  private check(node: SimNode, seq: number, term: number, leaderId: number, what: string): void {
    if (seq <= 0) return;
    const leader = this.world.nodeByMemberId(leaderId);
    const ls = leader?.status;
    if (!leader || leader === node || !leader.isLive || !ls || ls.role !== 'leader' || ls.term !== term) return;
    const mine = node.storage.durable;
    const theirs = leader.storage.written;
    if (seq > mine.lastSeq) {
      violate(
        this.name,
        `${node.name} reported applied_seqno ${seq} in ${what} (term ${term}) but its WAL is synced only to ${mine.lastSeq}`,
        node.index,
      );
    }
    if (seq > theirs.lastSeq) {
      violate(
        this.name,
        `${node.name} reported applied_seqno ${seq} in ${what} (term ${term}) beyond leader ${leader.name}'s log end ${theirs.lastSeq}`,
        node.index,
      );
    }
    if (seq <= mine.base || seq < theirs.base) return; // inside a snapshot: committed, so matching
    const myTerm = mine.termAt(seq);
    const theirTerm = theirs.termAt(seq);
    if (myTerm !== theirTerm) {
      violate(
        this.name,
        `${node.name} reported applied_seqno ${seq} in ${what} (term ${term}), but its synced entry there has term ${myTerm} ` +
          `and leader ${leader.name}'s has term ${theirTerm}: that prefix does not match the leader`,
        node.index,
      );
    }
  }
}
