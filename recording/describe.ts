// describeEffect: one short line per effect, recorded beside each step's digest so a divergence found by
// replay can show what the node did next to what the replay did. Numbers and names only: never a value.
import type { RpcRequest } from '../engine/rpc.js';
import type { Effect } from '../engine/types.js';

export function describeRequest(request: RpcRequest): string {
  const b = request.body;
  switch (request.method) {
    case 'ShipSegment':
      return `ShipSegment t${request.body.term} seq${request.body.id?.seqno ?? 0} n${request.body.eventCount} from${request.body.leaderRegion}`;
    case 'StreamSegments':
      return `StreamSegments t${request.body.term} from-seq${request.body.fromSeqno} by${request.body.shardId}`;
    case 'FetchSnapshot':
      return `FetchSnapshot t${request.body.term} from-seq${request.body.fromSeqno} by${request.body.shardId}`;
    case 'Heartbeat':
      return `Heartbeat t${request.body.term} from${request.body.leaderRegion} last${request.body.leaderLastSeq}`;
    case 'ReportApplied':
      return `ReportApplied t${request.body.reporterTerm} from${request.body.reporterShard} applied${request.body.appliedSeqno}`;
    case 'RequestVote':
      return `RequestVote t${request.body.term} from${request.body.candidateRegion} ${request.body.lastLogTerm}/${request.body.lastLogSeq}${request.body.prevote ? ' pre' : ''}${request.body.transfer ? ' transfer' : ''}`;
    case 'TimeoutNow':
      return `TimeoutNow t${request.body.term} from${request.body.leaderRegion}`;
    case 'JoinCluster':
      return `JoinCluster ${request.body.name.slice(0, 64)}`;
    default:
      return `? ${JSON.stringify(b).slice(0, 64)}`;
  }
}

export function describeEffect(effect: Effect): string {
  switch (effect.type) {
    case 'saveHardState':
      return `saveHardState t${effect.hardState.term} voted${effect.hardState.votedFor} commit${effect.hardState.commitSeq}`;
    case 'append':
      return `append from${effect.fromSeq} +${effect.entries.length}`;
    case 'send':
      return `send r${effect.requestId} to${effect.toId} ${describeRequest(effect.request)}`;
    case 'reply':
      return `reply c${effect.callId} ${effect.response.method} ${JSON.stringify(effect.response.body)}`;
    case 'replyError':
      return `replyError c${effect.callId} code${effect.status.code} ${effect.status.details.slice(0, 120)}`;
    case 'streamChunk':
      return `streamChunk c${effect.callId} seq${effect.chunk.id?.seqno ?? 0} n${effect.chunk.eventCount}`;
    case 'streamEnd':
      return `streamEnd c${effect.callId}`;
    case 'serveSnapshot':
      return `serveSnapshot c${effect.callId} ${effect.header.needed ? effect.header.snapshotSeq : 'not-needed'}`;
    case 'fetchSnapshot':
      return `fetchSnapshot r${effect.requestId} to${effect.toId} from-seq${effect.request.fromSeqno}`;
    case 'apply':
      return `apply ${effect.entries[0]?.seq ?? 0}+${effect.entries.length}`;
    case 'resetStateMachine':
      return 'resetStateMachine';
    case 'stageSnapshot':
      return `stageSnapshot ${effect.meta.seq}`;
    case 'compact':
      return `compact ${effect.throughSeq}`;
    case 'proposalResult':
      return `proposalResult p${effect.proposalId} ${effect.code} seq${effect.seq}`;
    case 'adminResult':
      return `adminResult a${effect.adminId} ${effect.code}`;
    case 'readIndexResult':
      return `readIndexResult q${effect.readId} ${effect.refusal ?? `at${effect.index}`}`;
    case 'pollStatus':
      return `pollStatus ${effect.leaderHttpAddr}`;
    case 'readiness':
      return `readiness ${effect.ready} ${effect.reason}`;
    case 'roleChanged':
      return `roleChanged ${effect.role} t${effect.term} leader${effect.leaderId}`;
    case 'warning':
      return `warning ${effect.code}`;
    default:
      return `? ${(effect as { type: string }).type}`;
  }
}
