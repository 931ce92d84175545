// Heartbeats on an open call (svc.peer.v1 PeerStreams/HeartbeatStream; docs/protocol.md, "Heartbeats on an
// open call"): a leader keeps one HeartbeatStream call open to each member and sends each Heartbeat as a
// message on it, under the engine's request id. A read at the leader waits for a heartbeat round
// (engine/read-index.ts), and bench/read-timeline.ts shows a unary call's two hops are most of a lone read
// there. The carriage, its checks and its fallback are open-call-carrier.ts's; this file names the rpc.
// The read index's rounds (a voter's accepted answer, sent after it received a Heartbeat the leader sent after
// the read arrived) mean what they meant: the engine sees the same inputs as for the unary call.
import {
  HeartbeatStreamRequest,
  HeartbeatStreamResponse,
  PeerStreamsService,
} from '../../proto/gen/svc/peer/v1/peer.js';
import { stamp } from '../node/write-trace.js';
import {
  OPEN_CALL_OPEN_REQUEST_COUNT_MAX,
  OpenCallServer,
  OpenCalls,
  openCallDefinition,
  payloadCodec,
  type OpenCallKind,
  type OpenCallServerOptions,
  type OpenCallsOptions,
} from './open-call-carrier.js';

export { PEER_STREAMS_SERVICE as HEARTBEAT_STREAM_SERVICE } from './open-call-carrier.js';
/** HEARTBEAT_STREAM_CALL_ID_BASE: a streamed heartbeat's call id is this plus a count (2^40 server calls first). */
export const HEARTBEAT_STREAM_CALL_ID_BASE = 2 ** 40;
/** HEARTBEAT_STREAM_OPEN_REQUEST_COUNT_MAX: heartbeats one call may have unanswered (one or two per round). */
export const HEARTBEAT_STREAM_OPEN_REQUEST_COUNT_MAX = OPEN_CALL_OPEN_REQUEST_COUNT_MAX;

/** HEARTBEAT_STREAM is the HeartbeatStream rpc's kind: Heartbeat requests, HeartbeatStream* messages. */
export const HEARTBEAT_STREAM: OpenCallKind<'Heartbeat'> = {
  method: 'Heartbeat',
  rpcName: 'HeartbeatStream',
  key: 'heartbeatStream',
  path: PeerStreamsService.heartbeatStream.path,
  callIdBase: HEARTBEAT_STREAM_CALL_ID_BASE,
  ...payloadCodec('heartbeat', HeartbeatStreamRequest, 'heartbeat', HeartbeatStreamResponse),
  acked: (to) => stamp('heartbeat.acked', 0, to),
};

/** heartbeatStreamDefinition registers HeartbeatStream with byte-for-byte serializers. */
export const heartbeatStreamDefinition = () => openCallDefinition(HEARTBEAT_STREAM);

/** HeartbeatStreamServer serves members' HeartbeatStream calls. */
export class HeartbeatStreamServer extends OpenCallServer<'Heartbeat'> {
  constructor(options: OpenCallServerOptions) {
    super(HEARTBEAT_STREAM, options);
  }
}

/** HeartbeatStreams sends a leader's heartbeats to each member over one open HeartbeatStream call. */
export class HeartbeatStreams extends OpenCalls<'Heartbeat'> {
  constructor(options: OpenCallsOptions<'Heartbeat'>) {
    super(HEARTBEAT_STREAM, options);
  }
}
