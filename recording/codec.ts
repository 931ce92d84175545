// The recording's JSON encoding. Bytes are tagged objects so a line stays one JSON value:
//
//   {"$b": base64}             bytes recorded as they are (rosters, snapshot hashes, full payloads)
//   {"$r": [length, hash]}     a store value redacted: its length and keyed hash (PayloadMode `hashed`)
//   {"$f": frame}              a ShipSegment payload recorded as its decoded frame (values inside redacted)
//   {"$x": [length, hash, why]} a payload that did not decode, redacted
//
// Which bytes are the store's values: the data of EventBatch entries (kind 1) and of proposals. The
// engine never looks inside them (it reads their length for its size bounds, and the frame's checksum
// covers them), so a replay fills each with zeros of the recorded length and re-encodes each frame: the
// engine sees the same lengths, kinds, terms and a valid checksum, and takes the same decisions. Other
// entry kinds (membership rosters, term barriers) are read by the engine and are never secret: recorded whole.
import { createHmac } from 'node:crypto';
import { decodeSegmentFrame, encodeSegmentFrame } from '../engine/segment-frame.js';
import { EntryKind, type Entry } from '../engine/types.js';
import type { PayloadMode } from './format.js';

/** RedactKey keys the value hashes (HMAC-SHA-256): a value cannot be guessed from its hash without the node's key. */
export type RedactKey = Uint8Array;

type Holder = Record<string, unknown>;

/** encodeLine is one recording line; `hashed` mode redacts the store's values with `key`. */
export function encodeLine(value: unknown, mode: PayloadMode, key: RedactKey): string {
  return JSON.stringify(value, function (this: Holder, name: string, serialized: unknown) {
    // A Buffer has a toJSON that ran already: the holder has the bytes themselves.
    const v = this[name];
    if (!(v instanceof Uint8Array)) return serialized;
    if (mode === 'full') return { $b: Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('base64') };
    if (name === 'payload') return redactFrame(v, key);
    if (name === 'data' && isValue(this)) return { $r: [v.length, valueHash(v, key)] };
    return { $b: Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('base64') };
  });
}

/** isValue: bytes under `data` are a store value unless their holder is an entry of another kind. */
function isValue(holder: Holder): boolean {
  const kind = holder.kind;
  return typeof kind !== 'number' || kind === EntryKind.EventBatch;
}

export function valueHash(bytes: Uint8Array, key: RedactKey): string {
  return createHmac('sha256', key).update(bytes).digest('base64url').slice(0, 22);
}

function redactFrame(payload: Uint8Array, key: RedactKey): unknown {
  const decoded = decodeSegmentFrame(payload);
  if (!decoded.ok) return { $x: [payload.length, valueHash(payload, key), decoded.reason] };
  // The entries' data goes through the replacer again: kind-1 data is redacted there.
  return { $f: decoded.frame };
}

/** decodeLine parses one line and revives its bytes (redacted values become zeros of their length). */
export function decodeLine(text: string): unknown {
  return JSON.parse(text, (_name: string, v: unknown) => {
    if (typeof v !== 'object' || v === null || Array.isArray(v)) return v;
    const tagged = v as Record<string, unknown>;
    if (typeof tagged.$b === 'string') return new Uint8Array(Buffer.from(tagged.$b, 'base64'));
    if (Array.isArray(tagged.$r)) return new Uint8Array(lengthOf(tagged.$r[0]));
    if (typeof tagged.$f === 'object' && tagged.$f !== null) return encodeSegmentFrame(reviveFrame(tagged.$f));
    if (Array.isArray(tagged.$x)) return undecodablePayload(lengthOf(tagged.$x[0]), String(tagged.$x[2]));
    return v;
  });
}

/** RECORDED_BYTES_MAX bounds one revived byte string (a line is input: it must not make us allocate without bound). */
export const RECORDED_BYTES_MAX = 64 * 1024 * 1024;

function lengthOf(value: unknown): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0 || value > RECORDED_BYTES_MAX)
    throw new Error(`recorded length ${String(value)} is not a length up to ${RECORDED_BYTES_MAX}`);
  return value;
}

function reviveFrame(raw: object): { prevSeq: number; prevTerm: number; commitSeq: number; entries: Entry[] } {
  const frame = raw as { prevSeq: unknown; prevTerm: unknown; commitSeq: unknown; entries: unknown };
  if (!Array.isArray(frame.entries)) throw new Error('recorded frame has no entries list');
  return {
    prevSeq: Number(frame.prevSeq),
    prevTerm: Number(frame.prevTerm),
    commitSeq: Number(frame.commitSeq),
    entries: frame.entries as Entry[],
  };
}

/**
 * undecodablePayload stands in for a payload that did not decode when it was recorded: bytes of the same
 * length that fail the same first check (too short for a header, or a checksum mismatch). A payload that
 * failed a later check replays as a checksum mismatch: its step's digest can differ (the reply's detail
 * text names the reason); record with full payloads to replay such a step exactly.
 */
function undecodablePayload(length: number, reason: string): Uint8Array {
  const bytes = new Uint8Array(length);
  if (reason !== 'payload shorter than a frame header' && length >= 4) bytes[length - 1] = 1;
  return bytes;
}
