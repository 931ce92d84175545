// redactedFrame: a ShipSegment payload as the recording's skeleton `{"$s": [...]}`, read in place. It is
// the common case of recording a follower's steps (every shipped segment), and engine/segment-frame.ts
// decodeSegmentFrame, which format 1 called, copies every entry's data out of the payload and builds
// entries the recording then copied again and wrote as an object each. The skeleton is one flat array:
//
//   [prevSeq, prevTerm, commitSeq, term, kind, data, term, kind, data, ...]
//
// an entry a triple, its seq implied (prevSeq + 1 + its index: a frame with any other seq is not accepted),
// `data` a value's length (kind 1) or the entry's bytes in base64 (membership records, barriers: the
// engine reads them, none is secret).
//
// It accepts exactly the frames decodeSegmentFrame accepts (the same checks, checksum first); for any
// other payload it answers null and the caller records it through decodeSegmentFrame, which names the reason.
//
// The values inside a shipped segment are recorded by length only: their keyed hashes are in the leader's
// recording, where each value entered the cluster as a proposal, and hashing every value again on every
// follower was a third of a follower's recording work. A replay needs only the length.
import { crc32cFast } from './crc32c-fast.js';
import { SEGMENT_FRAME_VERSION, type SegmentFrame } from '../engine/segment-frame.js';
import { EntryKind, type Entry } from '../engine/types.js';
import { isCarriableValue } from '../engine/values.js';

const HEADER_BYTES = 1 + 8 + 8 + 8 + 4;
const ENTRY_HEADER_BYTES = 8 + 8 + 1 + 4;
const CHECKSUM_BYTES = 4;

/** FrameSkeleton: the flat array described at the head of this file. */
export type FrameSkeleton = Array<number | string>;

/** redactedFrame is the frame's skeleton, or null when decodeSegmentFrame would refuse the payload. */
export function redactedFrame(bytes: Uint8Array): FrameSkeleton | null {
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
  const skeleton: FrameSkeleton = [prevSeq, prevTerm, commitSeq];
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
    skeleton.push(
      term,
      kind,
      kind === EntryKind.EventBatch
        ? length
        : Buffer.from(bytes.buffer, bytes.byteOffset + at, length).toString('base64'),
    );
    at += length;
  }
  if (at !== bodyEnd) return null;
  return skeleton;
}

/**
 * skeletonFrame revives a recorded skeleton as the frame a replay feeds the engine (values as zeros of
 * their length). A recording line is input: anything that is not a skeleton throws, naming what;
 * `bytesMax` bounds what it allocates.
 */
export function skeletonFrame(raw: unknown, bytesMax: number): SegmentFrame {
  if (!Array.isArray(raw) || raw.length < 3 || (raw.length - 3) % 3 !== 0)
    throw new Error('recorded frame skeleton is not [prevSeq, prevTerm, commitSeq, (term, kind, data)...]');
  const [prevSeq, prevTerm, commitSeq] = raw.slice(0, 3).map((v) => wholeNumber(v, 'a frame field'));
  const entries: Entry[] = [];
  let total = 0;
  for (let at = 3; at < raw.length; at += 3) {
    const term = wholeNumber(raw[at], 'an entry term');
    const kind = wholeNumber(raw[at + 1], 'an entry kind');
    if (kind > 255) throw new Error(`recorded entry kind ${kind} is not a byte`);
    const data: unknown = raw[at + 2];
    if (typeof data !== 'number' && typeof data !== 'string')
      throw new Error('recorded entry data is neither a length nor base64');
    // Base64 holds three bytes in four chars: the bound is checked before anything is allocated.
    total += typeof data === 'number' ? wholeNumber(data, 'a value length') : Math.ceil((data.length * 3) / 4);
    if (total > bytesMax) throw new Error(`recorded frame holds more than ${bytesMax} bytes`);
    const bytes = typeof data === 'number' ? new Uint8Array(data) : new Uint8Array(Buffer.from(data, 'base64'));
    entries.push({ seq: prevSeq! + 1 + entries.length, term, kind, data: bytes });
  }
  return { prevSeq: prevSeq!, prevTerm: prevTerm!, commitSeq: commitSeq!, entries };
}

function wholeNumber(value: unknown, what: string): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0)
    throw new Error(`recorded ${what} ${String(value)} is not a whole number`);
  return value;
}

/** readU64 as decodeSegmentFrame reads it: NaN above 2^53, which isCarriableValue then refuses. */
function readU64(view: DataView, at: number): number {
  const high = view.getUint32(at);
  if (high >= 0x20_0000) return NaN;
  return high * 0x1_0000_0000 + view.getUint32(at + 4);
}
