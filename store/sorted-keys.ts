// SortedKeys is the ascending key list both document stores (MemoryDocumentStore, the replicated
// store's state machine) keep beside their key → slot map, so list() pages through a prefix by
// binary search instead of sorting every call.
//
// It is a list of sorted blocks of at most SORTED_KEYS_BLOCK_COUNT_MAX keys: an insert or delete
// moves at most one block's keys, not the whole list's. One flat array would move every key after
// the insertion point on each new key (~20 µs per insert at 100k keys, ~320 µs at 1M measured here),
// which a store taking thousands of new keys a second cannot afford.

/** SORTED_KEYS_BLOCK_COUNT_MAX is the most keys one block holds before it splits in two. */
export const SORTED_KEYS_BLOCK_COUNT_MAX = 1_024;

/** KeyPage is one page of keys under a prefix; nextAfter is the last key when more follow, else null. */
export interface KeyPage {
  keys: string[];
  nextAfter: string | null;
}

export class SortedKeys {
  /** blocks are non-empty, each ascending, and every key of a block is below every key of the next. */
  private blocks: string[][] = [];
  private count = 0;

  /** blockCountMax is SORTED_KEYS_BLOCK_COUNT_MAX but for tests, which want many splits from few keys. */
  constructor(private readonly blockCountMax = SORTED_KEYS_BLOCK_COUNT_MAX) {
    if (!Number.isSafeInteger(blockCountMax) || blockCountMax < 2)
      throw new RangeError(`blockCountMax must be an integer >= 2, got ${blockCountMax}`);
  }

  /** fromSorted adopts keys already in strictly ascending order (a decoded snapshot). */
  static fromSorted(keys: readonly string[], blockCountMax = SORTED_KEYS_BLOCK_COUNT_MAX): SortedKeys {
    const sorted = new SortedKeys(blockCountMax);
    const half = Math.max(1, blockCountMax >>> 1);
    for (let from = 0; from < keys.length; from += half) sorted.blocks.push(keys.slice(from, from + half));
    sorted.count = keys.length;
    return sorted;
  }

  get size(): number {
    return this.count;
  }

  /** insert puts a key that is not there yet in its place. */
  insert(key: string): void {
    if (this.blocks.length === 0) {
      this.blocks.push([key]);
      this.count = 1;
      return;
    }
    const b = Math.min(this.blockFor(key), this.blocks.length - 1);
    const block = this.blocks[b]!;
    block.splice(lowerBound(block, key), 0, key);
    this.count++;
    if (block.length > this.blockCountMax) this.blocks.splice(b + 1, 0, block.splice(block.length >>> 1));
  }

  /** remove takes out a key that is there (a missing key is left alone). */
  remove(key: string): void {
    const b = this.blockFor(key);
    const block = this.blocks[b];
    if (!block) return;
    const i = lowerBound(block, key);
    if (block[i] !== key) return;
    block.splice(i, 1);
    this.count--;
    if (block.length === 0) this.blocks.splice(b, 1);
  }

  /**
   * all lists every key in ascending order, a new array. concat, not flat(): flat() took 6-60 ms over 190 blocks of
   * 512 keys against concat's 0.4-4 ms (node 20, measured for the snapshot capture, which copies the key list in one
   * piece on the loop).
   */
  all(): string[] {
    return ([] as string[]).concat(...this.blocks);
  }

  /**
   * page returns up to limit keys that start with prefix, in ascending order, after `after` (an
   * `after` below the prefix starts at the prefix's first key).
   */
  page(prefix: string, limit: number, after?: string): KeyPage {
    const start = after !== undefined && after >= prefix ? after : undefined;
    let b = start === undefined ? this.blockFor(prefix) : this.blockAbove(start);
    let i =
      b < this.blocks.length
        ? start === undefined
          ? lowerBound(this.blocks[b]!, prefix)
          : upperBound(this.blocks[b]!, start)
        : 0;
    const keys: string[] = [];
    let more = false;
    // Bounded by the keys: each pass takes one key or moves to the next block.
    while (b < this.blocks.length) {
      const block = this.blocks[b]!;
      if (i >= block.length) {
        b++;
        i = 0;
        continue;
      }
      const key = block[i]!;
      if (!key.startsWith(prefix)) break;
      if (keys.length === limit) {
        more = true;
        break;
      }
      keys.push(key);
      i++;
    }
    return { keys, nextAfter: more && keys.length > 0 ? keys[keys.length - 1]! : null };
  }

  /** blockFor is the first block whose last key is >= key (blocks.length when there is none). */
  private blockFor(key: string): number {
    return firstIndex(this.blocks.length, (i) => lastOf(this.blocks[i]!) < key);
  }

  /** blockAbove is the first block whose last key is > key. */
  private blockAbove(key: string): number {
    return firstIndex(this.blocks.length, (i) => lastOf(this.blocks[i]!) <= key);
  }
}

function lowerBound(keys: readonly string[], target: string): number {
  return firstIndex(keys.length, (i) => keys[i]! < target);
}

function upperBound(keys: readonly string[], target: string): number {
  return firstIndex(keys.length, (i) => keys[i]! <= target);
}

function lastOf(block: readonly string[]): string {
  return block[block.length - 1]!;
}

/** firstIndex is the first i in [0, length) where before(i) is false; before must hold for a prefix only. */
function firstIndex(length: number, before: (i: number) => boolean): number {
  let low = 0;
  let high = length;
  while (low < high) {
    const middle = (low + high) >>> 1;
    if (before(middle)) low = middle + 1;
    else high = middle;
  }
  return low;
}
