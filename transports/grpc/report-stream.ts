// ReportApplied on an open call (svc.peer.v1 PeerStreams/ReportStream; docs/protocol.md, "ReportApplied on an
// open call"), the mirror of HeartbeatStream: a follower keeps one ReportStream call open to its leader and
// sends each ReportApplied (once per apply round, in the step its fdatasync completes: the durable frontier a
// write's commit waits for) as a message on it, under the engine's request id. docs/operations.md's write
// timeline shows a unary ReportApplied's hop is one of the three that make most of a lone write. The
// carriage, its checks (the reporter a report names must be the certificate's member) and its fallback are
// open-call-carrier.ts's; this file names the rpc. The engine sees the same inputs as for the unary call.
import { PeerStreamsService, ReportStreamRequest, ReportStreamResponse } from '../../proto/gen/svc/peer/v1/peer.js';
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

/** REPORT_STREAM_CALL_ID_BASE: a streamed report's call id is this plus a count (above every heartbeat's). */
export const REPORT_STREAM_CALL_ID_BASE = 2 ** 41;
/** REPORT_STREAM_OPEN_REQUEST_COUNT_MAX: reports one call may have unanswered (a follower has one or two). */
export const REPORT_STREAM_OPEN_REQUEST_COUNT_MAX = OPEN_CALL_OPEN_REQUEST_COUNT_MAX;

/** REPORT_STREAM is the ReportStream rpc's kind: ReportApplied requests, ReportStream* messages. */
export const REPORT_STREAM: OpenCallKind<'ReportApplied'> = {
  method: 'ReportApplied',
  rpcName: 'ReportStream',
  key: 'reportStream',
  path: PeerStreamsService.reportStream.path,
  callIdBase: REPORT_STREAM_CALL_ID_BASE,
  ...payloadCodec('report', ReportStreamRequest, 'ack', ReportStreamResponse),
};

/** reportStreamDefinition registers ReportStream with byte-for-byte serializers. */
export const reportStreamDefinition = () => openCallDefinition(REPORT_STREAM);

/** ReportStreamServer serves members' ReportStream calls. */
export class ReportStreamServer extends OpenCallServer<'ReportApplied'> {
  constructor(options: OpenCallServerOptions) {
    super(REPORT_STREAM, options);
  }
}

/** ReportStreams sends a follower's reports to its leader over one open ReportStream call. */
export class ReportStreams extends OpenCalls<'ReportApplied'> {
  constructor(options: OpenCallsOptions<'ReportApplied'>) {
    super(REPORT_STREAM, options);
  }
}
