// Formats 5 and 6's records: a segment file is a sequence of length-prefixed records rather than JSON lines, so
// the recorder writes each step's bytes straight into its buffer (transports/node/recording-lines.ts) with
// no string built on the way (format 4's JSON line cost more of a leader's CPU than the step's digest:
// bench/recorder-step.ts). A record is
//
//   kind (1 byte) | body length (4 bytes, little-endian) | body
//
// kind 1 (RECORD_JSON): the body is one JSON line of format 4 as UTF-8 (the seg, run, ckpt and gap lines:
//   once per segment or run, so kept as readable text);
// kind 2 (RECORD_STEP): the body is one step:
//   n, tick (varints) | at (float64) | digest (8 bytes: the two words of stepDigestV5) |
//   input code (1 byte) and the input's fields | effect texts (a varint count + 1, 0 = none; each as the
//   facts it shows: see FACT_TEXT below)
//
// The engine's frequent inputs (the ones a write makes: streamChunk, entriesPersisted, propose, the
// ReportApplied call and its answer, ticks and stats...) have a code each and are written field by field in
// a fixed order (their field lists are checked against the engine's types at the end of this file); any
// other input, or one whose fields are not what its type says, is written as its JSON (INPUT_JSON, exactly
// format 4's `in`). So is an input whose wire body (a decoded message: a call's body, an answer's, a shipped
// chunk and its id) holds a key its type does not declare: field-by-field writing would drop it, and the
// replay would feed the engine another object than the node's engine had (declared(), below). The store's values are redacted as in format 4 (recording/codec.ts): a keyed hash and
// the length in `hashed` mode, a shipped segment by its skeleton.
//
// Format 6 differs in two codes, both read alongside format 5's: a proposeBatch in hashed mode is
// INPUT_PROPOSE_BATCH_HASHED (each proposal's id and length, then one keyed hash of the whole batch, not a
// hash per value), and a committed proposalResult's text is FACT_COMMITTED (no code string).
//
// Numbers: a whole number from 0 to 2^53 - 2 is a varint of itself + 1; any other number is a 0 byte and
// its float64. Strings: a varint of their UTF-8 length, then the bytes. Written here rather than with a
// general encoder from npm (msgpackr and the like): their cost is the generic walk over each object's keys,
// which is what field-by-field writing avoids, and the redaction rules are ours either way.
import { encodeSegmentFrame, SEGMENT_FRAME_VERSION } from '../engine/segment-frame.js';
import type {
  AppliedReport,
  AppliedReportAck,
  HeartbeatResponse,
  ShipSegmentRequest,
  ShipSegmentResponse,
  WalSegmentId,
} from '../engine/rpc.js';
import { EntryKind, type Effect, type Entry, type Input, type NodeStats, type Proposal } from '../engine/types.js';
import { isCarriableValue } from '../engine/values.js';
import {
  batchValueHashLatin1,
  decodeLine,
  encodeLine,
  RECORDED_BYTES_MAX,
  valueHashLatin1,
  type RedactKey,
} from './codec.js';
import { crc32cFast } from './crc32c-fast.js';
import { describeEffect } from './describe.js';
import type { PayloadMode, StepLine } from './format.js';

export const RECORD_JSON = 1;
export const RECORD_STEP = 2;
/** RECORD_HEADER_BYTES: a record's kind and body length. */
export const RECORD_HEADER_BYTES = 5;

/**
 * RecordSink is where records are written: into `buf` from `pos`. grow makes room for `bytes` more after
 * `pos`, and may move what is written to a new buffer: it moves `mark` (the record's start) with it.
 */
export interface RecordSink {
  buf: Buffer;
  pos: number;
  mark: number;
  grow(bytes: number): void;
}

const INPUT_JSON = 0;
const INPUT_TICK = 1;
const INPUT_START = 2;
const INPUT_STREAM_ENDED = 3;
const INPUT_STATS = 4;
const INPUT_ENTRIES_PERSISTED = 5;
const INPUT_PROPOSE = 6;
const INPUT_PROPOSE_BATCH = 7;
const INPUT_REPORT_APPLIED = 8;
const INPUT_REPORT_ACK = 9;
const INPUT_STREAM_CHUNK = 10;
const INPUT_HEARTBEAT_RESPONSE = 11;
const INPUT_SHIP_RESPONSE = 12;
/** Format 6: a proposeBatch in hashed mode, each proposal's id and length, then one keyed hash of the batch. */
const INPUT_PROPOSE_BATCH_HASHED = 13;

const VALUE_HASHED = 0;
const VALUE_LENGTH = 1;
const VALUE_BYTES = 2;
const PAYLOAD_SKELETON = 0;
const PAYLOAD_BYTES = 1;
const ABSENT = 0;
const PRESENT = 1;
/** VALUE_HASH_BYTES: the bytes of a value's keyed SHA-256 recorded (codec.ts valueHashLatin1). */
const VALUE_HASH_BYTES = 16;

const FRAME_HEADER_BYTES = 1 + 8 + 8 + 8 + 4;
const ENTRY_HEADER_BYTES = 8 + 8 + 1 + 4;
const CHECKSUM_BYTES = 4;

/** NotPlain: an input whose fields are not what its type says; it is written as JSON instead. */
class NotPlain extends Error {}
const notPlain = new NotPlain('not a plain input');

/**
 * declared throws NotPlain when `o` has a key beyond the `count` its type declares (own enumerable keys).
 * The bodies that crossed a process boundary (decoded by the wire's codecs) are checked: a codec built from
 * a newer proto than the engine's types can hand the driver a field the engine does not declare, which
 * field-by-field writing would drop. Such an input is written as its JSON instead
 * (INPUT_JSON: every field kept), so a replay feeds the engine the same object the node's engine had.
 */
function declared(o: object, count: number): void {
  // Object.keys counts the same own enumerable keys as a for-in filtered by hasOwn, at a fraction of its
  // cost (9-13 ns against 52-82 for a 7-key body in a loop; a follower's streamChunk record 0.87-0.91 of
  // the for-in's, a leader's ReportApplied call's 0.95: docs/operations.md, "Flight recorder").
  if (Object.keys(o).length !== count) throw notPlain;
}

// The sink being written (one record at a time: the writing is synchronous).
let out: RecordSink = { buf: Buffer.alloc(0), pos: 0, mark: 0, grow: () => undefined };
/** stepEffects: the effects of the step being written (the evidence skeleton reads: frameAppend), or null. */
let stepEffects: readonly Effect[] | null = null;

function room(bytes: number): void {
  if (out.pos + bytes > out.buf.length) out.grow(bytes);
}

function u8(v: number): void {
  room(1);
  out.buf[out.pos++] = v;
}

function float(v: number): void {
  room(8);
  out.pos = out.buf.writeDoubleLE(v, out.pos);
}

function i32(v: number): void {
  room(4);
  const b = out.buf;
  let p = out.pos;
  b[p++] = v;
  b[p++] = v >>> 8;
  b[p++] = v >>> 16;
  b[p++] = v >>> 24;
  out.pos = p;
}

/** varint: a whole number from 0 to 2^53 - 1, seven bits a byte. */
function varint(v: number): void {
  room(8);
  const b = out.buf;
  let p = out.pos;
  while (v >= 0x80) {
    b[p++] = (v % 0x80) | 0x80;
    v = Math.floor(v / 0x80);
  }
  b[p++] = v;
  out.pos = p;
}

/** num: any number (see the head of the file). */
function num(v: unknown): void {
  if (typeof v !== 'number') throw notPlain;
  if (Number.isSafeInteger(v) && v >= 0 && v < Number.MAX_SAFE_INTEGER) varint(v + 1);
  else {
    u8(0);
    float(v);
  }
}

function bool(v: unknown): void {
  if (v === true) u8(1);
  else if (v === false) u8(0);
  else throw notPlain;
}

function str(v: unknown): void {
  if (typeof v !== 'string') throw notPlain;
  const n = v.length;
  if (n < 0x80) {
    // ASCII (the common case: names, codes, digits) copied a char a byte; otherwise written as UTF-8.
    room(n + 1);
    const b = out.buf;
    const start = out.pos;
    b[start] = n;
    let i = 0;
    for (; i < n; i++) {
      const c = v.charCodeAt(i);
      if (c >= 0x80) break;
      b[start + 1 + i] = c;
    }
    if (i === n) {
      out.pos = start + 1 + n;
      return;
    }
  }
  const bytes = Buffer.byteLength(v);
  varint(bytes);
  room(bytes);
  out.pos += out.buf.write(v, out.pos);
}

function raw(b: Uint8Array, from: number, to: number): void {
  varint(to - from);
  room(to - from);
  out.buf.set(b.subarray(from, to), out.pos);
  out.pos += to - from;
}

/** value: a store value, by format 4's rule (its keyed hash and length in hashed mode, else its bytes). */
function value(data: unknown, mode: PayloadMode, key: RedactKey | null): void {
  if (!(data instanceof Uint8Array)) throw notPlain;
  if (mode === 'full') {
    u8(VALUE_BYTES);
    raw(data, 0, data.length);
  } else if (key === null) {
    u8(VALUE_LENGTH);
    varint(data.length);
  } else {
    u8(VALUE_HASHED);
    varint(data.length);
    latin1(valueHashLatin1(data, key));
  }
}

/** latin1: a hash's first VALUE_HASH_BYTES, one char a byte (a loop: cheaper than Buffer#write's native call). */
function latin1(hash: string): void {
  room(VALUE_HASH_BYTES);
  const b = out.buf;
  const at = out.pos;
  for (let i = 0; i < VALUE_HASH_BYTES; i++) b[at + i] = hash.charCodeAt(i);
  out.pos = at + VALUE_HASH_BYTES;
}

function readU64(b: Uint8Array, at: number): number {
  const high = ((b[at]! << 24) | (b[at + 1]! << 16) | (b[at + 2]! << 8) | b[at + 3]!) >>> 0;
  if (high >= 0x20_0000) return NaN;
  return high * 0x1_0000_0000 + (((b[at + 4]! << 24) | (b[at + 5]! << 16) | (b[at + 6]! << 8) | b[at + 7]!) >>> 0);
}

function readU32(b: Uint8Array, at: number): number {
  return ((b[at]! << 24) | (b[at + 1]! << 16) | (b[at + 2]! << 8) | b[at + 3]!) >>> 0;
}

/**
 * frameAppend: the step's append effect that took entries of a frame starting after `prevSeq` with `count`
 * entries (its first entry inside the frame), or null. The engine appends a streamed frame's entries only
 * after decodeSegmentFrame accepted the frame, checksum first (engine/pull.ts readChunk, then
 * receiveSegment's appendFromLeader: the entries it appends are the decoded frame's, a contiguous run
 * ending at its last).
 */
function frameAppend(effects: readonly Effect[] | null, prevSeq: number, count: number): readonly Entry[] | null {
  if (effects === null) return null;
  for (let i = 0; i < effects.length; i++) {
    const e = effects[i]!;
    if (e.type !== 'append') continue;
    const entries = e.entries as unknown;
    if (!Array.isArray(entries) || entries.length === 0 || entries.length > count) continue;
    const first = (entries[0] as Entry | undefined)?.seq;
    if (typeof first === 'number' && first > prevSeq && first + entries.length - 1 === prevSeq + count)
      return entries as Entry[];
  }
  return null;
}

/**
 * skeleton writes a ShipSegment payload as format 4's `$s` holds it (recording/frame-redact.ts: the same
 * checks, so exactly the frames decodeSegmentFrame accepts): prevSeq, prevTerm, commitSeq, the entry count,
 * then each entry's term, kind, and its length (a value) or bytes. Any other payload is not plain.
 *
 * The frame's checksum (crc32c over the whole frame) is computed only when the step's effects do not show
 * that the engine took the frame: a streamChunk step whose append holds this frame's last entries, each
 * with the term, kind and length the frame gives it (frameAppend), is the engine's word that the frame
 * decoded, checksum and all, so the recorder does not compute it a second time (it was most of a
 * follower's recording CPU: bench/recorder-step.ts). A frame the engine did not append from (a foreign or
 * duplicate chunk, one it refused) is checked here as before. Were that inference ever wrong, the replay
 * would say so at this step: its engine would take the frame and its digest would differ.
 */
function skeleton(b: Uint8Array): void {
  const length = b.length;
  if (length < FRAME_HEADER_BYTES + CHECKSUM_BYTES) throw notPlain;
  const bodyEnd = length - CHECKSUM_BYTES;
  if (b[0] !== SEGMENT_FRAME_VERSION) throw notPlain;
  const prevSeq = readU64(b, 1);
  const prevTerm = readU64(b, 9);
  const commitSeq = readU64(b, 17);
  const count = readU32(b, 25);
  let at = FRAME_HEADER_BYTES;
  if (count > (bodyEnd - at) / ENTRY_HEADER_BYTES) throw notPlain;
  if (!isCarriableValue(prevSeq) || !isCarriableValue(prevTerm) || !isCarriableValue(commitSeq)) throw notPlain;
  varint(prevSeq);
  varint(prevTerm);
  varint(commitSeq);
  varint(count);
  const appended = frameAppend(stepEffects, prevSeq, count);
  // The index of the frame's first appended entry (count: none): the append's entries match from there.
  const from = appended === null ? count : count - appended.length;
  let taken = appended !== null;
  let lastTerm = prevTerm;
  for (let i = 0; i < count; i++) {
    if (at + ENTRY_HEADER_BYTES > bodyEnd) throw notPlain;
    const seq = readU64(b, at);
    const term = readU64(b, at + 8);
    const kind = b[at + 16]!;
    const size = readU32(b, at + 17);
    at += ENTRY_HEADER_BYTES;
    if (at + size > bodyEnd) throw notPlain;
    if (seq !== prevSeq + 1 + i || term < lastTerm || !isCarriableValue(seq) || !isCarriableValue(term)) throw notPlain;
    if (taken && i >= from) {
      const e = appended![i - from] as Entry | null | undefined;
      const data = e?.data as unknown;
      taken =
        typeof e === 'object' &&
        e !== null &&
        e.seq === seq &&
        e.term === term &&
        e.kind === kind &&
        data instanceof Uint8Array &&
        data.length === size;
    }
    lastTerm = term;
    varint(term);
    u8(kind);
    if (kind === EntryKind.EventBatch) varint(size);
    else raw(b, at, at + size);
    at += size;
  }
  if (at !== bodyEnd) throw notPlain;
  if (!taken && readU32(b, bodyEnd) !== crc32cFast(b, 0, bodyEnd)) throw notPlain;
}

function shipSegment(body: ShipSegmentRequest, mode: PayloadMode): void {
  const id = body.id;
  // Six fields and `id`, which a decoded message holds even when absent (as undefined).
  declared(body, 'id' in body ? 7 : 6);
  if (id === undefined) u8(ABSENT);
  else {
    declared(id, 3);
    u8(PRESENT);
    num(id.regionId);
    num(id.shardId);
    num(id.seqno);
  }
  const payload = body.payload as unknown;
  if (!(payload instanceof Uint8Array)) throw notPlain;
  if (mode === 'hashed') {
    u8(PAYLOAD_SKELETON);
    skeleton(payload);
  } else {
    u8(PAYLOAD_BYTES);
    raw(payload, 0, payload.length);
  }
  num(body.eventCount);
  num(body.leaderLastSeq);
  num(body.streamBaseline);
  num(body.term);
  num(body.leaderRegion);
}

function optionalNum(v: unknown): void {
  if (v === undefined) u8(ABSENT);
  else {
    u8(PRESENT);
    num(v);
  }
}

/**
 * plainInput writes the input's code and fields; false (nothing written) for an input without a code. It
 * throws NotPlain for a field that is not what its type says (rare: an exception costs microseconds).
 */
function plainInput(input: Input, mode: PayloadMode, key: RedactKey | null): boolean {
  switch (input.type) {
    case 'tick':
      u8(INPUT_TICK);
      return true;
    case 'start':
      u8(INPUT_START);
      return true;
    case 'streamEnded':
      u8(INPUT_STREAM_ENDED);
      num(input.requestId);
      return true;
    case 'stats': {
      u8(INPUT_STATS);
      const s = input.stats;
      num(s.entityCount);
      num(s.signalThroughputEps);
      num(s.diskBytes);
      str(s.nowNs);
      return true;
    }
    case 'entriesPersisted':
      u8(INPUT_ENTRIES_PERSISTED);
      num(input.lastSeq);
      num(input.lastTerm);
      optionalNum(input.generation);
      return true;
    case 'propose':
      u8(INPUT_PROPOSE);
      num(input.proposalId);
      value(input.data, mode, key);
      return true;
    case 'proposeBatch': {
      const proposals = input.proposals as unknown;
      if (!Array.isArray(proposals)) throw notPlain;
      if (mode === 'hashed' && key !== null) {
        // Format 6: the values' lengths, then one keyed hash of the whole batch (codec.ts batchValueHashLatin1).
        u8(INPUT_PROPOSE_BATCH_HASHED);
        varint(proposals.length);
        for (const p of proposals as Proposal[]) {
          const data = p.data as unknown;
          if (!(data instanceof Uint8Array)) throw notPlain;
          num(p.proposalId);
          varint(data.length);
        }
        latin1(batchValueHashLatin1(proposals as Proposal[], key));
        return true;
      }
      u8(INPUT_PROPOSE_BATCH);
      varint(proposals.length);
      for (const p of proposals as Proposal[]) {
        num(p.proposalId);
        value(p.data, mode, key);
      }
      return true;
    }
    case 'request': {
      const r = input.request;
      if (r.method !== 'ReportApplied') return false;
      u8(INPUT_REPORT_APPLIED);
      num(input.callId);
      optionalNum(input.callerId);
      const b = r.body;
      declared(b, 5);
      num(b.reporterShard);
      num(b.sourceShard);
      num(b.appliedSeqno);
      num(b.reporterTerm);
      num(b.capabilities);
      return true;
    }
    case 'response': {
      const r = input.response;
      if (r.method === 'ReportApplied') {
        declared(r.body, 1);
        u8(INPUT_REPORT_ACK);
        num(input.requestId);
        bool(r.body.acknowledged);
      } else if (r.method === 'Heartbeat') {
        const b = r.body;
        declared(b, 5);
        u8(INPUT_HEARTBEAT_RESPONSE);
        num(input.requestId);
        bool(b.acknowledged);
        num(b.term);
        bool(b.accepted);
        num(b.capabilities);
        bool(b.removed);
      } else if (r.method === 'ShipSegment') {
        const b = r.body;
        declared(b, 3);
        u8(INPUT_SHIP_RESPONSE);
        num(input.requestId);
        bool(b.accepted);
        num(b.appliedSeqno);
        num(b.term);
      } else return false;
      return true;
    }
    case 'streamChunk':
      u8(INPUT_STREAM_CHUNK);
      num(input.requestId);
      shipSegment(input.chunk, mode);
      return true;
    default:
      return false;
  }
}

// An effect's text (recording/describe.ts) is written as the facts it shows, a code and numbers, and
// made into the same text when read (describeFacts): building the texts cost the recorder more than
// writing their numbers. An effect without a code here, or with a field that is not what its type says,
// is written as its text.
const FACT_TEXT = 0;
const FACT_STREAM_CHUNK = 1;
const FACT_APPEND = 2;
const FACT_APPLY = 3;
const FACT_PROPOSAL_RESULT = 4;
const FACT_REPORT_ACK = 5;
const FACT_SEND_REPORT_APPLIED = 6;
const FACT_SEND_HEARTBEAT = 7;
/** Format 6: a proposalResult whose code is `committed` (one a write on a leader), with no code string. */
const FACT_COMMITTED = 8;

/** facts writes the effect's facts; false (nothing written) for an effect without a code. */
function facts(e: Effect): boolean {
  switch (e.type) {
    case 'streamChunk':
      u8(FACT_STREAM_CHUNK);
      num(e.callId);
      num(e.chunk.id?.seqno ?? 0);
      num(e.chunk.eventCount);
      return true;
    case 'append':
      u8(FACT_APPEND);
      num(e.fromSeq);
      varint(e.entries.length);
      return true;
    case 'apply':
      u8(FACT_APPLY);
      num(e.entries[0]?.seq ?? 0);
      varint(e.entries.length);
      return true;
    case 'proposalResult':
      u8(e.code === 'committed' ? FACT_COMMITTED : FACT_PROPOSAL_RESULT);
      num(e.proposalId);
      if (e.code !== 'committed') str(e.code);
      num(e.seq);
      return true;
    case 'reply':
      if (e.response.method !== 'ReportApplied') return false;
      u8(FACT_REPORT_ACK);
      num(e.callId);
      bool(e.response.body.acknowledged);
      return true;
    case 'send': {
      if (e.request.method === 'Heartbeat') {
        const h = e.request.body;
        u8(FACT_SEND_HEARTBEAT);
        num(e.requestId);
        num(e.toId);
        num(h.term);
        num(h.leaderRegion);
        num(h.leaderLastSeq);
        return true;
      }
      if (e.request.method !== 'ReportApplied') return false;
      const b = e.request.body;
      u8(FACT_SEND_REPORT_APPLIED);
      num(e.requestId);
      num(e.toId);
      num(b.reporterTerm);
      num(b.reporterShard);
      num(b.appliedSeqno);
      return true;
    }
    default:
      return false;
  }
}

/**
 * writeStepRecord writes one step record at sink.pos (sink.pos ends after it). `digest` holds the step's
 * two digest words; `effects` are written as their texts (the facts in them), or left out (null).
 * `allEffects` are the step's effects whether or not their texts are written: a shipped frame's checksum
 * is taken as checked when they show the engine appended from it (skeleton); null: it is always computed.
 */
export function writeStepRecord(
  sink: RecordSink,
  n: number,
  tick: number,
  at: number,
  input: Input,
  digest: Int32Array,
  effects: readonly Effect[] | null,
  mode: PayloadMode,
  key: RedactKey | null,
  allEffects: readonly Effect[] | null = effects,
): void {
  out = sink;
  stepEffects = allEffects;
  room(RECORD_HEADER_BYTES);
  sink.mark = sink.pos;
  sink.buf[sink.pos] = RECORD_STEP;
  sink.pos += RECORD_HEADER_BYTES;
  varint(n);
  varint(tick);
  float(at);
  i32(digest[0]!);
  i32(digest[1]!);
  // Relative to the record's start: a grow may move the record.
  const inputAt = sink.pos - sink.mark;
  let plain: boolean;
  try {
    plain = plainInput(input, mode, key);
  } catch (error) {
    if (error !== notPlain) throw error;
    plain = false;
  }
  if (!plain) {
    sink.pos = sink.mark + inputAt;
    u8(INPUT_JSON);
    str(encodeLine(input, mode, key));
  }
  if (effects === null) u8(0);
  else {
    varint(effects.length + 1);
    for (let i = 0; i < effects.length; i++) {
      const effectAt = sink.pos - sink.mark;
      let plain: boolean;
      try {
        plain = facts(effects[i]!);
      } catch (error) {
        if (error !== notPlain) throw error;
        plain = false;
      }
      if (!plain) {
        sink.pos = sink.mark + effectAt;
        u8(FACT_TEXT);
        str(describeEffect(effects[i]!));
      }
    }
  }
  stepEffects = null;
  const start = sink.mark;
  const length = sink.pos - start - RECORD_HEADER_BYTES;
  const b = sink.buf;
  b[start + 1] = length;
  b[start + 2] = length >>> 8;
  b[start + 3] = length >>> 16;
  b[start + 4] = length >>> 24;
}

/** writeJsonRecord writes a JSON line (seg, run, ckpt, gap) as a record at sink.pos. */
export function writeJsonRecord(sink: RecordSink, line: string): void {
  out = sink;
  const bytes = Buffer.byteLength(line);
  room(RECORD_HEADER_BYTES + bytes);
  const b = sink.buf;
  const start = sink.pos;
  sink.mark = start;
  b[start] = RECORD_JSON;
  b.writeUInt32LE(bytes, start + 1);
  sink.pos = start + RECORD_HEADER_BYTES + b.write(line, start + RECORD_HEADER_BYTES);
}

/** jsonRecord is a JSON line as a record of its own (a segment's first). */
export function jsonRecord(line: string): Buffer {
  const bytes = Buffer.byteLength(line);
  const record = Buffer.allocUnsafe(RECORD_HEADER_BYTES + bytes);
  record[0] = RECORD_JSON;
  record.writeUInt32LE(bytes, 1);
  record.write(line, RECORD_HEADER_BYTES);
  return record;
}

// Reading. A record is input: every read is bounds-checked and a record that does not decode throws,
// naming what; recording/reader.ts says which record of which file.

class Reader {
  at: number;
  constructor(
    readonly b: Buffer,
    from: number,
    readonly end: number,
  ) {
    this.at = from;
  }

  need(bytes: number): void {
    if (this.at + bytes > this.end) throw new Error('the record ends inside a field');
  }

  u8(): number {
    this.need(1);
    return this.b[this.at++]!;
  }

  varint(): number {
    let v = 0;
    let scale = 1;
    for (;;) {
      const byte = this.u8();
      v += (byte & 0x7f) * scale;
      if (byte < 0x80) break;
      scale *= 0x80;
      if (scale > 2 ** 56) throw new Error('a varint is longer than a safe integer');
    }
    if (!Number.isSafeInteger(v)) throw new Error('a varint is over 2^53');
    return v;
  }

  length(): number {
    const v = this.varint();
    if (v > RECORDED_BYTES_MAX) throw new Error(`recorded length ${v} is over ${RECORDED_BYTES_MAX}`);
    return v;
  }

  num(): number {
    const v = this.varint();
    return v > 0 ? v - 1 : this.float();
  }

  float(): number {
    this.need(8);
    const v = this.b.readDoubleLE(this.at);
    this.at += 8;
    return v;
  }

  i32(): number {
    this.need(4);
    const v = this.b.readInt32LE(this.at);
    this.at += 4;
    return v;
  }

  bool(): boolean {
    const v = this.u8();
    if (v > 1) throw new Error(`a boolean is ${v}`);
    return v === 1;
  }

  str(): string {
    const n = this.length();
    this.need(n);
    const s = this.b.toString('utf8', this.at, this.at + n);
    this.at += n;
    return s;
  }

  bytes(): Uint8Array {
    const n = this.length();
    this.need(n);
    const copy = new Uint8Array(this.b.subarray(this.at, this.at + n));
    this.at += n;
    return copy;
  }

  present(): boolean {
    const flag = this.u8();
    if (flag > PRESENT) throw new Error(`a presence flag is ${flag}`);
    return flag === PRESENT;
  }
}

function readValue(r: Reader): Uint8Array {
  const form = r.u8();
  if (form === VALUE_BYTES) return r.bytes();
  if (form !== VALUE_HASHED && form !== VALUE_LENGTH) throw new Error(`a value's form is ${form}`);
  const length = r.length();
  if (form === VALUE_HASHED) {
    r.need(VALUE_HASH_BYTES);
    r.at += VALUE_HASH_BYTES;
  }
  // A redacted value replays as zeros of its length (recording/codec.ts).
  return new Uint8Array(length);
}

function readSkeleton(r: Reader): Uint8Array {
  const prevSeq = r.varint();
  const prevTerm = r.varint();
  const commitSeq = r.varint();
  const count = r.varint();
  const entries: Entry[] = [];
  let total = 0;
  for (let i = 0; i < count; i++) {
    const term = r.varint();
    const kind = r.u8();
    let data: Uint8Array;
    if (kind === EntryKind.EventBatch) {
      const length = r.length();
      total += length;
      if (total > RECORDED_BYTES_MAX) throw new Error(`recorded frame holds more than ${RECORDED_BYTES_MAX} bytes`);
      data = new Uint8Array(length);
    } else data = r.bytes();
    entries.push({ seq: prevSeq + 1 + i, term, kind, data });
  }
  return encodeSegmentFrame({ prevSeq, prevTerm, commitSeq, entries });
}

function readShipSegment(r: Reader): ShipSegmentRequest {
  const id = r.present() ? { regionId: r.num(), shardId: r.num(), seqno: r.num() } : undefined;
  const form = r.u8();
  let payload: Uint8Array;
  if (form === PAYLOAD_SKELETON) payload = readSkeleton(r);
  else if (form === PAYLOAD_BYTES) payload = r.bytes();
  else throw new Error(`a payload's form is ${form}`);
  const body = {
    payload,
    eventCount: r.num(),
    leaderLastSeq: r.num(),
    streamBaseline: r.num(),
    term: r.num(),
    leaderRegion: r.num(),
  };
  // An absent id is no property, as format 4's JSON had it.
  return (id === undefined ? body : { id, ...body }) as ShipSegmentRequest;
}

function readInput(r: Reader): Input {
  const code = r.u8();
  switch (code) {
    case INPUT_JSON: {
      const input = decodeLine(r.str()) as Input;
      if (typeof input !== 'object' || input === null) throw new Error('a JSON input is not an object');
      return input;
    }
    case INPUT_TICK:
      return { type: 'tick' };
    case INPUT_START:
      return { type: 'start' };
    case INPUT_STREAM_ENDED:
      return { type: 'streamEnded', requestId: r.num() };
    case INPUT_STATS:
      return {
        type: 'stats',
        stats: { entityCount: r.num(), signalThroughputEps: r.num(), diskBytes: r.num(), nowNs: r.str() },
      };
    case INPUT_ENTRIES_PERSISTED: {
      const lastSeq = r.num();
      const lastTerm = r.num();
      return r.present()
        ? { type: 'entriesPersisted', lastSeq, lastTerm, generation: r.num() }
        : { type: 'entriesPersisted', lastSeq, lastTerm };
    }
    case INPUT_PROPOSE:
      return { type: 'propose', proposalId: r.num(), data: readValue(r) };
    case INPUT_PROPOSE_BATCH: {
      const count = r.length();
      const proposals: Proposal[] = [];
      for (let i = 0; i < count; i++) proposals.push({ proposalId: r.num(), data: readValue(r) });
      return { type: 'proposeBatch', proposals };
    }
    case INPUT_PROPOSE_BATCH_HASHED: {
      const count = r.length();
      const proposals: Proposal[] = [];
      let total = 0;
      for (let i = 0; i < count; i++) {
        const proposalId = r.num();
        const length = r.length();
        total += length;
        if (total > RECORDED_BYTES_MAX) throw new Error(`recorded batch holds more than ${RECORDED_BYTES_MAX} bytes`);
        // A redacted value replays as zeros of its length (recording/codec.ts).
        proposals.push({ proposalId, data: new Uint8Array(length) });
      }
      r.need(VALUE_HASH_BYTES);
      r.at += VALUE_HASH_BYTES;
      return { type: 'proposeBatch', proposals };
    }
    case INPUT_REPORT_APPLIED: {
      const callId = r.num();
      const callerId = r.present() ? r.num() : undefined;
      const body: AppliedReport = {
        reporterShard: r.num(),
        sourceShard: r.num(),
        appliedSeqno: r.num(),
        reporterTerm: r.num(),
        capabilities: r.num(),
      };
      const request = { method: 'ReportApplied' as const, body };
      return callerId === undefined
        ? { type: 'request', callId, request }
        : { type: 'request', callId, request, callerId };
    }
    case INPUT_REPORT_ACK:
      return {
        type: 'response',
        requestId: r.num(),
        response: { method: 'ReportApplied', body: { acknowledged: r.bool() } },
      };
    case INPUT_HEARTBEAT_RESPONSE: {
      const requestId = r.num();
      const body: HeartbeatResponse = {
        acknowledged: r.bool(),
        term: r.num(),
        accepted: r.bool(),
        capabilities: r.num(),
        removed: r.bool(),
      };
      return { type: 'response', requestId, response: { method: 'Heartbeat', body } };
    }
    case INPUT_SHIP_RESPONSE: {
      const requestId = r.num();
      const body = { accepted: r.bool(), appliedSeqno: r.num(), term: r.num() };
      return { type: 'response', requestId, response: { method: 'ShipSegment', body } };
    }
    case INPUT_STREAM_CHUNK:
      return { type: 'streamChunk', requestId: r.num(), chunk: readShipSegment(r) };
    default:
      throw new Error(`unknown input code ${code}`);
  }
}

/** describeFacts is the text describeEffect gave the effect whose facts were written (facts, above). */
function describeFacts(r: Reader): string {
  const code = r.u8();
  switch (code) {
    case FACT_TEXT:
      return r.str();
    case FACT_STREAM_CHUNK:
      return `streamChunk c${r.num()} seq${r.num()} n${r.num()}`;
    case FACT_APPEND:
      return `append from${r.num()} +${r.varint()}`;
    case FACT_APPLY:
      return `apply ${r.num()}+${r.varint()}`;
    case FACT_PROPOSAL_RESULT:
      return `proposalResult p${r.num()} ${r.str()} seq${r.num()}`;
    case FACT_COMMITTED:
      return `proposalResult p${r.num()} committed seq${r.num()}`;
    case FACT_REPORT_ACK:
      return `reply c${r.num()} ReportApplied ${JSON.stringify({ acknowledged: r.bool() })}`;
    case FACT_SEND_REPORT_APPLIED:
      return `send r${r.num()} to${r.num()} ReportApplied t${r.num()} from${r.num()} applied${r.num()}`;
    case FACT_SEND_HEARTBEAT:
      return `send r${r.num()} to${r.num()} Heartbeat t${r.num()} from${r.num()} last${r.num()}`;
    default:
      throw new Error(`unknown effect text code ${code}`);
  }
}

const hexWord = (w: number): string => (w >>> 0).toString(16).padStart(8, '0');

/** readStepRecord decodes a step record's body, b[from, end), as the step line format 4 would hold. */
export function readStepRecord(b: Buffer, from: number, end: number): StepLine {
  const r = new Reader(b, from, end);
  const n = r.varint();
  const tick = r.varint();
  const at = r.float();
  const d = hexWord(r.i32()) + hexWord(r.i32());
  const input = readInput(r);
  const texts = r.length();
  const step: StepLine = { t: 'step', n, tick, at, in: input, d };
  if (texts > 0) {
    const fx: string[] = [];
    for (let i = 1; i < texts; i++) fx.push(describeFacts(r));
    step.fx = fx;
  }
  if (r.at !== end) throw new Error(`the step record has ${end - r.at} bytes after its fields`);
  return step;
}

// The field lists above, checked against the engine's types: a field added to one of them fails the
// typecheck here until it is written (and read) above, digested in recording/step-digest.ts, and counted in
// the declared() calls of the wire bodies (a body with more keys than its type declares is written as JSON).
type Exactly<T, K extends PropertyKey> = [Exclude<keyof T, K>] extends [never] ? true : false;
type InputOf<T extends Input['type']> = Extract<Input, { type: T }>;
export const FIELDS_CHECKED: [
  Exactly<NodeStats, 'entityCount' | 'signalThroughputEps' | 'diskBytes' | 'nowNs'>,
  Exactly<InputOf<'entriesPersisted'>, 'type' | 'lastSeq' | 'lastTerm' | 'generation'>,
  Exactly<InputOf<'propose'>, 'type' | 'proposalId' | 'data'>,
  Exactly<Proposal, 'proposalId' | 'data'>,
  Exactly<InputOf<'request'>, 'type' | 'callId' | 'request' | 'callerId'>,
  Exactly<AppliedReport, 'reporterShard' | 'sourceShard' | 'appliedSeqno' | 'reporterTerm' | 'capabilities'>,
  Exactly<InputOf<'response'>, 'type' | 'requestId' | 'response'>,
  Exactly<HeartbeatResponse, 'acknowledged' | 'term' | 'accepted' | 'capabilities' | 'removed'>,
  Exactly<InputOf<'streamChunk'>, 'type' | 'requestId' | 'chunk'>,
  Exactly<
    ShipSegmentRequest,
    'id' | 'payload' | 'eventCount' | 'leaderLastSeq' | 'streamBaseline' | 'term' | 'leaderRegion'
  >,
  Exactly<InputOf<'streamEnded'>, 'type' | 'requestId'>,
  Exactly<WalSegmentId, 'regionId' | 'shardId' | 'seqno'>,
  Exactly<AppliedReportAck, 'acknowledged'>,
  Exactly<ShipSegmentResponse, 'accepted' | 'appliedSeqno' | 'term'>,
] = [true, true, true, true, true, true, true, true, true, true, true, true, true, true];
