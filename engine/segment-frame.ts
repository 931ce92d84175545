// SegmentFrame is the ShipSegmentRequest.payload layout (docs/protocol.md, "Segment frame"):
//
//   u8  version (=1)
//   u64 prevSeq, u64 prevTerm   the entry just before the first one, for the log-matching check
//   u64 commitSeq               the leader's commit seqno
//   u32 entryCount
//   entryCount x { u64 seq, u64 term, u8 kind, u32 length, length bytes }
//   u32 crc32c of everything above
//
// Version 2 is the filtered frame a leader ships a filtered member (engine/communities.ts): the same
// header and entries (only those of the member's communities, plus every term barrier and membership
// record), then
//
//   u64 filterEpoch   the seq of the membership record that set the filter this frame was cut by
//   u32 runCount
//   runCount x { u64 fromSeq, u64 toSeq, u64 term }   seqs whose event batches were withheld
//
// before the crc. Carried entries and runs together cover (prevSeq, end] exactly once, in order, with
// non-decreasing terms; the decoder rebuilds the contiguous list with withheld placeholders
// (EntryKind.Withheld), so the receiver's log keeps the leader's numbering and terms.
//
// u64 fields are written as two u32 halves (big-endian) and must not exceed VALUE_ROOM_MAX (values.ts).
import { crc32c } from './crc32c.js';
import { EntryKind, type Entry } from './types.js';
import { isCarriableValue } from './values.js';

export const SEGMENT_FRAME_VERSION = 1;
/** FILTERED_SEGMENT_FRAME_VERSION: the frame carrying withheld runs. */
export const FILTERED_SEGMENT_FRAME_VERSION = 2;
/** FILTERED_FRAME_COVER_COUNT_MAX bounds the seqs one filtered frame may cover (withheld runs make few bytes cover many). */
export const FILTERED_FRAME_COVER_COUNT_MAX = 65_536;
/**
 * FILTERED_SHIP_COVER_COUNT_MAX bounds the seqs one ship to a filtered member covers (engine/core.ts
 * filteredSlice): well under FILTERED_FRAME_COVER_COUNT_MAX, so a ship reads a bounded stretch of the log.
 */
export const FILTERED_SHIP_COVER_COUNT_MAX = 4_096;
const RUN_BYTES = 8 + 8 + 8;
const HEADER_BYTES = 1 + 8 + 8 + 8 + 4;
const ENTRY_HEADER_BYTES = 8 + 8 + 1 + 4;
const CHECKSUM_BYTES = 4;

export interface SegmentFrame {
  prevSeq: number;
  prevTerm: number;
  commitSeq: number;
  /** entries: contiguous after prevSeq; in a filtered frame withheld ones are EntryKind.Withheld placeholders. */
  entries: Entry[];
  /** filtered: a version-2 frame for a filtered member (withheld entries travel as runs); absent = version 1. */
  filtered?: boolean;
  /**
   * filterEpoch (version 2): the seq of the membership record that set the filter this frame was cut by. A
   * member holding data cut by another filter drops it first (engine/core.ts takesFrameKind).
   */
  filterEpoch?: number;
}

export type DecodeResult = { ok: true; frame: SegmentFrame } | { ok: false; reason: string };

/** segmentFrameBytes is the encoded size of a version-1 frame holding these entries. */
export function segmentFrameBytes(entries: readonly Entry[]): number {
  let size = HEADER_BYTES + CHECKSUM_BYTES;
  for (const e of entries) size += ENTRY_HEADER_BYTES + e.data.length;
  return size;
}

interface WithheldRun {
  fromSeq: number;
  toSeq: number;
  term: number;
}

/** withheldRuns groups consecutive withheld placeholders of one term into runs. */
function withheldRuns(entries: readonly Entry[]): WithheldRun[] {
  const runs: WithheldRun[] = [];
  for (const e of entries) {
    if (e.kind !== EntryKind.Withheld) continue;
    const last = runs[runs.length - 1];
    if (last && last.toSeq + 1 === e.seq && last.term === e.term) last.toSeq = e.seq;
    else runs.push({ fromSeq: e.seq, toSeq: e.seq, term: e.term });
  }
  return runs;
}

export function encodeSegmentFrame(frame: SegmentFrame): Uint8Array {
  const filtered = frame.filtered === true;
  const carried = filtered ? frame.entries.filter((e) => e.kind !== EntryKind.Withheld) : frame.entries;
  const runs = filtered ? withheldRuns(frame.entries) : [];
  const bytes = new Uint8Array(segmentFrameBytes(carried) + (filtered ? 8 + 4 + runs.length * RUN_BYTES : 0));
  const view = new DataView(bytes.buffer);
  let at = 0;
  view.setUint8(at, filtered ? FILTERED_SEGMENT_FRAME_VERSION : SEGMENT_FRAME_VERSION);
  at += 1;
  at = writeU64(view, at, frame.prevSeq);
  at = writeU64(view, at, frame.prevTerm);
  at = writeU64(view, at, frame.commitSeq);
  view.setUint32(at, carried.length);
  at += 4;
  for (const e of carried) {
    at = writeU64(view, at, e.seq);
    at = writeU64(view, at, e.term);
    view.setUint8(at, e.kind);
    at += 1;
    view.setUint32(at, e.data.length);
    at += 4;
    bytes.set(e.data, at);
    at += e.data.length;
  }
  if (filtered) {
    at = writeU64(view, at, frame.filterEpoch ?? 0);
    view.setUint32(at, runs.length);
    at += 4;
    for (const r of runs) {
      at = writeU64(view, at, r.fromSeq);
      at = writeU64(view, at, r.toSeq);
      at = writeU64(view, at, r.term);
    }
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
  if (version !== SEGMENT_FRAME_VERSION && version !== FILTERED_SEGMENT_FRAME_VERSION)
    return { ok: false, reason: `unknown segment frame version ${version}` };
  const filtered = version === FILTERED_SEGMENT_FRAME_VERSION;
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
    if (filtered && kind === EntryKind.Withheld) return { ok: false, reason: 'a withheld entry travels as a run' };
    entries.push({ seq, term, kind, data: bytes.slice(at, at + length) });
    at += length;
  }
  let filterEpoch = 0;
  if (filtered) {
    if (at + 8 > bodyEnd) return { ok: false, reason: 'filtered frame without its filter epoch' };
    filterEpoch = readU64(view, at);
    at += 8;
    if (!isCarriableValue(filterEpoch))
      return { ok: false, reason: 'u64 field beyond the carriable maximum (2^53 - 2)' };
    const merged = mergeRuns(view, at, bodyEnd, prevSeq, entries);
    if (typeof merged === 'string') return { ok: false, reason: merged };
    entries.splice(0, entries.length, ...merged);
    at = bodyEnd;
  }
  if (at !== bodyEnd) return { ok: false, reason: 'trailing bytes after entries' };
  const problem = decodedFrameProblem(prevSeq, prevTerm, commitSeq, entries);
  if (problem !== null) return { ok: false, reason: problem };
  return {
    ok: true,
    frame: filtered
      ? { prevSeq, prevTerm, commitSeq, entries, filtered, filterEpoch }
      : { prevSeq, prevTerm, commitSeq, entries },
  };
}

/** decodedFrameProblem: what makes a decoded frame's positions malformed (null when nothing does). */
function decodedFrameProblem(prevSeq: number, prevTerm: number, commitSeq: number, entries: Entry[]): string | null {
  const expected = prevSeq + 1;
  for (let i = 0; i < entries.length; i++) {
    if (entries[i]!.seq !== expected + i) return 'entries are not contiguous after prevSeq';
    if (entries[i]!.term < (i === 0 ? prevTerm : entries[i - 1]!.term)) return 'entry terms decrease';
  }
  if (Number.isNaN(prevSeq) || Number.isNaN(prevTerm) || Number.isNaN(commitSeq)) return 'u64 field above 2^53';
  // Beyond VALUE_ROOM_MAX a value leaves no room to increment (values.ts): malformed here too.
  if (
    ![prevSeq, prevTerm, commitSeq].every(isCarriableValue) ||
    !entries.every((e) => isCarriableValue(e.seq) && isCarriableValue(e.term))
  )
    return 'u64 field beyond the carriable maximum (2^53 - 2)';
  return null;
}

/**
 * mergeRuns reads a filtered frame's withheld runs (from `at` to the checksum) and merges them with the
 * carried entries into the contiguous list after prevSeq; a reason when they do not tile it exactly.
 * The contiguity and term checks of every frame then run on the result.
 */
function mergeRuns(view: DataView, at: number, bodyEnd: number, prevSeq: number, carried: Entry[]): Entry[] | string {
  if (at + 4 > bodyEnd) return 'filtered frame without its run count';
  const runCount = view.getUint32(at);
  at += 4;
  if (at + runCount * RUN_BYTES !== bodyEnd) return 'withheld runs do not fill the frame';
  const out: Entry[] = [];
  let next = 0;
  let expected = prevSeq + 1;
  const takeCarried = (upTo: number): string | null => {
    while (next < carried.length && carried[next]!.seq < upTo) {
      if (carried[next]!.seq !== expected) return 'entries and withheld runs are not contiguous after prevSeq';
      out.push(carried[next]!);
      next++;
      expected++;
    }
    return null;
  };
  for (let i = 0; i < runCount; i++) {
    const fromSeq = readU64(view, at);
    const toSeq = readU64(view, at + 8);
    const term = readU64(view, at + 16);
    at += RUN_BYTES;
    if (![fromSeq, toSeq, term].every(isCarriableValue) || toSeq < fromSeq) return 'malformed withheld run';
    const problem = takeCarried(fromSeq);
    if (problem) return problem;
    if (fromSeq !== expected) return 'entries and withheld runs are not contiguous after prevSeq';
    if (toSeq - prevSeq > FILTERED_FRAME_COVER_COUNT_MAX)
      return `filtered frame covers more than ${FILTERED_FRAME_COVER_COUNT_MAX} seqs`;
    for (let s = fromSeq; s <= toSeq; s++)
      out.push({ seq: s, term, kind: EntryKind.Withheld, data: new Uint8Array(0) });
    expected = toSeq + 1;
  }
  const problem = takeCarried(Number.MAX_SAFE_INTEGER);
  return problem ?? out;
}

function writeU64(view: DataView, at: number, value: number): number {
  view.setUint32(at, Math.floor(value / 0x1_0000_0000));
  view.setUint32(at + 4, value >>> 0);
  return at + 8;
}

function readU64(view: DataView, at: number): number {
  const high = view.getUint32(at);
  // The usual case (below 2^32) returns the low half as it is: an arithmetic result with the 2^32 constant
  // is a boxed double in unoptimised code even when it is a small whole number, and a double stored into a
  // small-integer field (an entry's seq, a status's commitSeq, ...) turns that field into a double field for
  // the rest of the process (a map change, deoptimised code, a boxed number per store).
  if (high === 0) return view.getUint32(at + 4);
  if (high >= 0x20_0000) return NaN;
  return high * 0x1_0000_0000 + view.getUint32(at + 4);
}
