// The set of linearized operations in the search, as a bitset whose memo-table key stays short.
// Completed operations get bits in call order, so a configuration's set is nearly always "every early
// operation, plus a few in a window": only the words from the first not-full word (lowWord) to the
// last non-zero one (highWord) need storing. Indeterminate operations stay open to the end of the
// history, which would pin that window open, so they get bits in a separate region after the
// completed ones, stored whole. The hash is the XOR of per-bit constants: O(1) per change.
import type { EncodedOp } from './encode.js';
import { bitHashes } from './bit-hashes.js';

const FULL_WORD = 0xffffffff;

export class LinearizedSet {
  /** completed operations' words [0, completedWords), then the indeterminate ones' */
  readonly bits: Uint32Array;
  readonly completedWords: number;
  readonly indeterminateWords: number;
  /** XOR of the members' hash constants */
  hash = 0;
  /** first completed word that is not all ones (completedWords when every such word is) */
  lowWord = 0;
  /** last completed word that is not zero (-1 when none) */
  highWord = -1;
  private readonly bitOf: Int32Array;
  private readonly hashOf: Uint32Array;

  constructor(ops: readonly EncodedOp[]) {
    const completed = ops.filter((op) => op.returnTime !== Infinity).length;
    this.completedWords = (completed + 31) >>> 5;
    this.indeterminateWords = (ops.length - completed + 31) >>> 5;
    this.bits = new Uint32Array(this.completedWords + this.indeterminateWords);
    this.bitOf = new Int32Array(ops.length);
    let nextCompleted = 0;
    let nextIndeterminate = this.completedWords * 32;
    ops.forEach((op, i) => {
      this.bitOf[i] = op.returnTime !== Infinity ? nextCompleted++ : nextIndeterminate++;
    });
    this.hashOf = bitHashes(ops.length);
  }

  /** Words of the completed region worth storing: [lowWord, lowWord + windowWords()). */
  windowWords(): number {
    return this.highWord >= this.lowWord ? this.highWord - this.lowWord + 1 : 0;
  }

  add(op: number): void {
    const bit = this.bitOf[op]!;
    const w = bit >>> 5;
    this.bits[w]! |= 1 << (bit & 31);
    this.hash = (this.hash ^ this.hashOf[op]!) >>> 0;
    if (w >= this.completedWords) return;
    if (w > this.highWord) this.highWord = w;
    while (this.lowWord < this.completedWords && this.bits[this.lowWord] === FULL_WORD) this.lowWord++;
  }

  remove(op: number): void {
    const bit = this.bitOf[op]!;
    const w = bit >>> 5;
    this.bits[w]! &= ~(1 << (bit & 31));
    this.hash = (this.hash ^ this.hashOf[op]!) >>> 0;
    if (w >= this.completedWords) return;
    if (w < this.lowWord) this.lowWord = w;
    // words below lowWord are full, so this stops within the window
    while (this.highWord >= 0 && this.bits[this.highWord] === 0) this.highWord--;
  }
}
