// The step digest of format 4: a 64-bit hash of a step's effects in their canonical form, what a replay
// compares at every step (recording/digest.ts says which format uses which digest). It hashes the same
// canonical form as format 2's (recording/canonical-hash.ts: what JSON.stringify keeps, in its order; bytes
// as the recording can reproduce them), in fewer words and with less work per value, because it is most of
// the recorder's CPU on a leader (bench/recorder-step.ts):
//
// - an object's key is one word (a 32-bit fingerprint of its name, cached), not four;
// - a short string is two words (its 64-bit fingerprint, cached), a long one its chars, after its tag;
// - a ShipSegment payload (hashed mode) is its frame's skeleton read as raw words: the header, each
//   entry's header (seq, term, kind, length) and the bodies of entries that are not values, never the
//   values nor the checksum over them (a replay has zeros in their place). Its 64-bit sub-hash is kept
//   for the next payload with the same bytes (a leader ships one frame to each follower in the same step);
// - no callbacks and no closures on the way (under tsx every closure made per call costs a property
//   definition for its name).
//
// Not a cryptographic hash: a digest only ever meets the digest of the same step's replay, so a collision
// is an accident of about 2^-64, not an attack. Written here rather than taken from npm for the reason
// canonical-hash.ts gives: the work is the walk, which no package does for us.
import type {
  AppliedReport,
  AppliedReportAck,
  HeartbeatRequest,
  HeartbeatResponse,
  RpcRequest,
  RpcResponse,
  ShipSegmentRequest,
  ShipSegmentResponse,
  WalSegmentId,
} from '../engine/rpc.js';
import { EntryKind } from '../engine/types.js';
import type { Effect, Entry } from '../engine/types.js';
import type { PayloadMode } from './format.js';

const TAG_NULL = 1;
const TAG_FALSE = 2;
const TAG_TRUE = 3;
const TAG_INT = 4;
const TAG_FLOAT = 5;
const TAG_STRING = 6;
const TAG_ARRAY = 7;
const TAG_OBJECT = 8;
const TAG_BYTES = 9;
const TAG_BIGINT = 10;
const TAG_END = 11;
const TAG_LENGTH = 12;
const TAG_FRAME = 13;

/** SHORT_STRING_CHARS: strings shorter than this are fed as their cached fingerprint. */
const SHORT_STRING_CHARS = 64;
/** FINGERPRINT_SLOTS: the direct-mapped cache of short strings' fingerprints (bounded; a hit is one compare). */
const FINGERPRINT_SLOTS = 1024;
const slotStrings: Array<string | undefined> = new Array<string | undefined>(FINGERPRINT_SLOTS);
const slotWords = new Int32Array(FINGERPRINT_SLOTS * 2);

const FRAME_HEADER_BYTES = 1 + 8 + 8 + 8 + 4;
const ENTRY_HEADER_BYTES = 8 + 8 + 1 + 4;
const CHECKSUM_BYTES = 4;

const float = new Float64Array(1);
const floatWords = new Int32Array(float.buffer);

// The hash's state: two murmur3-style lanes and a word count, module-wide (one digest at a time: the walk is
// synchronous). Fields of one object: about a sixth faster than module-level lets (their hole checks).
const lanes = { h1: 0, h2: 0, count: 0 };

function begin(): void {
  lanes.h1 = 0x9747b28c | 0;
  lanes.h2 = 0x5bd1e995 | 0;
  lanes.count = 0;
}

function word(x: number): void {
  let k1 = Math.imul(x, 0xcc9e2d51);
  k1 = (k1 << 15) | (k1 >>> 17);
  lanes.h1 ^= Math.imul(k1, 0x1b873593);
  lanes.h1 = (lanes.h1 << 13) | (lanes.h1 >>> 19);
  lanes.h1 = (Math.imul(lanes.h1, 5) + 0xe6546b64) | 0;
  let k2 = Math.imul(x ^ lanes.h1, 0x85ebca6b);
  k2 = (k2 << 17) | (k2 >>> 15);
  lanes.h2 ^= Math.imul(k2, 0xc2b2ae35);
  lanes.h2 = (lanes.h2 << 11) | (lanes.h2 >>> 21);
  lanes.h2 = (Math.imul(lanes.h2, 9) + 0x2f1fd3a5) | 0;
  lanes.count++;
}

/**
 * word5: format 5's mixing, half format 4's work: per lane an xor, a multiply by an odd constant and a
 * rotation or xorshift, each a bijection of the lane for a given word, so a change in any one word always
 * reaches the end; the finish (fmix, in end) spreads every bit. Format 4's words (the walk of the other
 * effects, strings' and frames' cached sub-hashes) still mix with word.
 */
function word5(x: number): void {
  const a = Math.imul(lanes.h1 ^ x, 0x9e3779b1);
  lanes.h1 = (a << 15) | (a >>> 17);
  const b = Math.imul(lanes.h2 ^ x, 0x85ebca77);
  lanes.h2 = b ^ (b >>> 13);
  lanes.count++;
}

function fmix(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  return h ^ (h >>> 16);
}

/** end finishes the hash into out[0], out[1] (two 32-bit words). */
function end(out: Int32Array): void {
  const a = fmix(lanes.h1 ^ lanes.count);
  const b = fmix(lanes.h2 ^ Math.imul(lanes.count, 0x27d4eb2f) ^ a);
  out[0] = a;
  out[1] = fmix(a ^ b);
}

const HEX: string[] = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'));

function hex8(x: number): string {
  return HEX[(x >>> 24) & 0xff]! + HEX[(x >>> 16) & 0xff]! + HEX[(x >>> 8) & 0xff]! + HEX[x & 0xff]!;
}

/** scratchWords receives a nested hash's result (a string's fingerprint). */
const scratchWords = new Int32Array(2);

/** fingerprintSlot feeds nothing: it answers the slot whose words hold s's 64-bit fingerprint (computed once). */
function fingerprintSlot(s: string): number {
  const n = s.length;
  const slot =
    (Math.imul(n, 0x9e3779b1) ^
      Math.imul(s.charCodeAt(0), 31) ^
      Math.imul(s.charCodeAt(n - 1), 7) ^
      s.charCodeAt(n >> 1)) &
    (FINGERPRINT_SLOTS - 1);
  if (slotStrings[slot] === s) return slot;
  // A nested hash of the chars alone: saved and restored around it (the walk is mid-way through a digest).
  const s1 = lanes.h1;
  const s2 = lanes.h2;
  const sc = lanes.count;
  begin();
  word(n);
  for (let i = 0; i < n; i++) word(s.charCodeAt(i));
  end(scratchWords);
  slotWords[slot * 2] = scratchWords[0]!;
  slotWords[slot * 2 + 1] = scratchWords[1]!;
  slotStrings[slot] = s;
  lanes.h1 = s1;
  lanes.h2 = s2;
  lanes.count = sc;
  return slot;
}

function string(s: string, tag: number): void {
  const n = s.length;
  word(tag);
  if (n === 0) {
    word(0);
    return;
  }
  if (n < SHORT_STRING_CHARS) {
    const slot = fingerprintSlot(s);
    word(slotWords[slot * 2]!);
    word(slotWords[slot * 2 + 1]!);
    return;
  }
  word(n);
  let i = 0;
  for (; i + 1 < n; i += 2) word(s.charCodeAt(i) | (s.charCodeAt(i + 1) << 16));
  if (i < n) word(s.charCodeAt(i));
}

/** key: one word, the first half of the name's fingerprint (names are the engine's few field names). */
function key(name: string): void {
  if (name.length === 0 || name.length >= SHORT_STRING_CHARS) {
    string(name, TAG_STRING);
    return;
  }
  word(slotWords[fingerprintSlot(name) * 2]!);
}

function number(n: number): void {
  if ((n | 0) === n) {
    word(TAG_INT);
    word(n);
  } else if (Number.isFinite(n)) {
    float[0] = n;
    word(TAG_FLOAT);
    word(floatWords[0]!);
    word(floatWords[1]!);
  } else word(TAG_NULL);
}

/** bytes feeds b[from, to) with its tag and length, four bytes a word. */
function bytes(b: Uint8Array, from: number, to: number): void {
  word(TAG_BYTES);
  word(to - from);
  raw(b, from, to);
}

function raw(b: Uint8Array, from: number, to: number): void {
  let i = from;
  for (; i + 3 < to; i += 4) word(b[i]! | (b[i + 1]! << 8) | (b[i + 2]! << 16) | (b[i + 3]! << 24));
  let last = 0;
  for (let shift = 0; i < to; i++, shift += 8) last |= b[i]! << shift;
  if (to > from) word(last);
}

/** FRAME_COMPARE_BYTES: below this a frame's skeleton is hashed again rather than compared with the last. */
const FRAME_COMPARE_BYTES = 1024;

// The last payload hashed and its sub-hash: the next payload with the same bytes reuses it.
let lastFrame: Uint8Array | null = null;
const lastFrameWords = new Int32Array(2);

/** frame feeds a ShipSegment payload (hashed mode) as its skeleton's sub-hash. */
function frame(b: Uint8Array): void {
  word(TAG_FRAME);
  // The same frame object again (a leader ships one encoding to each follower), or, for a frame long enough
  // that hashing its skeleton costs more than comparing, the same bytes again: the kept sub-hash.
  if (
    lastFrame === b ||
    (b.length >= FRAME_COMPARE_BYTES &&
      lastFrame !== null &&
      lastFrame.length === b.length &&
      Buffer.compare(lastFrame, b) === 0)
  ) {
    word(lastFrameWords[0]!);
    word(lastFrameWords[1]!);
    return;
  }
  const s1 = lanes.h1;
  const s2 = lanes.h2;
  const sc = lanes.count;
  begin();
  frameSkeleton(b);
  end(lastFrameWords);
  lanes.h1 = s1;
  lanes.h2 = s2;
  lanes.count = sc;
  // Kept by reference: a frame is never changed once the engine has encoded it.
  lastFrame = b;
  word(lastFrameWords[0]!);
  word(lastFrameWords[1]!);
}

/**
 * frameSkeleton: the frame's length, then (for a frame long enough to have a header) the header, each
 * entry's header, and the body of each entry that is not a value; entries are read while their header
 * fits before the checksum, as engine/segment-frame.ts lays them out (docs/protocol.md, "Segment frame").
 */
function frameSkeleton(b: Uint8Array): void {
  const length = b.length;
  word(length);
  if (length < FRAME_HEADER_BYTES + CHECKSUM_BYTES) return;
  raw(b, 0, FRAME_HEADER_BYTES);
  const entries = ((b[25]! << 24) | (b[26]! << 16) | (b[27]! << 8) | b[28]!) >>> 0;
  const bodyEnd = length - CHECKSUM_BYTES;
  let at = FRAME_HEADER_BYTES;
  for (let i = 0; i < entries && at + ENTRY_HEADER_BYTES <= bodyEnd; i++) {
    raw(b, at, at + ENTRY_HEADER_BYTES);
    const kind = b[at + 16]!;
    const size = ((b[at + 17]! << 24) | (b[at + 18]! << 16) | (b[at + 19]! << 8) | b[at + 20]!) >>> 0;
    const body = at + ENTRY_HEADER_BYTES;
    if (kind !== EntryKind.EventBatch) raw(b, body, Math.min(body + size, bodyEnd));
    at = body + size;
  }
}

/** hashedBytes: in hashed mode, the rule for bytes under `name` in `holder` (format 2's rule, recording/digest.ts). */
function hashedBytes(b: Uint8Array, name: string, holder: Record<string, unknown> | null): void {
  if (name === 'payload') frame(b);
  else if (
    name === 'data' &&
    holder !== null &&
    (typeof holder.kind !== 'number' || holder.kind === EntryKind.EventBatch)
  ) {
    word(TAG_LENGTH);
    word(b.length);
  } else bytes(b, 0, b.length);
}

function walk(value: unknown, name: string, holder: Record<string, unknown> | null, hashed: boolean): void {
  switch (typeof value) {
    case 'number':
      number(value);
      return;
    case 'string':
      string(value, TAG_STRING);
      return;
    case 'boolean':
      word(value ? TAG_TRUE : TAG_FALSE);
      return;
    case 'bigint':
      string(value.toString(), TAG_BIGINT);
      return;
    case 'object':
      break;
    default:
      // undefined, a function or a symbol in an array: JSON writes null (objects leave them out, below).
      word(TAG_NULL);
      return;
  }
  if (value === null) {
    word(TAG_NULL);
    return;
  }
  if (value instanceof Uint8Array) {
    if (hashed) hashedBytes(value, name, holder);
    else bytes(value, 0, value.length);
    return;
  }
  if (Array.isArray(value)) {
    const length = value.length;
    word(TAG_ARRAY);
    word(length);
    for (let i = 0; i < length; i++) walk(value[i], '', null, hashed);
    return;
  }
  word(TAG_OBJECT);
  const record = value as Record<string, unknown>;
  for (const k in record) {
    if (!Object.prototype.hasOwnProperty.call(record, k)) continue;
    const v = record[k];
    if (v === undefined || typeof v === 'function' || typeof v === 'symbol') continue;
    key(k);
    walk(v, k, record, hashed);
  }
  word(TAG_END);
}

const digestWords = new Int32Array(2);

/** stepDigest is format 4's step digest of `effects`: 16 hex digits. */
export function stepDigest(effects: readonly Effect[], mode: PayloadMode): string {
  begin();
  walk(effects, '', null, mode === 'hashed');
  end(digestWords);
  return hex8(digestWords[0]!) + hex8(digestWords[1]!);
}

// Format 5: the same lanes and the same canonical values, but the effects the engine emits on every write
// (streamChunk, send, reply, append, apply, proposalResult) are read field by field in a fixed order rather
// than walked by name: no key is hashed and every property read is a named (monomorphic) load, which is
// most of what format 4's walk cost. Each field still goes through a total function of its value (a field
// of an unexpected type is walked as format 4 walks it, behind an escape word), so two different effects
// never feed the same words. The field lists are checked against the engine's types (DIGEST_FIELDS_CHECKED,
// at the end): a field added to one of these types fails the typecheck until it is hashed here. What the
// types do not list is not digested (format 4 walked every own property). Every other effect (rare:
// elections, snapshots, membership) is walked whole, keys included, as in format 4.

// A field read by position is one word when it is what it almost always is, a whole number from 0 to
// 2^31 - 1; anything else is an escape word (a negative int32, never such a number) and then the value
// as format 4 feeds it, tag first.
const ESC_NUMBER = 0x80000001 | 0;
const ESC_OTHER = 0x80000002 | 0;
const ESC_ABSENT = 0x80000003 | 0;
const FX_OTHER = 0x100;
const FX_STREAM_CHUNK = 0x101;
const FX_SEND = 0x102;
const FX_REPLY = 0x103;
const FX_APPEND = 0x104;
const FX_APPLY = 0x105;
const FX_PROPOSAL_RESULT = 0x106;
const BODY_OTHER = 0x200;
const BODY_REPORT_APPLIED = 0x201;
const BODY_SHIP_SEGMENT = 0x202;
const BODY_REPORT_ACK = 0x203;
const BODY_SHIP_RESPONSE = 0x204;
const BODY_HEARTBEAT_RESPONSE = 0x205;
const BODY_HEARTBEAT = 0x206;

function num(v: unknown, hashed: boolean): void {
  if (typeof v === 'number') {
    if ((v | 0) === v && v >= 0) word5(v);
    else {
      word5(ESC_NUMBER);
      number(v);
    }
  } else {
    word5(ESC_OTHER);
    walk(v, '', null, hashed);
  }
}

function str(v: unknown, hashed: boolean): void {
  if (typeof v === 'string') {
    const n = v.length;
    if (n > 0 && n < SHORT_STRING_CHARS) {
      // Its cached fingerprint (computed with format 4's mixing, whichever format asks: the cache is shared).
      const slot = fingerprintSlot(v);
      word5(TAG_STRING);
      word5(slotWords[slot * 2]!);
      word5(slotWords[slot * 2 + 1]!);
    } else string(v, TAG_STRING);
  } else {
    word5(ESC_OTHER);
    walk(v, '', null, hashed);
  }
}

function bool(v: unknown, hashed: boolean): void {
  if (v === true) word5(TAG_TRUE);
  else if (v === false) word5(TAG_FALSE);
  else {
    word5(ESC_OTHER);
    walk(v, '', null, hashed);
  }
}

function optionalNum(v: unknown, hashed: boolean): void {
  if (v === undefined) word5(ESC_ABSENT);
  else num(v, hashed);
}

/** raw5: b[from, to) four bytes a word, with word5. */
function raw5(b: Uint8Array, from: number, to: number): void {
  let i = from;
  for (; i + 3 < to; i += 4) word5(b[i]! | (b[i + 1]! << 8) | (b[i + 2]! << 16) | (b[i + 3]! << 24));
  let last = 0;
  for (let shift = 0; i < to; i++, shift += 8) last |= b[i]! << shift;
  if (to > from) word5(last);
}

/**
 * FRAME5_SUBHASH_BYTES: a frame at least this long is fed as a sub-hash, kept for the next payload with the
 * same bytes (a leader ships the same frame to each follower, encoded for each: comparing is cheaper than
 * reading a long skeleton again); a shorter one is fed word by word (cheaper than comparing). Which one
 * depends on the length alone, so a replay feeds the same words.
 */
const FRAME5_SUBHASH_BYTES = 1024;

// Format 5's last long frame and its sub-hash (its own: format 4's cache holds format 4's sub-hashes).
let lastFrame5: Uint8Array | null = null;
const lastFrame5Words = new Int32Array(2);

/** skeleton5 feeds format 4's frame rule (frameSkeleton: the same bytes) with word5. */
function skeleton5(b: Uint8Array): void {
  const length = b.length;
  word5(length);
  if (length < FRAME_HEADER_BYTES + CHECKSUM_BYTES) return;
  raw5(b, 0, FRAME_HEADER_BYTES);
  const count = ((b[25]! << 24) | (b[26]! << 16) | (b[27]! << 8) | b[28]!) >>> 0;
  const bodyEnd = length - CHECKSUM_BYTES;
  let at = FRAME_HEADER_BYTES;
  for (let i = 0; i < count && at + ENTRY_HEADER_BYTES <= bodyEnd; i++) {
    raw5(b, at, at + ENTRY_HEADER_BYTES);
    const kind = b[at + 16]!;
    const size = ((b[at + 17]! << 24) | (b[at + 18]! << 16) | (b[at + 19]! << 8) | b[at + 20]!) >>> 0;
    const body = at + ENTRY_HEADER_BYTES;
    if (kind !== EntryKind.EventBatch) raw5(b, body, Math.min(body + size, bodyEnd));
    at = body + size;
  }
}

/** frame5: a ShipSegment payload (hashed mode): its skeleton, or for a long frame the skeleton's sub-hash. */
function frame5(b: Uint8Array): void {
  word5(TAG_FRAME);
  if (b.length < FRAME5_SUBHASH_BYTES) {
    skeleton5(b);
    return;
  }
  if (
    lastFrame5 === b ||
    (lastFrame5 !== null && lastFrame5.length === b.length && Buffer.compare(lastFrame5, b) === 0)
  ) {
    word5(lastFrame5Words[0]!);
    word5(lastFrame5Words[1]!);
    return;
  }
  const s1 = lanes.h1;
  const s2 = lanes.h2;
  const sc = lanes.count;
  begin();
  skeleton5(b);
  end(lastFrame5Words);
  lanes.h1 = s1;
  lanes.h2 = s2;
  lanes.count = sc;
  // Kept by reference: a frame is never changed once the engine has encoded it.
  lastFrame5 = b;
  word5(lastFrame5Words[0]!);
  word5(lastFrame5Words[1]!);
}

/** shipSegment: a ShipSegmentRequest's fields (ship-segment fields in step-digest-fields.ts). */
function shipSegment(body: ShipSegmentRequest, hashed: boolean): void {
  const id = body.id as unknown;
  if (id === undefined) word5(ESC_ABSENT);
  else if (!isObject(id)) {
    word5(ESC_OTHER);
    walk(id, '', null, hashed);
  } else {
    const segment = id as WalSegmentId;
    num(segment.regionId, hashed);
    num(segment.shardId, hashed);
    num(segment.seqno, hashed);
  }
  const payload = body.payload as unknown;
  if (payload instanceof Uint8Array) {
    if (hashed) frame5(payload);
    else bytes(payload, 0, payload.length);
  } else {
    word5(ESC_OTHER);
    walk(payload, '', null, hashed);
  }
  num(body.eventCount, hashed);
  num(body.leaderLastSeq, hashed);
  num(body.streamBaseline, hashed);
  num(body.term, hashed);
  num(body.leaderRegion, hashed);
}

function request(r: RpcRequest, hashed: boolean): void {
  if (r.method === 'ReportApplied') {
    word5(BODY_REPORT_APPLIED);
    const b = r.body;
    num(b.reporterShard, hashed);
    num(b.sourceShard, hashed);
    num(b.appliedSeqno, hashed);
    num(b.reporterTerm, hashed);
    num(b.capabilities, hashed);
  } else if (r.method === 'ShipSegment') {
    word5(BODY_SHIP_SEGMENT);
    shipSegment(r.body, hashed);
  } else if (r.method === 'Heartbeat') {
    word5(BODY_HEARTBEAT);
    const b = r.body;
    num(b.shardId, hashed);
    num(b.regionId, hashed);
    num(b.entityCount, hashed);
    num(b.signalThroughputEps, hashed);
    num(b.diskBytes, hashed);
    // A map of numbers by member id: walked (its keys in ascending order, as an object's integer keys go).
    walk(b.replicationLag, '', null, hashed);
    str(b.lastHeartbeatNs, hashed);
    num(b.term, hashed);
    num(b.leaderRegion, hashed);
    num(b.streamBaseline, hashed);
    num(b.prevLogTerm, hashed);
    num(b.prevLogSeq, hashed);
    str(b.buildVersion, hashed);
    num(b.leaderLastSeq, hashed);
  } else {
    word5(BODY_OTHER);
    walk(r, '', null, hashed);
  }
}

function response(r: RpcResponse, hashed: boolean): void {
  if (r.method === 'ReportApplied') {
    word5(BODY_REPORT_ACK);
    bool(r.body.acknowledged, hashed);
  } else if (r.method === 'ShipSegment') {
    word5(BODY_SHIP_RESPONSE);
    const b = r.body;
    bool(b.accepted, hashed);
    num(b.appliedSeqno, hashed);
    num(b.term, hashed);
  } else if (r.method === 'Heartbeat') {
    word5(BODY_HEARTBEAT_RESPONSE);
    const b = r.body;
    bool(b.acknowledged, hashed);
    num(b.term, hashed);
    bool(b.accepted, hashed);
    num(b.capabilities, hashed);
    bool(b.removed, hashed);
  } else {
    word5(BODY_OTHER);
    walk(r, '', null, hashed);
  }
}

/** entries: each entry's seq, term and kind, and its data by format 4's rule (a value by its length, hashed). */
function entries(list: readonly Entry[], hashed: boolean): void {
  const length = list.length;
  word5(TAG_ARRAY);
  word5(length);
  for (let i = 0; i < length; i++) {
    const e = list[i]!;
    num(e.seq, hashed);
    num(e.term, hashed);
    const kind = e.kind as unknown;
    num(kind, hashed);
    const data = e.data as unknown;
    if (!(data instanceof Uint8Array)) {
      word5(ESC_OTHER);
      walk(data, '', null, hashed);
    } else if (hashed && (typeof kind !== 'number' || kind === EntryKind.EventBatch)) {
      word5(TAG_LENGTH);
      word5(data.length);
    } else bytes(data, 0, data.length);
  }
}

function isObject(v: unknown): v is object {
  return typeof v === 'object' && v !== null;
}

/**
 * plainEffect: the objects an effect read field by field holds are objects (the engine's always are; a
 * digest must not throw on anything else, so anything else is walked whole).
 */
function plainEffect(e: Effect): boolean {
  switch (e.type) {
    case 'streamChunk':
      return isObject(e.chunk);
    case 'send':
    case 'reply': {
      const call = e.type === 'send' ? (e.request as unknown) : (e.response as unknown);
      return isObject(call) && isObject((call as { body: unknown }).body);
    }
    case 'append':
    case 'apply':
      return Array.isArray(e.entries) && e.entries.every(isObject);
    case 'proposalResult':
      return true;
    default:
      return false;
  }
}

function effect(e: Effect, hashed: boolean): void {
  if (!isObject(e) || !plainEffect(e)) {
    word5(FX_OTHER);
    walk(e, '', null, hashed);
    return;
  }
  switch (e.type) {
    case 'streamChunk':
      word5(FX_STREAM_CHUNK);
      num(e.callId, hashed);
      shipSegment(e.chunk, hashed);
      return;
    case 'send':
      word5(FX_SEND);
      num(e.requestId, hashed);
      str(e.to, hashed);
      num(e.toId, hashed);
      request(e.request, hashed);
      return;
    case 'reply':
      word5(FX_REPLY);
      num(e.callId, hashed);
      response(e.response, hashed);
      return;
    case 'append':
      word5(FX_APPEND);
      num(e.fromSeq, hashed);
      optionalNum(e.generation, hashed);
      entries(e.entries, hashed);
      return;
    case 'apply':
      word5(FX_APPLY);
      entries(e.entries, hashed);
      return;
    case 'proposalResult':
      word5(FX_PROPOSAL_RESULT);
      num(e.proposalId, hashed);
      bool(e.ok, hashed);
      str(e.code, hashed);
      num(e.seq, hashed);
      str(e.reason, hashed);
      str(e.leaderHint, hashed);
      return;
    default:
      word5(FX_OTHER);
      walk(e, '', null, hashed);
  }
}

/** stepDigestV5Words is format 5's step digest of `effects`, into out[0], out[1]. */
export function stepDigestV5Words(effects: readonly Effect[], mode: PayloadMode, out: Int32Array): void {
  const hashed = mode === 'hashed';
  begin();
  const length = effects.length;
  word5(length);
  for (let i = 0; i < length; i++) effect(effects[i]!, hashed);
  end(out);
}

/** digestHex: a digest's two words as the 16 hex digits a step line holds. */
export function digestHex(a: number, b: number): string {
  return hex8(a) + hex8(b);
}

/** stepDigestV5 is format 5's step digest of `effects`: 16 hex digits. */
export function stepDigestV5(effects: readonly Effect[], mode: PayloadMode): string {
  stepDigestV5Words(effects, mode, digestWords);
  return hex8(digestWords[0]!) + hex8(digestWords[1]!);
}

// The fields format 5 reads by position, checked against the engine's types: a field added to one of
// them fails the typecheck here until it is digested above (and recorded: recording/step-record.ts).
type Exactly<T, K extends PropertyKey> = [Exclude<keyof T, K>] extends [never] ? true : false;
type EffectOf<T extends Effect['type']> = Extract<Effect, { type: T }>;
export const DIGEST_FIELDS_CHECKED: [
  Exactly<EffectOf<'streamChunk'>, 'type' | 'callId' | 'chunk'>,
  Exactly<EffectOf<'send'>, 'type' | 'requestId' | 'to' | 'toId' | 'request'>,
  Exactly<EffectOf<'reply'>, 'type' | 'callId' | 'response'>,
  Exactly<EffectOf<'append'>, 'type' | 'fromSeq' | 'generation' | 'entries'>,
  Exactly<EffectOf<'apply'>, 'type' | 'entries'>,
  Exactly<EffectOf<'proposalResult'>, 'type' | 'proposalId' | 'ok' | 'code' | 'seq' | 'reason' | 'leaderHint'>,
  Exactly<Entry, 'seq' | 'term' | 'kind' | 'data'>,
  Exactly<WalSegmentId, 'regionId' | 'shardId' | 'seqno'>,
  Exactly<
    ShipSegmentRequest,
    'id' | 'payload' | 'eventCount' | 'leaderLastSeq' | 'streamBaseline' | 'term' | 'leaderRegion'
  >,
  Exactly<AppliedReport, 'reporterShard' | 'sourceShard' | 'appliedSeqno' | 'reporterTerm' | 'capabilities'>,
  Exactly<
    HeartbeatRequest,
    | 'shardId'
    | 'regionId'
    | 'entityCount'
    | 'signalThroughputEps'
    | 'diskBytes'
    | 'replicationLag'
    | 'lastHeartbeatNs'
    | 'term'
    | 'leaderRegion'
    | 'streamBaseline'
    | 'prevLogTerm'
    | 'prevLogSeq'
    | 'buildVersion'
    | 'leaderLastSeq'
  >,
  Exactly<AppliedReportAck, 'acknowledged'>,
  Exactly<ShipSegmentResponse, 'accepted' | 'appliedSeqno' | 'term'>,
  Exactly<HeartbeatResponse, 'acknowledged' | 'term' | 'accepted' | 'capabilities' | 'removed'>,
] = [true, true, true, true, true, true, true, true, true, true, true, true, true, true];
