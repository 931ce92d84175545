// EventQueue is a binary min-heap on (atUs, order): virtual time first, then the
// order events were scheduled in, so equal times never depend on heap layout.
export interface Scheduled<T> {
  atUs: number;
  order: number;
  item: T;
}

export class EventQueue<T> {
  private readonly heap: Scheduled<T>[] = [];
  private nextOrder = 0;

  get size(): number {
    return this.heap.length;
  }

  push(atUs: number, item: T): void {
    if (!Number.isFinite(atUs)) throw new Error(`EventQueue.push: time must be finite, got ${atUs}`);
    const node: Scheduled<T> = { atUs, order: this.nextOrder++, item };
    const heap = this.heap;
    heap.push(node);
    let i = heap.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!before(node, heap[parent]!)) break;
      heap[i] = heap[parent]!;
      i = parent;
    }
    heap[i] = node;
  }

  peekTimeUs(): number | undefined {
    return this.heap[0]?.atUs;
  }

  pop(): Scheduled<T> | undefined {
    const heap = this.heap;
    const top = heap[0];
    if (top === undefined) return undefined;
    const last = heap.pop()!;
    if (heap.length > 0) {
      let i = 0;
      const n = heap.length;
      for (;;) {
        const left = 2 * i + 1;
        if (left >= n) break;
        const right = left + 1;
        const child = right < n && before(heap[right]!, heap[left]!) ? right : left;
        if (!before(heap[child]!, last)) break;
        heap[i] = heap[child]!;
        i = child;
      }
      heap[i] = last;
    }
    return top;
  }
}

function before<T>(a: Scheduled<T>, b: Scheduled<T>): boolean {
  return a.atUs < b.atUs || (a.atUs === b.atUs && a.order < b.order);
}
