// The stale-term rule for requests, in one place (etcd's `m.Term < r.Term` case): a request whose
// term is below ours, or one asserting a leader at term 0 (a term no leader holds), is refused
// before any handler runs, each kind with the spec's answer (EngineCore.refuseStaleTerm). A higher term
// is the other half of the rule: adopted first where termToAdopt says so. JoinCluster carries no term.
import type { RpcRequest } from './rpc.js';

/** requestTerm: the term a request asserts; null for JoinCluster (a joiner has none yet). */
export function requestTerm(request: RpcRequest): number | null {
  switch (request.method) {
    case 'ReportApplied':
      return request.body.reporterTerm;
    // Named apart from the default: a pull names no sender, so its term is only ever compared
    // (a newer one is refused too, never adopted: Engine.fenceSourceRequest).
    case 'StreamSegments':
    case 'FetchSnapshot':
      return request.body.term;
    case 'JoinCluster':
      return null;
    default:
      return request.body.term;
  }
}

/** assertsLeader: the kinds only a leader sends, whose term 0 is never a leader's. */
function assertsLeader(request: RpcRequest): boolean {
  return request.method === 'ShipSegment' || request.method === 'Heartbeat' || request.method === 'TimeoutNow';
}

/** isStaleTerm: the request's term is below `ourTerm`, or it asserts a leader at term 0. */
export function isStaleTerm(request: RpcRequest, ourTerm: number): boolean {
  const term = requestTerm(request);
  if (term === null) return false;
  if (term < ourTerm) return true;
  return term === 0 && assertsLeader(request);
}
