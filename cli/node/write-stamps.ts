// The node's replication stamps of the write timeline (transports/node/write-trace.ts): which seqno a
// ShipSegment or ReportApplied is about; a Heartbeat's, for the read timeline. Called only while a trace is recorded (tracing()).
import type { RpcRequest } from '../../engine/rpc.js';
import type { SendEffect } from '../../transports/node/driver.js';
import { stamp } from '../../transports/node/write-trace.js';

/** stampSend stamps a ShipSegment or ReportApplied leaving this node. */
export function stampSend(effect: SendEffect): void {
  const request = effect.request;
  if (request.method === 'ShipSegment') stamp('ship.sent', request.body.leaderLastSeq, effect.to);
  else if (request.method === 'ReportApplied') stamp('report.sent', request.body.appliedSeqno);
  else if (request.method === 'Heartbeat') stamp('heartbeat.sent', 0, effect.to);
}

/** stampServed stamps a ShipSegment or ReportApplied this node's server decoded. */
export function stampServed(request: RpcRequest): void {
  if (request.method === 'ShipSegment') stamp('ship.received', request.body.leaderLastSeq);
  else if (request.method === 'ReportApplied') stamp('report.received', request.body.appliedSeqno);
  else if (request.method === 'Heartbeat') stamp('heartbeat.received', 0);
}
