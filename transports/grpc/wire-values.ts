// Terms and seqnos at the edge. ts-proto decodes uint64 to a JS number (forceLong=number) and throws
// above Number.MAX_SAFE_INTEGER, so what reaches here is exact; but a term or seqno AT that bound
// leaves no room to increment (the next election's term, the next entry's seqno would not be exact),
// and one such value adopted by the engine would wedge the cluster for good. Every term and seqno a
// WalShipping message carries, the segment frame's included, must be at most WIRE_VALUE_MAX.
// Member ids are uint32: always exact; the sender ids are matched against the certificate instead
// (peer-gate.ts).
import type { RpcRequest, RpcResponse } from '../../engine/rpc.js';

/** WIRE_VALUE_MAX is the largest term or seqno accepted: one below MAX_SAFE_INTEGER, so +1 stays exact. */
export const WIRE_VALUE_MAX = Number.MAX_SAFE_INTEGER - 1;

/** isCarriableValue: a non-negative integer the engine can hold exactly and still increment exactly. */
export function isCarriableValue(value: number): boolean {
  return Number.isSafeInteger(value) && value >= 0 && value <= WIRE_VALUE_MAX;
}

type Fields = Array<[string, number]>;

/** requestValueFields lists a request's terms and seqnos, by their proto field names. */
function requestValueFields(request: RpcRequest): Fields {
  switch (request.method) {
    case 'ShipSegment': {
      const b = request.body;
      return [['term', b.term], ['id.seqno', b.id?.seqno ?? 0], ['leader_last_seq', b.leaderLastSeq], ['stream_baseline', b.streamBaseline],
        ['event_count', b.eventCount]];
    }
    case 'StreamSegments': return [['term', request.body.term], ['from_seqno', request.body.fromSeqno]];
    case 'FetchSnapshot': return [['term', request.body.term], ['from_seqno', request.body.fromSeqno]];
    case 'Heartbeat': {
      const b = request.body;
      return [['term', b.term], ['stream_baseline', b.streamBaseline], ['prev_log_term', b.prevLogTerm], ['prev_log_seq', b.prevLogSeq],
        ['leader_last_seq', b.leaderLastSeq], ...Object.entries(b.replicationLag).map(([id, lag]): [string, number] => [`replication_lag[${id}]`, lag])];
    }
    case 'ReportApplied': return [['reporter_term', request.body.reporterTerm], ['applied_seqno', request.body.appliedSeqno]];
    case 'RequestVote': return [['term', request.body.term], ['last_log_term', request.body.lastLogTerm], ['last_log_seq', request.body.lastLogSeq]];
    case 'TimeoutNow': return [['term', request.body.term]];
    case 'JoinCluster': return [];
    default: return unreachable(request);
  }
}

/** requestValueProblem names the first term or seqno of a request the engine cannot carry, or returns null. */
export function requestValueProblem(request: RpcRequest): string | null {
  for (const [field, value] of requestValueFields(request)) {
    if (!isCarriableValue(value)) return `${request.method} ${field} ${value} is above ${WIRE_VALUE_MAX} (no room to increment)`;
  }
  if (request.method === 'ShipSegment') {
    const problem = segmentFrameValueProblem(request.body.payload);
    if (problem !== null) return `ShipSegment payload ${problem}`;
  }
  return null;
}

/** responseValueProblem does the same for the terms and seqnos of a response a peer sent back. */
export function responseValueProblem(response: RpcResponse): string | null {
  const b = response.body as Partial<Record<'term' | 'appliedSeqno', number>>;
  for (const field of ['term', 'appliedSeqno'] as const) {
    const value = b[field];
    if (value !== undefined && !isCarriableValue(value)) return `${response.method} response ${field} ${value} is above ${WIRE_VALUE_MAX}`;
  }
  return null;
}

// Segment frame layout (engine/segment-frame.ts): u8 version, u64 prevSeq, u64 prevTerm, u64 commitSeq,
// u32 entryCount, then per entry u64 seq, u64 term, u8 kind, u32 length, bytes; u32 crc32c.
const FRAME_HEADER_BYTES = 1 + 8 + 8 + 8 + 4;
const ENTRY_HEADER_BYTES = 8 + 8 + 1 + 4;

/**
 * segmentFrameValueProblem walks a segment frame's headers (no checksum: the engine checks that) and names
 * the first term or seqno above WIRE_VALUE_MAX. A frame too short or malformed to walk is left to the
 * engine's decoder, which refuses it with its own reason.
 */
export function segmentFrameValueProblem(payload: Uint8Array): string | null {
  if (payload.length < FRAME_HEADER_BYTES) return null;
  const view = new DataView(payload.buffer, payload.byteOffset, payload.byteLength);
  const u64 = (at: number): number => view.getUint32(at) * 0x1_0000_0000 + view.getUint32(at + 4);
  const header: Fields = [['prevSeq', u64(1)], ['prevTerm', u64(9)], ['commitSeq', u64(17)]];
  for (const [field, value] of header) if (!isCarriableValue(value)) return `${field} ${value} is above ${WIRE_VALUE_MAX}`;
  const entryCount = view.getUint32(25);
  let at = FRAME_HEADER_BYTES;
  // Bounded by the payload: every pass moves past one entry header and its body, or stops.
  for (let i = 0; i < entryCount && at + ENTRY_HEADER_BYTES <= payload.length; i++) {
    const seq = u64(at);
    const term = u64(at + 8);
    if (!isCarriableValue(seq)) return `entry ${i} seq ${seq} is above ${WIRE_VALUE_MAX}`;
    if (!isCarriableValue(term)) return `entry ${i} term ${term} is above ${WIRE_VALUE_MAX}`;
    at += ENTRY_HEADER_BYTES + view.getUint32(at + 17);
  }
  return null;
}

function unreachable(value: never): never {
  throw new Error(`unknown method ${JSON.stringify(value)}`);
}
