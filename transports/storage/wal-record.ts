// WalRecord is the unit a WAL segment file is made of. The checksum is CRC-32C (Castagnoli, the
// engine's own table code) over the length and the body, so a garbled length is caught too:
//
//   u32 crc32c(of the 4 + bodyBytes bytes that follow)
//   u32 bodyBytes
//   body:
//     u8 type
//     type 1 (entry):    u64 seq, u64 term, u8 kind, data (the rest of the body)
//     type 2 (truncate): u64 fromSeq   the log now ends at fromSeq - 1 (drop fromSeq and after);
//                                      a fromSeq past the end restarts the log at fromSeq
//
// Integers are big-endian; u64 fields are two u32 halves and stay below 2^53.
import { crc32c } from '../../engine/crc32c.js';
import type { Entry } from '../../engine/types.js';

export const RECORD_HEADER_BYTES = 8;
export const RECORD_TYPE_ENTRY = 1;
export const RECORD_TYPE_TRUNCATE = 2;
const ENTRY_BODY_FIXED_BYTES = 1 + 8 + 8 + 1;
const TRUNCATE_BODY_BYTES = 1 + 8;

export type WalRecord = { type: 'entry'; entry: Entry } | { type: 'truncate'; fromSeq: number };

export type ParseResult = { ok: true; record: WalRecord; next: number } | { ok: false; reason: string };

/** entryRecordBytes is the encoded size of one entry record. */
export function entryRecordBytes(dataBytes: number): number {
  return RECORD_HEADER_BYTES + ENTRY_BODY_FIXED_BYTES + dataBytes;
}

export const TRUNCATE_RECORD_BYTES = RECORD_HEADER_BYTES + TRUNCATE_BODY_BYTES;

/** EncodedRecords is one append's records in one buffer; recordEnds marks where each record ends. */
export interface EncodedRecords {
  bytes: Buffer;
  recordEnds: number[];
  /** seqs[i] is the entry seq record i carries, 0 for a truncate record. */
  seqs: number[];
}

/** encodeRecords writes an optional truncate record, then one record per entry. */
export function encodeRecords(truncateFromSeq: number | null, entries: readonly Entry[]): EncodedRecords {
  let size = truncateFromSeq === null ? 0 : TRUNCATE_RECORD_BYTES;
  for (const e of entries) size += entryRecordBytes(e.data.length);
  const bytes = Buffer.allocUnsafe(size);
  const recordEnds: number[] = [];
  const seqs: number[] = [];
  let at = 0;
  if (truncateFromSeq !== null) {
    const bodyAt = at + RECORD_HEADER_BYTES;
    bytes.writeUInt8(RECORD_TYPE_TRUNCATE, bodyAt);
    writeU64(bytes, bodyAt + 1, truncateFromSeq);
    at = sealRecord(bytes, at, TRUNCATE_BODY_BYTES);
    recordEnds.push(at);
    seqs.push(0);
  }
  for (const e of entries) {
    const bodyAt = at + RECORD_HEADER_BYTES;
    bytes.writeUInt8(RECORD_TYPE_ENTRY, bodyAt);
    writeU64(bytes, bodyAt + 1, e.seq);
    writeU64(bytes, bodyAt + 9, e.term);
    bytes.writeUInt8(e.kind, bodyAt + 17);
    bytes.set(e.data, bodyAt + ENTRY_BODY_FIXED_BYTES);
    at = sealRecord(bytes, at, ENTRY_BODY_FIXED_BYTES + e.data.length);
    recordEnds.push(at);
    seqs.push(e.seq);
  }
  return { bytes, recordEnds, seqs };
}

function sealRecord(bytes: Buffer, at: number, bodyBytes: number): number {
  bytes.writeUInt32BE(bodyBytes, at + 4);
  const end = at + RECORD_HEADER_BYTES + bodyBytes;
  bytes.writeUInt32BE(crc32c(bytes, at + 4, end), at);
  return end;
}

/**
 * parseRecord reads the record at `at`; it never throws. A record is bad when it runs past `end`,
 * is longer than `recordBytesMax`, fails its checksum or has a malformed body.
 */
export function parseRecord(bytes: Buffer, at: number, end: number, recordBytesMax: number): ParseResult {
  if (end - at < RECORD_HEADER_BYTES) return { ok: false, reason: 'record header cut short' };
  const bodyBytes = bytes.readUInt32BE(at + 4);
  if (bodyBytes < 1 || RECORD_HEADER_BYTES + bodyBytes > recordBytesMax)
    return { ok: false, reason: `implausible record length ${bodyBytes}` };
  const next = at + RECORD_HEADER_BYTES + bodyBytes;
  if (next > end) return { ok: false, reason: 'record body cut short' };
  if (bytes.readUInt32BE(at) !== crc32c(bytes, at + 4, next)) return { ok: false, reason: 'record checksum mismatch' };
  const bodyAt = at + RECORD_HEADER_BYTES;
  const type = bytes.readUInt8(bodyAt);
  if (type === RECORD_TYPE_ENTRY) {
    if (bodyBytes < ENTRY_BODY_FIXED_BYTES) return { ok: false, reason: 'entry record too short' };
    const seq = readU64(bytes, bodyAt + 1);
    const term = readU64(bytes, bodyAt + 9);
    if (Number.isNaN(seq) || Number.isNaN(term) || seq < 1)
      return { ok: false, reason: 'entry record seq or term out of range' };
    const kind = bytes.readUInt8(bodyAt + 17);
    const data = new Uint8Array(bytes.subarray(bodyAt + ENTRY_BODY_FIXED_BYTES, next));
    return { ok: true, record: { type: 'entry', entry: { seq, term, kind, data } }, next };
  }
  if (type === RECORD_TYPE_TRUNCATE) {
    if (bodyBytes !== TRUNCATE_BODY_BYTES) return { ok: false, reason: 'truncate record has the wrong length' };
    const fromSeq = readU64(bytes, bodyAt + 1);
    if (Number.isNaN(fromSeq) || fromSeq < 1) return { ok: false, reason: 'truncate record seq out of range' };
    return { ok: true, record: { type: 'truncate', fromSeq }, next };
  }
  return { ok: false, reason: `unknown record type ${type}` };
}

function writeU64(bytes: Buffer, at: number, value: number): void {
  bytes.writeUInt32BE(Math.floor(value / 0x1_0000_0000), at);
  bytes.writeUInt32BE(value >>> 0, at + 4);
}

function readU64(bytes: Buffer, at: number): number {
  const high = bytes.readUInt32BE(at);
  if (high >= 0x20_0000) return NaN;
  return high * 0x1_0000_0000 + bytes.readUInt32BE(at + 4);
}
