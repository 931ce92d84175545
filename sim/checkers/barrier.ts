// The hard-state barrier: nothing leaves a node before the durable state it depends on. Checked
// as each message effect is carried out, against the disk as it is at that moment (the sim's hard
// state is durable once its saveHardState effect is carried out; WAL entries once synced):
//  - a message carrying a term T (request, reply, error trailer, stream chunk): the saved term is >= T
//    (a pre-vote carries T+1 and is exempt by one), so a crash cannot make the node forget a term it told;
//  - a vote granted (or asked for, by a candidate) in term T: the saved (term, votedFor) is (T, candidate);
//  - a message naming us (reporter, candidate, leader region): the saved member id is ours;
//  - a report of a frontier (ReportApplied and ShipSegment's applied_seqno, a heartbeat's
//    leader_last_seq): the WAL holds that seqno durably, as the same entry the node's log has there.
import type { RpcRequest, RpcResponse } from '../../engine/rpc.js';
import { TRAILER_TERM } from '../../engine/rpc.js';
import type { Effect } from '../../engine/types.js';
import type { SimNode } from '../node.js';
import { violate } from '../violation.js';
import type { Checker } from './checker.js';

export class BarrierChecker implements Checker {
  readonly name = 'barrier';

  readonly beforeEffectTypes: readonly Effect['type'][] = [
    'send',
    'fetchSnapshot',
    'reply',
    'replyError',
    'streamChunk',
  ];

  beforeEffect(node: SimNode, effect: Effect, answering: RpcRequest | null): void {
    switch (effect.type) {
      case 'send':
        this.checkRequest(node, effect.request);
        return;
      case 'fetchSnapshot':
        this.checkTerm(node, effect.request.term, 'FetchSnapshot');
        return;
      case 'reply':
        this.checkReply(node, effect.response, answering);
        return;
      case 'replyError': {
        const term = Number(effect.status.trailers[TRAILER_TERM] ?? '0');
        if (term > 0) this.checkTerm(node, term, `an error answer (${effect.status.details.slice(0, 60)})`);
        return;
      }
      case 'streamChunk':
        this.checkTerm(node, effect.chunk.term, 'a stream chunk');
        this.checkId(node, effect.chunk.leaderRegion, 'a stream chunk');
        return;
      default:
        return;
    }
  }

  private checkRequest(node: SimNode, request: RpcRequest): void {
    const what = request.method;
    switch (request.method) {
      case 'RequestVote': {
        const body = request.body;
        this.checkId(node, body.candidateRegion, what);
        if (body.prevote) {
          this.checkTerm(node, body.term - 1, 'a pre-vote (term + 1)');
          return;
        }
        this.checkTerm(node, body.term, what);
        this.checkVote(node, body.term, body.candidateRegion, 'asked for votes');
        return;
      }
      case 'Heartbeat':
        this.checkTerm(node, request.body.term, what);
        this.checkId(node, request.body.leaderRegion, what);
        this.checkDurable(node, request.body.leaderLastSeq, 'leader_last_seq in a Heartbeat');
        return;
      case 'ShipSegment':
        this.checkTerm(node, request.body.term, what);
        this.checkId(node, request.body.leaderRegion, what);
        return;
      case 'ReportApplied':
        this.checkTerm(node, request.body.reporterTerm, what);
        this.checkId(node, request.body.reporterShard, what);
        this.checkDurable(node, request.body.appliedSeqno, 'applied_seqno in a ReportApplied');
        return;
      case 'StreamSegments':
      case 'FetchSnapshot':
      case 'TimeoutNow':
        this.checkTerm(node, request.body.term, what);
        return;
      case 'JoinCluster':
        return;
    }
  }

  private checkReply(node: SimNode, response: RpcResponse, answering: RpcRequest | null): void {
    switch (response.method) {
      case 'RequestVote': {
        const body = response.body;
        this.checkTerm(node, body.term, 'a RequestVote answer');
        if (body.granted && answering?.method === 'RequestVote' && !answering.body.prevote) {
          this.checkVote(
            node,
            answering.body.term,
            answering.body.candidateRegion,
            `granted its vote to member ${answering.body.candidateRegion}`,
          );
        }
        return;
      }
      case 'ShipSegment':
        this.checkTerm(node, response.body.term, 'a ShipSegment answer');
        this.checkDurable(node, response.body.appliedSeqno, 'applied_seqno in a ShipSegment answer');
        return;
      case 'Heartbeat':
        this.checkTerm(node, response.body.term, 'a Heartbeat answer');
        return;
      case 'JoinCluster':
        this.checkTerm(node, response.body.term, 'a JoinCluster answer');
        return;
      case 'ReportApplied':
      case 'TimeoutNow':
        return;
    }
  }

  private checkTerm(node: SimNode, term: number, what: string): void {
    const saved = node.storage.hardState?.term ?? 0;
    if (term > saved) {
      violate(
        this.name,
        `${node.name} sent ${what} at term ${term} while its saved term is ${saved}: a crash now would forget the term it told`,
        node.index,
      );
    }
  }

  private checkVote(node: SimNode, term: number, candidate: number, what: string): void {
    const saved = node.storage.hardState;
    if (!saved || saved.term !== term || saved.votedFor !== candidate) {
      violate(
        this.name,
        `${node.name} ${what} in term ${term} while its saved hard state is term ${saved?.term ?? 0}, votedFor ${saved?.votedFor ?? 0}: ` +
          'a crash now would let it vote again in that term',
        node.index,
      );
    }
  }

  private checkId(node: SimNode, id: number, what: string): void {
    const saved = node.storage.hardState?.selfId ?? 0;
    if (id !== 0 && id !== saved) {
      violate(this.name, `${node.name} sent ${what} as member ${id} while its saved member id is ${saved}`, node.index);
    }
  }

  private checkDurable(node: SimNode, seq: number, what: string): void {
    if (seq <= 0) return;
    const durable = node.storage.durable;
    const written = node.storage.written;
    if (seq > durable.lastSeq) {
      violate(
        this.name,
        `${node.name} reported ${what} = ${seq} while its WAL is synced only to ${durable.lastSeq}`,
        node.index,
      );
    }
    const durableTerm = durable.termAt(seq);
    const writtenTerm = written.termAt(seq);
    if (durableTerm !== undefined && writtenTerm !== undefined && durableTerm !== writtenTerm) {
      violate(
        this.name,
        `${node.name} reported ${what} = ${seq}, but the synced entry there has term ${durableTerm} and its log's has term ${writtenTerm} (not synced yet)`,
        node.index,
      );
    }
  }
}
