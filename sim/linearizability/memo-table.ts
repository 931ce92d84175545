// Lowe's memoisation: a set of search configurations (which operations are linearized, register
// state). A configuration seen before leads nowhere new, so the search skips it. Entries live in one
// flat Uint32Array (no object per entry) chained from a power-of-two head table:
//   entry = [hash, state, next entry + 1 (0 = end), bitset words...]

const ENTRY_HEADER_WORDS = 3;
const HEADS_INITIAL = 1024;
const ARENA_ENTRIES_INITIAL = 1024;

/** mix32: murmur3's finaliser, a fixed integer bijection (no randomness: verdicts must be reproducible). */
export function mix32(x: number): number {
  x ^= x >>> 16;
  x = Math.imul(x, 0x85ebca6b);
  x ^= x >>> 13;
  x = Math.imul(x, 0xc2b2ae35);
  x ^= x >>> 16;
  return x >>> 0;
}

/**
 * bitHashes(n)[i]: the hash contribution of operation i being linearized. A bitset's hash is the XOR
 * of its members' contributions, so setting or clearing a bit updates it in O(1).
 */
export function bitHashes(n: number): Uint32Array {
  const out = new Uint32Array(n);
  for (let i = 0; i < n; i++) out[i] = mix32(i + 1);
  return out;
}

/** The combined hash of a bitset hash and a state. */
export function configHash(bitsHash: number, state: number): number {
  return (bitsHash ^ mix32(Math.imul(state + 1, 0x9e3779b1))) >>> 0;
}

export const MEMO_INSERTED = 0;
export const MEMO_PRESENT = 1;
export const MEMO_FULL = 2;

export class MemoTable {
  private readonly entryWords: number;
  private arena: Uint32Array;
  private entryCount = 0;
  private heads: Int32Array;
  private mask: number;

  /** words = bitset length in 32-bit words; wordsMax bounds the arena (MEMO_FULL past it). */
  constructor(private readonly words: number, private readonly wordsMax: number) {
    this.entryWords = ENTRY_HEADER_WORDS + words;
    this.arena = new Uint32Array(Math.max(this.entryWords, Math.min(ARENA_ENTRIES_INITIAL * this.entryWords, wordsMax)));
    this.heads = new Int32Array(HEADS_INITIAL).fill(-1);
    this.mask = HEADS_INITIAL - 1;
  }

  get size(): number {
    return this.entryCount;
  }

  /** Adds (bits, state) unless present. `hash` must be configHash(hash of bits, state). */
  insertIfAbsent(bits: Uint32Array, hash: number, state: number): number {
    const arena = this.arena;
    const words = this.words;
    for (let e = this.heads[hash & this.mask]!; e >= 0; e = arena[e * this.entryWords + 2]! - 1) {
      const at = e * this.entryWords;
      if (arena[at] !== hash || arena[at + 1] !== state) continue;
      let same = true;
      for (let w = 0; w < words; w++) {
        if (arena[at + ENTRY_HEADER_WORDS + w] !== bits[w]) { same = false; break; }
      }
      if (same) return MEMO_PRESENT;
    }
    if (!this.ensureRoom()) return MEMO_FULL;
    const e = this.entryCount++;
    const at = e * this.entryWords;
    const slot = hash & this.mask;
    this.arena[at] = hash;
    this.arena[at + 1] = state;
    this.arena[at + 2] = this.heads[slot]! + 1;
    this.arena.set(bits.subarray(0, words), at + ENTRY_HEADER_WORDS);
    this.heads[slot] = e;
    if (this.entryCount > this.heads.length) this.rehash();
    return MEMO_INSERTED;
  }

  private ensureRoom(): boolean {
    const needed = (this.entryCount + 1) * this.entryWords;
    if (needed > this.wordsMax) return false;
    if (needed <= this.arena.length) return true;
    const grown = new Uint32Array(Math.min(this.arena.length * 2, Math.floor(this.wordsMax / this.entryWords) * this.entryWords));
    grown.set(this.arena);
    this.arena = grown;
    return true;
  }

  /** Doubles the head table (load factor 1) and relinks every entry by its stored hash. */
  private rehash(): void {
    const heads = new Int32Array(this.heads.length * 2).fill(-1);
    const mask = heads.length - 1;
    for (let e = 0; e < this.entryCount; e++) {
      const at = e * this.entryWords;
      const slot = this.arena[at]! & mask;
      this.arena[at + 2] = heads[slot]! + 1;
      heads[slot] = e;
    }
    this.heads = heads;
    this.mask = mask;
  }
}
