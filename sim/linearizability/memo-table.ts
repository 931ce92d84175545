// Lowe's memoisation: a set of search configurations (which operations are linearized, register
// state). A configuration seen before leads nowhere new, so the search skips it. Entries live in one
// flat Uint32Array (no object per entry), chained from a power-of-two head table; each stores only
// the window of the linearized set that varies (linearized-set.ts):
//   entry = [hash, state, next entry offset + 1 (0 = end), lowWord, windowWords,
//            completed words [lowWord, lowWord + windowWords), indeterminate words]
import { mix32 } from './bit-hashes.js';
import type { LinearizedSet } from './linearized-set.js';

const HEADER_WORDS = 5;
const HEADS_INITIAL = 1024;
const ARENA_WORDS_INITIAL = 16 * 1024;

export { bitHashes, mix32 } from './bit-hashes.js';

/** The combined hash of a set's hash and a state. */
export function configHash(setHash: number, state: number): number {
  return (setHash ^ mix32(Math.imul(state + 1, 0x9e3779b1))) >>> 0;
}

export const MEMO_INSERTED = 0;
export const MEMO_PRESENT = 1;
export const MEMO_FULL = 2;

export class MemoTable {
  private arena: Uint32Array;
  private usedWords = 0;
  private entryCount = 0;
  private heads: Int32Array;
  private mask: number;

  /** wordsMax bounds the arena (MEMO_FULL past it). */
  constructor(private readonly wordsMax: number) {
    this.arena = new Uint32Array(Math.max(HEADER_WORDS, Math.min(ARENA_WORDS_INITIAL, wordsMax)));
    this.heads = new Int32Array(HEADS_INITIAL).fill(-1);
    this.mask = HEADS_INITIAL - 1;
  }

  get size(): number {
    return this.entryCount;
  }

  /** Adds (set, state) unless present. */
  insertIfAbsent(set: LinearizedSet, state: number): number {
    const hash = configHash(set.hash, state);
    const bits = set.bits;
    const low = set.lowWord;
    const window = set.windowWords();
    const indeterminateFrom = set.completedWords;
    const indeterminateWords = set.indeterminateWords;
    const arena = this.arena;
    for (let at = this.heads[hash & this.mask]!; at >= 0; at = arena[at + 2]! - 1) {
      if (arena[at] !== hash || arena[at + 1] !== state || arena[at + 3] !== low || arena[at + 4] !== window) continue;
      let same = true;
      let w = at + HEADER_WORDS;
      for (let i = 0; i < window && same; i++) same = arena[w++] === bits[low + i];
      for (let i = 0; i < indeterminateWords && same; i++) same = arena[w++] === bits[indeterminateFrom + i];
      if (same) return MEMO_PRESENT;
    }
    const entryWords = HEADER_WORDS + window + indeterminateWords;
    if (!this.ensureRoom(entryWords)) return MEMO_FULL;
    const at = this.usedWords;
    const slot = hash & this.mask;
    this.arena[at] = hash;
    this.arena[at + 1] = state;
    this.arena[at + 2] = this.heads[slot]! + 1;
    this.arena[at + 3] = low;
    this.arena[at + 4] = window;
    this.arena.set(bits.subarray(low, low + window), at + HEADER_WORDS);
    this.arena.set(
      bits.subarray(indeterminateFrom, indeterminateFrom + indeterminateWords),
      at + HEADER_WORDS + window,
    );
    this.heads[slot] = at;
    this.usedWords += entryWords;
    this.entryCount++;
    if (this.entryCount > this.heads.length) this.rehash(indeterminateWords);
    return MEMO_INSERTED;
  }

  private ensureRoom(entryWords: number): boolean {
    const needed = this.usedWords + entryWords;
    if (needed > this.wordsMax) return false;
    if (needed <= this.arena.length) return true;
    const grown = new Uint32Array(Math.min(Math.max(this.arena.length * 2, needed), this.wordsMax));
    grown.set(this.arena.subarray(0, this.usedWords));
    this.arena = grown;
    return true;
  }

  /** Doubles the head table (load factor 1) and relinks every entry by its stored hash. */
  private rehash(indeterminateWords: number): void {
    const heads = new Int32Array(this.heads.length * 2).fill(-1);
    const mask = heads.length - 1;
    for (let at = 0; at < this.usedWords; at += HEADER_WORDS + this.arena[at + 4]! + indeterminateWords) {
      const slot = this.arena[at]! & mask;
      this.arena[at + 2] = heads[slot]! + 1;
      heads[slot] = at;
    }
    this.heads = heads;
    this.mask = mask;
  }
}
