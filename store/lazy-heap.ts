// LazyMinHeap: a binary min-heap of waiting entries by a numeric key, whose settled entries (answered, timed out)
// are not searched out and removed but dropped lazily: when they reach the top, or all at once when they outnumber
// the live ones. The store keeps its proposals by deadline (proposals.ts) and its reads by the applied seqno
// they wait for (waiters.ts) in one each. Written here rather than taken from a package: the lazy drop needs the
// settled count beside the array, and the hot paths want the key read without a comparator closure per swap.

export interface Settleable {
  /** settled: the entry is answered; it may sit in the heap until popped or compacted. */
  settled: boolean;
}

export class LazyMinHeap<T extends Settleable> {
  readonly items: T[] = [];
  /** dead counts settled entries still in items (the owner counts them in when it settles one in the heap). */
  dead = 0;

  constructor(private readonly keyOf: (item: T) => number) {}

  push(item: T): void {
    const items = this.items;
    const key = this.keyOf(item);
    items.push(item);
    let at = items.length - 1;
    while (at > 0) {
      const up = (at - 1) >> 1;
      if (this.keyOf(items[up]!) <= key) break;
      items[at] = items[up]!;
      at = up;
    }
    items[at] = item;
  }

  peek(): T | undefined {
    return this.items[0];
  }

  pop(): T | undefined {
    const items = this.items;
    const top = items[0];
    const last = items.pop();
    if (top === undefined || last === undefined || items.length === 0) return top;
    const lastKey = this.keyOf(last);
    let at = 0;
    for (;;) {
      const left = 2 * at + 1;
      if (left >= items.length) break;
      const right = left + 1;
      const child = right < items.length && this.keyOf(items[right]!) < this.keyOf(items[left]!) ? right : left;
      if (this.keyOf(items[child]!) >= lastKey) break;
      items[at] = items[child]!;
      at = child;
    }
    items[at] = last;
    return top;
  }

  /** compactIfMostlyDead rebuilds the heap from its live entries once the settled ones outnumber them. */
  compactIfMostlyDead(): void {
    if (this.dead <= this.items.length - this.dead) return;
    const live = this.items.filter((item) => !item.settled);
    this.clear();
    for (const item of live) this.push(item);
  }

  /** takeAll empties the heap and returns what it held, settled entries included. */
  takeAll(): T[] {
    this.dead = 0;
    return this.items.splice(0);
  }

  clear(): void {
    this.items.length = 0;
    this.dead = 0;
  }
}
