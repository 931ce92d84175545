// The recording's JSON encoding. Bytes are tagged objects so a line stays one JSON value:
//
//   {"$b": base64}             bytes recorded as they are (rosters, snapshot hashes, full payloads)
//   {"$r": [length, hash]}     a store value redacted: its length and keyed hash (PayloadMode `hashed`)
//   {"$s": skeleton}           a ShipSegment payload as its fields, values by length (recording/frame-redact.ts)
//   {"$f": frame}              a ShipSegment payload as its decoded frame (format 1; format 2 writes `$s`,
//                              and `$f` only if the decoder took a payload the skeleton reader did not)
//   {"$x": [length, hash, why]} a payload that did not decode, redacted
//
// Which bytes are the store's values: the data of EventBatch entries (kind 1) and of proposals. The
// engine never looks inside them (it reads their length for its size bounds, and the frame's checksum
// covers them), so a replay fills each with zeros of the recorded length and re-encodes each frame: the
// engine sees the same lengths, kinds, terms and a valid checksum, and takes the same decisions. Other
// entry kinds (membership rosters, term barriers) are read by the engine and are never secret: recorded whole.
import * as crypto from 'node:crypto';
import { decodeSegmentFrame, encodeSegmentFrame } from '../engine/segment-frame.js';
import { EntryKind, type Entry } from '../engine/types.js';
import type { PayloadMode } from './format.js';
import { redactedFrame, skeletonFrame } from './frame-redact.js';

/**
 * RedactKey keys the value hashes: SHA-256 of the node's 32 random key bytes followed by the value (format
 * 2; format 1 used HMAC-SHA-256, three times the cost per value). With the key secret and first, the hash
 * is a pseudo-random function of the value: it cannot be guessed or checked against a guess without the key.
 */
export type RedactKey = Uint8Array;

/**
 * LENGTHS_ONLY in place of a key redacts values to their length alone ({"$r":[length]}): a checkpoint's
 * log (recorder.ts) holds thousands of values a replay only needs the length of, and a hash each would
 * cost time and bytes at every rotation.
 */
export const LENGTHS_ONLY = null;

type Holder = Record<string, unknown>;

/**
 * encodeLine is one recording line; `hashed` mode redacts the store's values with `key`. The bytes are
 * swapped for their tagged form in a copy of the path to them (the rest is shared), then the copy is
 * stringified natively: a JSON replacer (format 1) cost a call into JS per property, and Buffer's
 * toJSON turned every byte into a number before the replacer saw it.
 */
export function encodeLine(value: unknown, mode: PayloadMode, key: RedactKey | null): string {
  return JSON.stringify(recordable(value, '', null, mode, key));
}

/** recordable is `value` with every Uint8Array under it in its tagged form; objects without bytes are shared. */
function recordable(
  value: unknown,
  name: string,
  holder: Holder | null,
  mode: PayloadMode,
  key: RedactKey | null,
): unknown {
  if (typeof value !== 'object' || value === null) return value;
  if (value instanceof Uint8Array) return taggedBytes(value, name, holder, mode, key);
  if (Array.isArray(value)) {
    let copy: unknown[] | null = null;
    for (let i = 0; i < value.length; i++) {
      const v: unknown = value[i];
      if (typeof v !== 'object' || v === null) continue;
      const r = recordable(v, '', null, mode, key);
      if (r !== v) (copy ??= value.slice())[i] = r;
    }
    return copy ?? value;
  }
  const record = value as Holder;
  if (typeof record.toJSON === 'function') return value;
  let copy: Holder | null = null;
  for (const k in record) {
    if (!Object.prototype.hasOwnProperty.call(record, k)) continue;
    const v = record[k];
    if (typeof v !== 'object' || v === null) continue;
    const r = recordable(v, k, record, mode, key);
    if (r !== v) (copy ??= { ...record })[k] = r;
  }
  return copy ?? value;
}

function taggedBytes(
  v: Uint8Array,
  name: string,
  holder: Holder | null,
  mode: PayloadMode,
  key: RedactKey | null,
): unknown {
  if (mode === 'hashed') {
    if (name === 'payload') return redactFrame(v, key);
    if (name === 'data' && holder !== null && isValue(holder))
      return { $r: key === null ? [v.length] : [v.length, valueHash(v, key)] };
  }
  return { $b: Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('base64') };
}

/** isValue: bytes under `data` are a store value unless their holder is an entry of another kind. */
function isValue(holder: Holder): boolean {
  const kind = holder.kind;
  return typeof kind !== 'number' || kind === EntryKind.EventBatch;
}

// crypto.hash (one call, no Hash object) is Node 20.12 and later; package.json allows any Node 20.
const oneShotHash = (
  crypto as { hash?: (algorithm: string, data: Uint8Array, encoding: 'base64url' | 'latin1') => string }
).hash;

/** SCRATCH_BYTES: values up to this size (with the key) are hashed from one reused buffer, not a new one each. */
const SCRATCH_BYTES = 16 * 1024;
const scratch = Buffer.alloc(SCRATCH_BYTES);

export function valueHash(bytes: Uint8Array, key: RedactKey): string {
  return keyedHash(bytes, key, 'base64url').slice(0, 22);
}

/**
 * valueHashLatin1 is the same keyed SHA-256 as one char per byte (format 5 records its first 16 bytes as
 * they are: no base64 to build, the cheapest of Node's digest encodings to take out).
 */
export function valueHashLatin1(bytes: Uint8Array, key: RedactKey): string {
  return keyedHash(bytes, key, 'latin1');
}

/** BATCH_SCRATCH_BYTES_MAX: a batch of values up to this size (with the key and lengths) is hashed from one reused buffer. */
const BATCH_SCRATCH_BYTES_MAX = 1024 * 1024;
let batchScratch = Buffer.alloc(64 * 1024);

/**
 * batchValueHashLatin1 is format 6's hash of a batch of store values: SHA-256 of the key, then each value's
 * length (4 bytes, little-endian) and bytes, as one char per byte. One keyed hash call for a whole batch
 * rather than one per value: at 64 writers a leader's proposeBatch carries ~64 values, and one native
 * hash call per value (with the string it returns, written into the record) was most of the leader's
 * recording CPU (bench/recorder-step.ts). The lengths make the concatenation unambiguous, so the hash still
 * commits to every value, and with the key secret and first nothing about them can be guessed or checked
 * without the key. What is lost is a hash per value: a recording says which batch of values a step carried,
 * not which value a proposal held on its own (nothing reads either: a replay needs the lengths alone).
 */
export function batchValueHashLatin1(values: readonly { readonly data: Uint8Array }[], key: RedactKey): string {
  let bytes = key.length;
  for (const { data } of values) bytes += 4 + data.length;
  if (bytes > BATCH_SCRATCH_BYTES_MAX) {
    const hash = crypto.createHash('sha256').update(key);
    const length = Buffer.alloc(4);
    for (const { data } of values) {
      length.writeUInt32LE(data.length, 0);
      hash.update(length).update(data);
    }
    return hash.digest('binary');
  }
  if (bytes > batchScratch.length) batchScratch = Buffer.alloc(Math.min(BATCH_SCRATCH_BYTES_MAX, 2 * bytes));
  const b = batchScratch;
  b.set(key, 0);
  let at = key.length;
  for (const { data } of values) {
    const n = data.length;
    b[at] = n;
    b[at + 1] = n >>> 8;
    b[at + 2] = n >>> 16;
    b[at + 3] = n >>> 24;
    b.set(data, at + 4);
    at += 4 + n;
  }
  const keyed = b.subarray(0, at);
  return oneShotHash
    ? oneShotHash('sha256', keyed, 'latin1')
    : crypto.createHash('sha256').update(keyed).digest('binary');
}

function keyedHash(bytes: Uint8Array, key: RedactKey, encoding: 'base64url' | 'latin1'): string {
  let keyed: Buffer;
  if (key.length + bytes.length <= SCRATCH_BYTES) {
    scratch.set(key, 0);
    scratch.set(bytes, key.length);
    keyed = scratch.subarray(0, key.length + bytes.length);
  } else keyed = Buffer.concat([key, bytes]);
  return oneShotHash
    ? oneShotHash('sha256', keyed, encoding)
    : crypto
        .createHash('sha256')
        .update(keyed)
        .digest(encoding === 'latin1' ? 'binary' : encoding);
}

function redactFrame(payload: Uint8Array, key: RedactKey | null): unknown {
  const skeleton = redactedFrame(payload);
  if (skeleton) return { $s: skeleton };
  const decoded = decodeSegmentFrame(payload);
  if (!decoded.ok) return { $x: [payload.length, key === null ? '' : valueHash(payload, key), decoded.reason] };
  // The entries' data goes through recordable: kind-1 data is redacted there.
  return { $f: recordable(decoded.frame, '', null, 'hashed', key) };
}

/** decodeLine parses one line and revives its bytes (redacted values become zeros of their length). */
export function decodeLine(text: string): unknown {
  return JSON.parse(text, (_name: string, v: unknown) => {
    if (typeof v !== 'object' || v === null || Array.isArray(v)) return v;
    const tagged = v as Record<string, unknown>;
    if (typeof tagged.$b === 'string') return new Uint8Array(Buffer.from(tagged.$b, 'base64'));
    if (Array.isArray(tagged.$r)) return new Uint8Array(lengthOf(tagged.$r[0]));
    if (typeof tagged.$f === 'object' && tagged.$f !== null) return encodeSegmentFrame(reviveFrame(tagged.$f));
    if (tagged.$s !== undefined) return encodeSegmentFrame(skeletonFrame(tagged.$s, RECORDED_BYTES_MAX));
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
