// CanonicalHash: a 64-bit hash of a value's canonical form, fed by walking the value itself, with no
// text built on the way. It replaces hashing a JSON string (format 1's digest: JSON.stringify with a
// replacer, then SHA-1), which cost a JS call per property and a string per step on every node's event
// loop. Written here rather than taken from npm: the work is the walk (which bytes count, and how, is
// ours: recording/digest.ts), and the mixing is a few lines; the hash packages on npm hash a finished
// buffer or string, which is the allocation this avoids.
//
// Canonical means what JSON.stringify would keep, in the same order: an object's own enumerable keys in
// insertion order, a property whose value is undefined or a function left out, undefined in an array as
// null, a number that is not finite as null, -0 as 0. Every value is tagged with its kind and every
// string, array, object and byte string with its length, so two different values never feed the same
// words. Not a cryptographic hash: a digest only ever meets the digest of the same step's replay, so a
// collision is an accident of 2^-64, not an attack.

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
const TAG_KEY = 11;

/** SHORT_STRING_CHARS: a string shorter than this is fed as its 64-bit fingerprint (cached), not char by char. */
const SHORT_STRING_CHARS = 64;
/**
 * FINGERPRINT_SLOTS: the fingerprint cache is direct-mapped (a slot per few chars of the string, the last
 * string seen there kept): bounded, and a hit is one comparison, which for the engine's own string
 * literals (keys, effect types) is a pointer comparison. A Map lookup per key cost more than it saved.
 */
const FINGERPRINT_SLOTS = 1024;
const slotStrings: Array<string | undefined> = new Array<string | undefined>(FINGERPRINT_SLOTS);
const slotWords = new Uint32Array(FINGERPRINT_SLOTS * 2);

const float = new Float64Array(1);
const floatWords = new Uint32Array(float.buffer);

/** CanonicalHash mixes 32-bit words into two murmur3-style lanes with different constants and seeds. */
export class CanonicalHash {
  private h1 = 0x9747b28c;
  private h2 = 0x5bd1e995;
  private words = 0;

  word(x: number): void {
    let k1 = Math.imul(x, 0xcc9e2d51);
    k1 = (k1 << 15) | (k1 >>> 17);
    this.h1 ^= Math.imul(k1, 0x1b873593);
    this.h1 = (this.h1 << 13) | (this.h1 >>> 19);
    this.h1 = (Math.imul(this.h1, 5) + 0xe6546b64) | 0;
    let k2 = Math.imul(x ^ this.h1, 0x85ebca6b);
    k2 = (k2 << 17) | (k2 >>> 15);
    this.h2 ^= Math.imul(k2, 0xc2b2ae35);
    this.h2 = (this.h2 << 11) | (this.h2 >>> 21);
    this.h2 = (Math.imul(this.h2, 9) + 0x2f1fd3a5) | 0;
    this.words++;
  }

  number(n: number): void {
    if (!Number.isFinite(n)) this.word(TAG_NULL);
    else if ((n | 0) === n) {
      this.word(TAG_INT);
      this.word(n);
    } else {
      float[0] = n;
      this.word(TAG_FLOAT);
      this.word(floatWords[0]!);
      this.word(floatWords[1]!);
    }
  }

  /**
   * string feeds a short string as a 64-bit fingerprint of its chars (the same words whether or not it
   * was cached), a long one char by char. Effects repeat the same few short strings (keys, effect types,
   * method names) in every step, and hashing them char by char was a quarter of the digest's time.
   */
  string(s: string, tag = TAG_STRING): void {
    const length = s.length;
    this.word(tag);
    this.word(length);
    if (length < SHORT_STRING_CHARS) {
      const slot = fingerprintSlot(s);
      this.word(slotWords[slot * 2]!);
      this.word(slotWords[slot * 2 + 1]!);
      return;
    }
    this.chars(s);
  }

  private chars(s: string): void {
    const length = s.length;
    let i = 0;
    for (; i + 1 < length; i += 2) this.word(s.charCodeAt(i) | (s.charCodeAt(i + 1) << 16));
    if (i < length) this.word(s.charCodeAt(i));
  }

  bytes(b: Uint8Array, from = 0, to = b.length): void {
    this.word(TAG_BYTES);
    this.word(to - from);
    let i = from;
    for (; i + 3 < to; i += 4) this.word(b[i]! | (b[i + 1]! << 8) | (b[i + 2]! << 16) | (b[i + 3]! << 24));
    let last = 0;
    for (let shift = 0; i < to; i++, shift += 8) last |= b[i]! << shift;
    this.word(last);
  }

  arrayStart(length: number): void {
    this.word(TAG_ARRAY);
    this.word(length);
  }

  objectStart(): void {
    this.word(TAG_OBJECT);
  }

  key(name: string): void {
    this.string(name, TAG_KEY);
  }

  /** objectEnd closes an object: a key never follows it, so nesting cannot be confused with siblings. */
  objectEnd(): void {
    this.word(TAG_NULL);
  }

  /** words64 ends the hash as two 32-bit words. */
  words64(): readonly [number, number] {
    const h1 = fmix(this.h1 ^ this.words);
    const h2 = fmix(this.h2 ^ Math.imul(this.words, 0x27d4eb2f) ^ h1);
    return [h1 >>> 0, fmix(h1 ^ h2) >>> 0];
  }

  /** hex ends the hash: 16 hex digits (the width of format 1's digest). */
  hex(): string {
    const [h1, h2] = this.words64();
    return h1.toString(16).padStart(8, '0') + h2.toString(16).padStart(8, '0');
  }
}

/** fingerprintSlot is the cache slot holding s's fingerprint, filled first if it held another string. */
function fingerprintSlot(s: string): number {
  const n = s.length;
  const slot =
    (Math.imul(n, 0x9e3779b1) ^
      Math.imul(s.charCodeAt(0), 31) ^
      Math.imul(s.charCodeAt(n - 1), 7) ^
      s.charCodeAt(n >> 1)) &
    (FINGERPRINT_SLOTS - 1);
  if (slotStrings[slot] === s) return slot;
  const hash = new CanonicalHash();
  hash.word(n);
  for (let i = 0; i < n; i++) hash.word(s.charCodeAt(i));
  const [f1, f2] = hash.words64();
  slotStrings[slot] = s;
  slotWords[slot * 2] = f1;
  slotWords[slot * 2 + 1] = f2;
  return slot;
}

function fmix(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  return h ^ (h >>> 16);
}

/** BytesRule says how bytes count: the default feeds them whole; a rule may feed less (their length). */
export type BytesRule = (hash: CanonicalHash, bytes: Uint8Array, name: string, holder: object) => void;

const wholeBytes: BytesRule = (hash, bytes) => hash.bytes(bytes);

/** hashValue feeds a value's canonical form (see the file's head) into `hash`. */
export function hashValue(hash: CanonicalHash, value: unknown, rule: BytesRule = wholeBytes): void {
  walk(hash, value, '', null, rule, false);
}

function walk(
  hash: CanonicalHash,
  value: unknown,
  name: string,
  holder: object | null,
  rule: BytesRule,
  inArray: boolean,
): void {
  switch (typeof value) {
    case 'number':
      hash.number(value);
      return;
    case 'string':
      hash.string(value);
      return;
    case 'boolean':
      hash.word(value ? TAG_TRUE : TAG_FALSE);
      return;
    case 'bigint':
      hash.string(value.toString(), TAG_BIGINT);
      return;
    case 'object':
      break;
    default:
      // undefined, a function or a symbol: JSON leaves the property out, or writes null in an array.
      if (inArray) hash.word(TAG_NULL);
      return;
  }
  if (value === null) {
    hash.word(TAG_NULL);
    return;
  }
  if (value instanceof Uint8Array) {
    rule(hash, value, name, holder ?? {});
    return;
  }
  if (Array.isArray(value)) {
    const length = value.length;
    hash.arrayStart(length);
    for (let i = 0; i < length; i++) walk(hash, value[i], '', value, rule, true);
    return;
  }
  hash.objectStart();
  const record = value as Record<string, unknown>;
  for (const key in record) {
    if (!Object.prototype.hasOwnProperty.call(record, key)) continue;
    const v = record[key];
    if (v === undefined || typeof v === 'function' || typeof v === 'symbol') continue;
    hash.key(key);
    walk(hash, v, key, record, rule, false);
  }
  hash.objectEnd();
}
