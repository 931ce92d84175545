// The call table: every RPC in flight, on both sides. An outbound call (the
// caller's requestId) settles exactly once: a real answer, a failure, or its
// deadline. Inbound calls (a server's callId) may be several per outbound one
// when the network duplicates or replays the request.
import type { RpcMethod, RpcRequest } from '../engine/rpc.js';

export type CallKind = 'unary' | 'stream' | 'snapshot';

export interface OutboundCall {
  key: number;
  caller: number;
  callerInc: number;
  requestId: number;
  method: RpcMethod;
  kind: CallKind;
  /** owner is the server callId whose stream the caller listens to (0 = none yet). */
  owner: number;
  /** streamLost: a message of the stream was lost, so the rest is too (the caller will time out). */
  streamLost: boolean;
  /** lastArrivalUs keeps a stream's messages in order on arrival. */
  lastArrivalUs: number;
  /** deadlineUs: when the call fails with DEADLINE_EXCEEDED unless answered first (0 = not set). */
  deadlineUs: number;
  /** callerTerm: the caller's term when it called (for counting late answers into a new term). */
  callerTerm: number;
}

export interface InboundCall {
  callId: number;
  callKey: number;
  server: number;
  serverInc: number;
  request: RpcRequest;
  /** served: the step that took the call in is over (a stream's later chunks are a leader's live pushes). */
  served?: boolean;
}

export function callKindOf(method: RpcMethod): CallKind {
  if (method === 'StreamSegments') return 'stream';
  if (method === 'FetchSnapshot') return 'snapshot';
  return 'unary';
}

export class CallTable {
  readonly outbound = new Map<number, OutboundCall>();
  readonly inbound = new Map<number, InboundCall>();
  private nextKey = 1;
  private nextCallId = 1;

  open(
    call: Omit<OutboundCall, 'key' | 'owner' | 'streamLost' | 'lastArrivalUs' | 'deadlineUs' | 'callerTerm'>,
  ): OutboundCall {
    const full: OutboundCall = {
      key: this.nextKey++,
      caller: call.caller,
      callerInc: call.callerInc,
      requestId: call.requestId,
      method: call.method,
      kind: call.kind,
      owner: 0,
      streamLost: false,
      lastArrivalUs: 0,
      deadlineUs: 0,
      callerTerm: 0,
    };
    this.outbound.set(full.key, full);
    return full;
  }

  accept(callKey: number, server: number, serverInc: number, request: RpcRequest): InboundCall {
    const call: InboundCall = { callId: this.nextCallId++, callKey, server, serverInc, request };
    this.inbound.set(call.callId, call);
    return call;
  }

  /** forgetNode drops every call a node's dead incarnation made or was serving. */
  forgetNode(node: number): void {
    for (const [key, call] of this.outbound) if (call.caller === node) this.outbound.delete(key);
    for (const [id, call] of this.inbound) if (call.server === node) this.inbound.delete(id);
  }
}
