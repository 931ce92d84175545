// scanSegment splits a segment file into good records and, at most, one bad spot. Whether a bad
// spot is a torn tail (cut it) or corruption (report it) depends on what follows it.
import {
  parseRecord,
  RECORD_HEADER_BYTES,
  RECORD_TYPE_ENTRY,
  RECORD_TYPE_TRUNCATE,
  type WalRecord,
} from './wal-record.js';

export interface ScannedRecord {
  record: WalRecord;
  /** end is the file offset just past the record. */
  end: number;
}

export interface BadSpot {
  offset: number;
  reason: string;
  /** validRecordAfter is true when a well-formed record sits somewhere after the bad spot. */
  validRecordAfter: boolean;
}

export interface SegmentScan {
  records: ScannedRecord[];
  /** goodBytes is the length of the well-formed prefix. */
  goodBytes: number;
  bad: BadSpot | null;
}

export function scanSegment(bytes: Buffer, recordBytesMax: number): SegmentScan {
  const records: ScannedRecord[] = [];
  let at = 0;
  while (at < bytes.length) {
    const parsed = parseRecord(bytes, at, bytes.length, recordBytesMax);
    if (!parsed.ok) {
      return {
        records,
        goodBytes: at,
        bad: { offset: at, reason: parsed.reason, validRecordAfter: hasValidRecordAfter(bytes, at, recordBytesMax) },
      };
    }
    records.push({ record: parsed.record, end: parsed.next });
    at = parsed.next;
  }
  return { records, goodBytes: at, bad: null };
}

/**
 * hasValidRecordAfter looks at every later offset for a record that passes its checksum. A torn
 * write leaves only garbage (or zeros) after the bad spot; a durable record after it means the bad
 * spot is corruption inside data that was once synced, which must never be cut silently.
 */
function hasValidRecordAfter(bytes: Buffer, badOffset: number, recordBytesMax: number): boolean {
  for (let at = badOffset + 1; at + RECORD_HEADER_BYTES < bytes.length; at++) {
    const type = bytes[at + RECORD_HEADER_BYTES];
    if (type !== RECORD_TYPE_ENTRY && type !== RECORD_TYPE_TRUNCATE) continue;
    if (parseRecord(bytes, at, bytes.length, recordBytesMax).ok) return true;
  }
  return false;
}
