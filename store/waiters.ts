// Waiters hold store operations until a condition on the node's state holds (the local applied
// seqno reached a read index, a leader became known). Each waiter has a deadline, and their number
// is bounded. check() runs after every engine step: a general condition is re-checked each time, but
// the common wait — a counter (the applied seqno) reaching a value — is kept in a min-heap by that
// value, so a step costs one read of the counter plus the waiters it releases, not one call per waiter.
import { StoreUnavailableError } from './errors.js';
import { LazyMinHeap } from './lazy-heap.js';

interface Waiter {
  resolve: () => void;
  reject: (err: Error) => void;
  timer: NodeJS.Timeout;
  /** settled: released, timed out or rejected (a settled seq waiter may still sit in its heap until popped). */
  settled: boolean;
}

interface ConditionWaiter extends Waiter {
  condition: () => boolean;
}

interface SeqWaiter extends Waiter {
  seq: number;
}

/** seqOf keys a counter's heap of waiters: the lowest awaited value on top; settled entries are dropped lazily. */
const seqOf = (waiter: SeqWaiter): number => waiter.seq;
type SeqHeap = LazyMinHeap<SeqWaiter>;

export class Waiters {
  private readonly waiting = new Set<ConditionWaiter>();
  private readonly bySeq = new Map<() => number, SeqHeap>();
  private seqLiveCount = 0;

  constructor(private readonly countMax: number) {}

  get count(): number {
    return this.waiting.size + this.seqLiveCount;
  }

  /** until resolves once condition() holds, or rejects with StoreUnavailableError at deadlineAt. */
  until(condition: () => boolean, deadlineAt: number, what: string): Promise<void> {
    if (condition()) return Promise.resolve();
    if (this.count >= this.countMax) return this.tooMany();
    return new Promise<void>((resolve, reject) => {
      const waiter: ConditionWaiter = {
        condition,
        resolve,
        reject,
        settled: false,
        timer: setTimeout(
          () => {
            this.settleCondition(waiter);
            reject(new StoreUnavailableError(`timed out waiting for ${what}`));
          },
          Math.max(0, deadlineAt - Date.now()),
        ),
      };
      this.waiting.add(waiter);
    });
  }

  /**
   * untilReached resolves once counter() >= seq, or rejects with StoreUnavailableError at deadlineAt. counter
   * must only grow, and be the same function for every wait on that counter (it names the heap).
   */
  untilReached(counter: () => number, seq: number, deadlineAt: number, what: string): Promise<void> {
    if (counter() >= seq) return Promise.resolve();
    if (this.count >= this.countMax) return this.tooMany();
    let heap = this.bySeq.get(counter);
    if (!heap) {
      heap = new LazyMinHeap<SeqWaiter>(seqOf);
      this.bySeq.set(counter, heap);
    }
    const waiters = heap;
    return new Promise<void>((resolve, reject) => {
      const waiter: SeqWaiter = {
        seq,
        resolve,
        reject,
        settled: false,
        timer: setTimeout(
          () => {
            if (waiter.settled) return;
            this.settleSeq(waiter, waiters);
            reject(new StoreUnavailableError(`timed out waiting for ${what}`));
            waiters.compactIfMostlyDead();
          },
          Math.max(0, deadlineAt - Date.now()),
        ),
      };
      this.seqLiveCount++;
      waiters.push(waiter);
    });
  }

  /** check settles every waiter whose condition now holds. */
  check(): void {
    for (const waiter of this.waiting) {
      let holds: boolean;
      try {
        holds = waiter.condition();
      } catch (err) {
        this.settleCondition(waiter);
        waiter.reject(err instanceof Error ? err : new Error(String(err)));
        continue;
      }
      if (!holds) continue;
      this.settleCondition(waiter);
      waiter.resolve();
    }
    for (const [counter, heap] of this.bySeq) {
      let now: number;
      try {
        now = counter();
      } catch (err) {
        this.rejectHeap(heap, err instanceof Error ? err : new Error(String(err)));
        continue;
      }
      // Bounded by the heap's size: every pass pops one entry.
      for (let top = heap.peek(); top !== undefined && (top.settled || top.seq <= now); top = heap.peek()) {
        heap.pop();
        if (top.settled) {
          heap.dead--;
          continue;
        }
        this.settleSeq(top, heap, false);
        top.resolve();
      }
    }
  }

  /** rejectAll ends every wait with err (the node stopped or failed). */
  rejectAll(err: Error): void {
    for (const waiter of [...this.waiting]) {
      this.settleCondition(waiter);
      waiter.reject(err);
    }
    for (const heap of this.bySeq.values()) this.rejectHeap(heap, err);
  }

  private rejectHeap(heap: SeqHeap, err: Error): void {
    const items = heap.takeAll();
    for (const waiter of items) {
      if (waiter.settled) continue;
      this.settleSeq(waiter, heap, false);
      waiter.reject(err);
    }
  }

  private tooMany(): Promise<void> {
    return Promise.reject(new StoreUnavailableError(`too many operations waiting (waiterCountMax ${this.countMax})`));
  }

  private settleCondition(waiter: ConditionWaiter): void {
    waiter.settled = true;
    clearTimeout(waiter.timer);
    this.waiting.delete(waiter);
  }

  /** settleSeq marks a seq waiter settled; inHeap says it stays in its heap (to be dropped when it surfaces). */
  private settleSeq(waiter: SeqWaiter, heap: SeqHeap, inHeap = true): void {
    waiter.settled = true;
    clearTimeout(waiter.timer);
    this.seqLiveCount--;
    if (inHeap) heap.dead++;
  }
}
