// HPACK (RFC 7541): the decoder of a connection's request header blocks (dynamic table, Huffman strings) and the
// encoder of its answers.
//
// Written here rather than taken from npm: the one widely installed package, hpack.js (2.1.6, unchanged in
// years, spdy's), decodes through a readable-stream v2 Transform (objects pushed per field, errors as stream
// events), so each header block would pay a stream's machinery on the hot path this folder exists to thin; the
// `hpack` package (1.0.0) is a one-release port. The decoder is ~200 lines against the RFC's own examples
// (test/transports/h2/hpack.test.ts) and real clients (grpc-js, node:http2).
//
// The encoder never adds to the peer's dynamic table (literal without indexing, or a static index), so it
// keeps no state and needs no SETTINGS_HEADER_TABLE_SIZE bookkeeping; gRPC answers are a few short fields.
import { huffmanDecode, HuffmanError } from './hpack-huffman.js';

export type HeaderField = readonly [name: string, value: string];

/** RFC 7541 Appendix A, indices 1..61. */
const STATIC_TABLE: readonly HeaderField[] = [
  [':authority', ''],
  [':method', 'GET'],
  [':method', 'POST'],
  [':path', '/'],
  [':path', '/index.html'],
  [':scheme', 'http'],
  [':scheme', 'https'],
  [':status', '200'],
  [':status', '204'],
  [':status', '206'],
  [':status', '304'],
  [':status', '400'],
  [':status', '404'],
  [':status', '500'],
  ['accept-charset', ''],
  ['accept-encoding', 'gzip, deflate'],
  ['accept-language', ''],
  ['accept-ranges', ''],
  ['accept', ''],
  ['access-control-allow-origin', ''],
  ['age', ''],
  ['allow', ''],
  ['authorization', ''],
  ['cache-control', ''],
  ['content-disposition', ''],
  ['content-encoding', ''],
  ['content-language', ''],
  ['content-length', ''],
  ['content-location', ''],
  ['content-range', ''],
  ['content-type', ''],
  ['cookie', ''],
  ['date', ''],
  ['etag', ''],
  ['expect', ''],
  ['expires', ''],
  ['from', ''],
  ['host', ''],
  ['if-match', ''],
  ['if-modified-since', ''],
  ['if-none-match', ''],
  ['if-range', ''],
  ['if-unmodified-since', ''],
  ['last-modified', ''],
  ['link', ''],
  ['location', ''],
  ['max-forwards', ''],
  ['proxy-authenticate', ''],
  ['proxy-authorization', ''],
  ['range', ''],
  ['referer', ''],
  ['refresh', ''],
  ['retry-after', ''],
  ['server', ''],
  ['set-cookie', ''],
  ['strict-transport-security', ''],
  ['transfer-encoding', ''],
  ['user-agent', ''],
  ['vary', ''],
  ['via', ''],
  ['www-authenticate', ''],
];

/** An HPACK decoding error: a connection error of type COMPRESSION_ERROR (RFC 9113 4.3). */
export class HpackError extends Error {}

/** ENTRY_OVERHEAD_BYTES is what RFC 7541 4.1 adds to an entry's name and value lengths. */
const ENTRY_OVERHEAD_BYTES = 32;

export interface DecodedBlock {
  fields: HeaderField[];
  /** The list's size by RFC 9113's measure (name + value + 32 per field), for SETTINGS_MAX_HEADER_LIST_SIZE. */
  listBytes: number;
}

/**
 * STRING_CACHE_SLOTS / STRING_CACHE_BYTES_MAX: a decoder's cache of recent string literals, direct-mapped by a
 * hash of their bytes. A client whose encoder never indexes (ours, transports/h2/unary-client.ts: every field a
 * literal) sends the same path, authority, content type and metadata on every call; decoding each afresh was a
 * string, a Buffer view and two result tuples per field, the largest part of a leader's garbage per one-call
 * write (bench/write-alloc.ts). A hit costs a byte comparison and allocates nothing; a miss decodes as before.
 */
const STRING_CACHE_SLOTS = 64;
const STRING_CACHE_BYTES_MAX = 128;

/** HpackDecoder holds one connection's decoding context: its dynamic table. */
export class HpackDecoder {
  /** Newest first (index 62 is entries[0]). */
  private readonly entries: HeaderField[] = [];
  private tableBytes = 0;
  private tableBytesMax: number;
  /** The read offset in the block being decoded (readInteger and readString advance it). */
  private readonly cursor: Cursor = { at: 0 };
  /** Per slot: a literal's bytes as they came (latin1) and what they decode to (the same string when raw). */
  private readonly cachedBytes: string[] = new Array<string>(STRING_CACHE_SLOTS).fill('');
  private readonly cachedText: string[] = new Array<string>(STRING_CACHE_SLOTS).fill('');
  /** Per slot: 1 when its literal was Huffman-coded. */
  private readonly cachedCoded = new Uint8Array(STRING_CACHE_SLOTS);
  /** Per slot: the last literal field whose value is the slot's string (fields are read-only: shared, as table entries are). */
  private readonly cachedFields: Array<HeaderField | undefined> = new Array<HeaderField | undefined>(
    STRING_CACHE_SLOTS,
  ).fill(undefined);
  /** The slot of the string readString returned last, or -1 when it was not cached (too long). */
  private lastSlot = -1;

  /** `settingsTableBytes` is the SETTINGS_HEADER_TABLE_SIZE we advertised: the bound of any size update. */
  constructor(private readonly settingsTableBytes: number) {
    this.tableBytesMax = settingsTableBytes;
  }

  /**
   * decode decodes one complete header block. Every field is decoded, even past a list bound, because the
   * block changes the dynamic table the next block is read against; the caller compares `listBytes`. Fields past
   * `listBytesMax` are not kept (an HPACK bomb, thousands of one-byte references to a large table entry, then
   * costs a count, not a list).
   */
  decode(block: Buffer, listBytesMax = Infinity): DecodedBlock {
    const fields: HeaderField[] = [];
    let listBytes = 0;
    const cursor = this.cursor;
    cursor.at = 0;
    // A dynamic table size update is allowed only at the start of a block (RFC 7541 4.2).
    let sizeUpdateAllowed = true;
    while (cursor.at < block.length) {
      const first = block[cursor.at]!;
      let field: HeaderField;
      if (first & 0x80) {
        // Indexed header field (6.1).
        field = this.lookup(readInteger(block, cursor, 7));
      } else if ((first & 0xe0) === 0x20) {
        // Dynamic table size update (6.3).
        if (!sizeUpdateAllowed) throw new HpackError('a table size update after the start of a block');
        const size = readInteger(block, cursor, 5);
        if (size > this.settingsTableBytes)
          throw new HpackError('a table size update above SETTINGS_HEADER_TABLE_SIZE');
        this.tableBytesMax = size;
        this.evict(0);
        continue;
      } else {
        // Literal: with incremental indexing (01, 6-bit index), without (0000) or never indexed (0001), 4-bit.
        const indexing = (first & 0xc0) === 0x40;
        const index = readInteger(block, cursor, indexing ? 6 : 4);
        const name = index === 0 ? this.readString(block) : this.lookup(index)[0];
        const value = this.readString(block);
        // The field of a cached value, when it was this name's too: one tuple for a literal sent on every call.
        const cached = this.lastSlot < 0 ? undefined : this.cachedFields[this.lastSlot];
        if (cached !== undefined && cached[0] === name && cached[1] === value) field = cached;
        else {
          field = [name, value];
          if (this.lastSlot >= 0) this.cachedFields[this.lastSlot] = field;
        }
        if (indexing) this.insert(field);
      }
      sizeUpdateAllowed = false;
      listBytes += field[0].length + field[1].length + ENTRY_OVERHEAD_BYTES;
      if (listBytes <= listBytesMax) fields.push(field);
    }
    return { fields, listBytes };
  }

  /** readString reads a string literal (RFC 7541 5.2) at the cursor, Huffman-coded or raw (latin1: bytes as they are). */
  private readString(block: Buffer): string {
    const cursor = this.cursor;
    if (cursor.at >= block.length) throw new HpackError('a string cut short');
    const huffman = (block[cursor.at]! & 0x80) !== 0;
    const length = readInteger(block, cursor, 7);
    const start = cursor.at;
    const end = start + length;
    if (end > block.length) throw new HpackError('a string longer than its block');
    cursor.at = end;
    if (length > STRING_CACHE_BYTES_MAX) {
      this.lastSlot = -1;
      return decodeStringBytes(block, start, end, huffman);
    }
    // FNV-1a over the bytes: a raw and a Huffman literal of the same bytes share a slot, told apart by cachedCoded.
    let hash = 0x811c9dc5;
    for (let i = start; i < end; i++) hash = Math.imul(hash ^ block[i]!, 0x01000193);
    const slot = (hash >>> 0) % STRING_CACHE_SLOTS;
    this.lastSlot = slot;
    const bytes = this.cachedBytes[slot]!;
    const coded = huffman ? 1 : 0;
    if (bytes.length === length && this.cachedCoded[slot] === coded) {
      let same = true;
      for (let i = 0; i < length && same; i++) same = bytes.charCodeAt(i) === block[start + i];
      if (same) return this.cachedText[slot]!;
    }
    const text = decodeStringBytes(block, start, end, huffman);
    this.cachedBytes[slot] = huffman ? block.toString('latin1', start, end) : text;
    this.cachedText[slot] = text;
    this.cachedCoded[slot] = coded;
    return text;
  }

  private lookup(index: number): HeaderField {
    if (index === 0) throw new HpackError('index 0');
    if (index <= STATIC_TABLE.length) return STATIC_TABLE[index - 1]!;
    const entry = this.entries[index - STATIC_TABLE.length - 1];
    if (entry === undefined) throw new HpackError(`index ${index} beyond the tables`);
    return entry;
  }

  private insert(field: HeaderField): void {
    const size = field[0].length + field[1].length + ENTRY_OVERHEAD_BYTES;
    // An entry larger than the table empties it and is not added (RFC 7541 4.4).
    this.evict(size);
    if (size > this.tableBytesMax) return;
    this.entries.unshift(field);
    this.tableBytes += size;
  }

  /** evict drops the oldest entries until `room` more bytes fit (all of them if they cannot). */
  private evict(room: number): void {
    while (this.entries.length > 0 && this.tableBytes + room > this.tableBytesMax) {
      const dropped = this.entries.pop()!;
      this.tableBytes -= dropped[0].length + dropped[1].length + ENTRY_OVERHEAD_BYTES;
    }
  }
}

/** INTEGER_MAX bounds a decoded integer (an index, a length, a size): anything larger is an attack, not HPACK. */
const INTEGER_MAX = 2 ** 31 - 1;

interface Cursor {
  at: number;
}

/** decodeInteger reads an N-bit-prefix integer (RFC 7541 5.1) at `at`: [value, the offset after it]. */
export function decodeInteger(block: Buffer, at: number, prefixBits: number): [number, number] {
  const cursor = { at };
  const value = readInteger(block, cursor, prefixBits);
  return [value, cursor.at];
}

/** readInteger reads an N-bit-prefix integer (RFC 7541 5.1) at the cursor and moves the cursor past it. */
function readInteger(block: Buffer, cursor: Cursor, prefixBits: number): number {
  const mask = (1 << prefixBits) - 1;
  let at = cursor.at;
  let value = block[at]! & mask;
  at += 1;
  if (value >= mask) {
    let shift = 0;
    for (;;) {
      if (at >= block.length) throw new HpackError('an integer cut short');
      const byte = block[at++]!;
      value += (byte & 0x7f) * 2 ** shift;
      if (value > INTEGER_MAX) throw new HpackError('an integer beyond 2^31-1');
      if ((byte & 0x80) === 0) break;
      shift += 7;
    }
  }
  cursor.at = at;
  return value;
}

/** decodeStringBytes decodes a string literal's bytes, Huffman-coded or raw (as latin1: bytes kept as they are). */
function decodeStringBytes(block: Buffer, start: number, end: number, huffman: boolean): string {
  if (!huffman) return block.toString('latin1', start, end);
  try {
    return huffmanDecode(block, start, end);
  } catch (error) {
    if (error instanceof HuffmanError) throw new HpackError(error.message);
    throw error;
  }
}

// --- encoder -----------------------------------------------------------------------------------------------

/** encodeInteger appends an N-bit-prefix integer with `firstBits` in the first byte's high bits. */
function encodeInteger(out: number[], value: number, prefixBits: number, firstBits: number): void {
  const mask = (1 << prefixBits) - 1;
  if (value < mask) {
    out.push(firstBits | value);
    return;
  }
  out.push(firstBits | mask);
  value -= mask;
  while (value >= 0x80) {
    out.push((value % 0x80) | 0x80);
    value = Math.floor(value / 0x80);
  }
  out.push(value);
}

function encodeRawString(out: number[], text: string): void {
  const bytes = Buffer.from(text, 'latin1');
  encodeInteger(out, bytes.length, 7, 0);
  for (const byte of bytes) out.push(byte);
}

const STATIC_NAME_INDEX = new Map<string, number>();
const STATIC_FIELD_INDEX = new Map<string, number>();
STATIC_TABLE.forEach(([name, value], i) => {
  if (!STATIC_NAME_INDEX.has(name)) STATIC_NAME_INDEX.set(name, i + 1);
  STATIC_FIELD_INDEX.set(`${name}\0${value}`, i + 1);
});

/**
 * encodeHeaderBlock encodes fields statelessly: a static-table match as an index, anything else as a literal
 * without indexing (the name by static index when it has one). Names must be lowercase (RFC 9113 8.2.1).
 */
export function encodeHeaderBlock(fields: readonly HeaderField[]): Buffer {
  const out: number[] = [];
  for (const [name, value] of fields) {
    const full = STATIC_FIELD_INDEX.get(`${name}\0${value}`);
    if (full !== undefined) {
      encodeInteger(out, full, 7, 0x80);
      continue;
    }
    const nameIndex = STATIC_NAME_INDEX.get(name);
    if (nameIndex !== undefined) encodeInteger(out, nameIndex, 4, 0);
    else {
      out.push(0);
      encodeRawString(out, name);
    }
    encodeRawString(out, value);
  }
  return Buffer.from(out);
}
