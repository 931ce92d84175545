// redactedFrame: a ShipSegment payload as the recording's `$f` frame, read in place. It is the common case
// of recording a follower's steps (every shipped segment), and engine/segment-frame.ts decodeSegmentFrame,
// which format 1 called, copies every entry's data out of the payload and builds entries the recording
// then copies again. Here the fields are read where they lie and each value is recorded by its length.
//
// It accepts exactly the frames decodeSegmentFrame accepts (the same checks, checksum first); for any
// other payload it answers null and the caller records it through decodeSegmentFrame, which names the reason.
//
// The values inside a shipped segment are recorded by length only ({"$r": [length]}): their keyed hashes
// are in the leader's recording, where each value entered the cluster as a proposal, and hashing every
// value again on every follower was a third of a follower's recording work. A replay needs only the length.
import { crc32cFast } from './crc32c-fast.js';
import { SEGMENT_FRAME_VERSION } from '../engine/segment-frame.js';
import { EntryKind } from '../engine/types.js';
import { isCarriableValue } from '../engine/values.js';

const HEADER_BYTES = 1 + 8 + 8 + 8 + 4;
const ENTRY_HEADER_BYTES = 8 + 8 + 1 + 4;
const CHECKSUM_BYTES = 4;

interface RecordedEntry {
  seq: number;
  term: number;
  kind: number;
  data: { $r: [number] } | { $b: string };
}

export interface RecordedFrame {
  prevSeq: number;
  prevTerm: number;
  commitSeq: number;
  entries: RecordedEntry[];
}

/** redactedFrame is the frame with its values as lengths, or null when decodeSegmentFrame would refuse it. */
export function redactedFrame(bytes: Uint8Array): RecordedFrame | null {
  if (bytes.length < HEADER_BYTES + CHECKSUM_BYTES) return null;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const bodyEnd = bytes.length - CHECKSUM_BYTES;
  if (view.getUint32(bodyEnd) !== crc32cFast(bytes, 0, bodyEnd)) return null;
  if (view.getUint8(0) !== SEGMENT_FRAME_VERSION) return null;
  const prevSeq = readU64(view, 1);
  const prevTerm = readU64(view, 9);
  const commitSeq = readU64(view, 17);
  const count = view.getUint32(25);
  let at = HEADER_BYTES;
  if (count > (bodyEnd - at) / ENTRY_HEADER_BYTES) return null;
  if (![prevSeq, prevTerm, commitSeq].every(isCarriableValue)) return null;
  const entries: RecordedEntry[] = [];
  let lastTerm = prevTerm;
  for (let i = 0; i < count; i++) {
    if (at + ENTRY_HEADER_BYTES > bodyEnd) return null;
    const seq = readU64(view, at);
    const term = readU64(view, at + 8);
    const kind = view.getUint8(at + 16);
    const length = view.getUint32(at + 17);
    at += ENTRY_HEADER_BYTES;
    if (at + length > bodyEnd) return null;
    if (seq !== prevSeq + 1 + i || term < lastTerm || !isCarriableValue(seq) || !isCarriableValue(term)) return null;
    lastTerm = term;
    const data =
      kind === EntryKind.EventBatch
        ? { $r: [length] as [number] }
        : { $b: Buffer.from(bytes.buffer, bytes.byteOffset + at, length).toString('base64') };
    entries.push({ seq, term, kind, data });
    at += length;
  }
  if (at !== bodyEnd) return null;
  return { prevSeq, prevTerm, commitSeq, entries };
}

/** readU64 as decodeSegmentFrame reads it: NaN above 2^53, which isCarriableValue then refuses. */
function readU64(view: DataView, at: number): number {
  const high = view.getUint32(at);
  if (high >= 0x20_0000) return NaN;
  return high * 0x1_0000_0000 + view.getUint32(at + 4);
}
