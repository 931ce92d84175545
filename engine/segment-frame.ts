// SegmentFrame is the ShipSegmentRequest.payload layout (docs/protocol.md, "Segment frame"):
//
//   u8  version (=1)
//   u64 prevSeq, u64 prevTerm   the entry just before the first one, for the log-matching check
//   u64 commitSeq               the leader's commit seqno
//   u32 entryCount
//   entryCount x { u64 seq, u64 term, u8 kind, u32 length, length bytes }
//   u32 crc32c of everything above
//
// u64 fields are written as two u32 halves (big-endian) and must not exceed VALUE_ROOM_MAX (values.ts).
import { crc32c } from './crc32c.js';
import type { Entry } from './types.js';
import { isCarriableValue } from './values.js';

export const SEGMENT_FRAME_VERSION = 1;
const HEADER_BYTES = 1 + 8 + 8 + 8 + 4;
const ENTRY_HEADER_BYTES = 8 + 8 + 1 + 4;
const CHECKSUM_BYTES = 4;

export interface SegmentFrame {
  prevSeq: number;
  prevTerm: number;
  commitSeq: number;
  entries: Entry[];
}

export type DecodeResult = { ok: true; frame: SegmentFrame } | { ok: false; reason: string };

/** segmentFrameBytes is the encoded size of a frame holding these entries. */
export function segmentFrameBytes(entries: readonly Entry[]): number {
  let size = HEADER_BYTES + CHECKSUM_BYTES;
  for (const e of entries) size += ENTRY_HEADER_BYTES + e.data.length;
  return size;
}

export function encodeSegmentFrame(frame: SegmentFrame): Uint8Array {
  const bytes = new Uint8Array(segmentFrameBytes(frame.entries));
  const view = new DataView(bytes.buffer);
  let at = 0;
  view.setUint8(at, SEGMENT_FRAME_VERSION);
  at += 1;
  at = writeU64(view, at, frame.prevSeq);
  at = writeU64(view, at, frame.prevTerm);
  at = writeU64(view, at, frame.commitSeq);
  view.setUint32(at, frame.entries.length);
  at += 4;
  for (const e of frame.entries) {
    at = writeU64(view, at, e.seq);
    at = writeU64(view, at, e.term);
    view.setUint8(at, e.kind);
    at += 1;
    view.setUint32(at, e.data.length);
    at += 4;
    bytes.set(e.data, at);
    at += e.data.length;
  }
  view.setUint32(at, crc32c(bytes, 0, at));
  return bytes;
}

/** decodeSegmentFrame never throws: garbage gives a reason, not an exception. */
export function decodeSegmentFrame(bytes: Uint8Array): DecodeResult {
  if (bytes.length < HEADER_BYTES + CHECKSUM_BYTES) return { ok: false, reason: 'payload shorter than a frame header' };
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const bodyEnd = bytes.length - CHECKSUM_BYTES;
  if (view.getUint32(bodyEnd) !== crc32c(bytes, 0, bodyEnd)) return { ok: false, reason: 'payload checksum mismatch' };
  let at = 0;
  const version = view.getUint8(at);
  at += 1;
  if (version !== SEGMENT_FRAME_VERSION) return { ok: false, reason: `unknown segment frame version ${version}` };
  const prevSeq = readU64(view, at);
  at += 8;
  const prevTerm = readU64(view, at);
  at += 8;
  const commitSeq = readU64(view, at);
  at += 8;
  const count = view.getUint32(at);
  at += 4;
  if (count > (bodyEnd - at) / ENTRY_HEADER_BYTES) return { ok: false, reason: 'entry count exceeds payload' };
  const entries: Entry[] = [];
  for (let i = 0; i < count; i++) {
    if (at + ENTRY_HEADER_BYTES > bodyEnd) return { ok: false, reason: 'truncated entry header' };
    const seq = readU64(view, at);
    at += 8;
    const term = readU64(view, at);
    at += 8;
    const kind = view.getUint8(at);
    at += 1;
    const length = view.getUint32(at);
    at += 4;
    if (at + length > bodyEnd) return { ok: false, reason: 'truncated entry data' };
    entries.push({ seq, term, kind, data: bytes.slice(at, at + length) });
    at += length;
  }
  if (at !== bodyEnd) return { ok: false, reason: 'trailing bytes after entries' };
  const expected = prevSeq + 1;
  for (let i = 0; i < entries.length; i++) {
    if (entries[i]!.seq !== expected + i) return { ok: false, reason: 'entries are not contiguous after prevSeq' };
    if (entries[i]!.term < (i === 0 ? prevTerm : entries[i - 1]!.term))
      return { ok: false, reason: 'entry terms decrease' };
  }
  if (Number.isNaN(prevSeq) || Number.isNaN(prevTerm) || Number.isNaN(commitSeq))
    return { ok: false, reason: 'u64 field above 2^53' };
  // Beyond VALUE_ROOM_MAX a value leaves no room to increment (values.ts): malformed here too.
  if (
    ![prevSeq, prevTerm, commitSeq].every(isCarriableValue) ||
    !entries.every((e) => isCarriableValue(e.seq) && isCarriableValue(e.term))
  ) {
    return { ok: false, reason: 'u64 field beyond the carriable maximum (2^53 - 2)' };
  }
  return { ok: true, frame: { prevSeq, prevTerm, commitSeq, entries } };
}

function writeU64(view: DataView, at: number, value: number): number {
  view.setUint32(at, Math.floor(value / 0x1_0000_0000));
  view.setUint32(at + 4, value >>> 0);
  return at + 8;
}

function readU64(view: DataView, at: number): number {
  const high = view.getUint32(at);
  if (high >= 0x20_0000) return NaN;
  return high * 0x1_0000_0000 + view.getUint32(at + 4);
}
