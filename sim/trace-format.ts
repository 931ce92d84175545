// Short, stable text for inputs and effects in the trace: numbers and names
// only, in a fixed order (never whole payloads, never object key order).
import type { Effect, Input } from '../engine/types.js';
import type { RpcRequest } from '../engine/rpc.js';
import { unreachable } from './wire.js';

/** traceLine is one step as a JSON object line; the descriptions hold no characters JSON must escape. */
export function traceLine(
  event: number,
  nowUs: number,
  node: number,
  input: Input,
  effects: readonly Effect[],
): string {
  let fx = '';
  for (let i = 0; i < effects.length; i++) fx += (i === 0 ? '"' : ',"') + describeEffect(effects[i]!) + '"';
  return `{"i":${event},"t":${nowUs},"n":${node},"in":"${describeInput(input)}","fx":[${fx}]}`;
}

export function describeInput(input: Input): string {
  switch (input.type) {
    case 'start':
      return 'start';
    case 'tick':
      return 'tick';
    case 'stats':
      return `stats ${input.stats.entityCount}`;
    case 'request':
      return `req c${input.callId} ${describeRequest(input.request)}`;
    case 'response':
      return `resp r${input.requestId} ${input.response.method}`;
    case 'callFailed':
      return `failed r${input.requestId} ${input.status.code}`;
    case 'streamChunk':
      return `chunk r${input.requestId} t${input.chunk.term} s${input.chunk.id?.seqno ?? 0} n${input.chunk.eventCount}`;
    case 'streamEnded':
      return `ended r${input.requestId}`;
    case 'propose':
      return `propose p${input.proposalId}`;
    case 'proposeBatch':
      return `propose ${input.proposals.map((p) => `p${p.proposalId}`).join(',')}`;
    case 'entriesPersisted':
      return `persisted ${input.lastSeq}/${input.lastTerm}`;
    case 'snapshotStaged':
      return `staged ${input.meta.seq}`;
    case 'snapshotInstalled':
      return `installed r${input.requestId} ${input.meta.seq}`;
    // not-needed is traced by its code (its reason is prose); the others by their reason, as before codes existed.
    case 'snapshotFailed':
      return `snapfail r${input.requestId} ${input.code === 'not-needed' ? 'not-needed' : plain(input.reason)}`;
    case 'statusPolled':
      return `polled ${input.leaderLastSeq}`;
    case 'admin':
      return `admin a${input.adminId} ${input.op.op} ${input.op.memberId}`;
    case 'readIndex':
      return input.asker
        ? `read q${input.readId} asker n${input.asker.id} t${input.asker.term}`
        : `read q${input.readId}`;
    default:
      return unreachable(input);
  }
}

export function describeRequest(request: RpcRequest): string {
  switch (request.method) {
    case 'ShipSegment':
      return `Ship t${request.body.term} s${request.body.id?.seqno ?? 0} n${request.body.eventCount} l${request.body.leaderLastSeq}`;
    case 'StreamSegments':
      return `Stream t${request.body.term} f${request.body.fromSeqno}`;
    case 'FetchSnapshot':
      return `Fetch t${request.body.term} f${request.body.fromSeqno}`;
    case 'Heartbeat':
      return `Hb t${request.body.term} l${request.body.leaderLastSeq}`;
    case 'ReportApplied':
      return `Report t${request.body.reporterTerm} a${request.body.appliedSeqno}`;
    case 'RequestVote':
      return `Vote t${request.body.term} ${request.body.lastLogTerm}/${request.body.lastLogSeq}${request.body.prevote ? ' pre' : ''}`;
    case 'TimeoutNow':
      return `TimeoutNow t${request.body.term}`;
    case 'JoinCluster':
      return `Join ${plain(request.body.name)}`;
    default:
      return unreachable(request);
  }
}

export function describeEffect(effect: Effect): string {
  switch (effect.type) {
    case 'saveHardState':
      return `hs t${effect.hardState.term} v${effect.hardState.votedFor} c${effect.hardState.commitSeq}`;
    case 'append':
      return `append ${effect.fromSeq}+${effect.entries.length}`;
    case 'send':
      return `send r${effect.requestId} ${plain(effect.to)} ${describeRequest(effect.request)}`;
    case 'reply':
      return `reply c${effect.callId} ${effect.response.method}`;
    case 'replyError':
      return `error c${effect.callId} ${effect.status.code}`;
    case 'streamChunk':
      return `chunk c${effect.callId} s${effect.chunk.id?.seqno ?? 0} n${effect.chunk.eventCount}`;
    case 'streamEnd':
      return `end c${effect.callId}`;
    case 'serveSnapshot':
      return `serve c${effect.callId} ${effect.header.needed ? effect.header.snapshotSeq : 'not-needed'}`;
    case 'fetchSnapshot':
      return `fetch r${effect.requestId} ${plain(effect.to)} f${effect.request.fromSeqno}`;
    case 'apply':
      return `apply ${effect.entries[0]?.seq ?? 0}+${effect.entries.length}`;
    case 'resetStateMachine':
      return 'reset';
    case 'stageSnapshot':
      return `stage ${effect.meta.seq}`;
    case 'compact':
      return `compact ${effect.throughSeq}`;
    case 'proposalResult':
      return `result p${effect.proposalId} ${effect.ok ? 'ok' : 'no'} ${effect.seq}`;
    case 'adminResult':
      return `adminResult a${effect.adminId} ${effect.ok ? 'ok' : 'no'}`;
    case 'readIndexResult':
      return `readResult q${effect.readId} ${effect.refusal ?? `at ${effect.index}`}`;
    case 'pollStatus':
      return `poll ${plain(effect.leaderHttpAddr)}`;
    case 'readiness':
      return `ready ${effect.ready}`;
    case 'roleChanged':
      return `role ${effect.role} t${effect.term} l${effect.leaderId}`;
    case 'warning':
      return `warn ${effect.code}`;
    default:
      return unreachable(effect);
  }
}

/** plain keeps engine-supplied text JSON-safe without escaping: anything unusual becomes '?'. */
function plain(text: string): string {
  return /^[\w .:/,=<>()#+-]*$/.test(text) ? text : text.replace(/[^\w .:/,=<>()#+-]/g, '?');
}
