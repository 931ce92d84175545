// Waiters hold store operations until a condition on the node's state holds (the local applied
// seqno reached a read index, a leader became known). Conditions are re-checked after every engine
// step; each waiter has a deadline, and their number is bounded.
import { StoreUnavailableError } from '../store/replicated-store.js';

interface Waiter {
  condition: () => boolean;
  resolve: () => void;
  reject: (err: Error) => void;
  timer: NodeJS.Timeout;
}

export class Waiters {
  private readonly waiting = new Set<Waiter>();

  constructor(private readonly countMax: number) {}

  get count(): number {
    return this.waiting.size;
  }

  /** until resolves once condition() holds, or rejects with StoreUnavailableError at deadlineAt. */
  until(condition: () => boolean, deadlineAt: number, what: string): Promise<void> {
    if (condition()) return Promise.resolve();
    if (this.waiting.size >= this.countMax) return Promise.reject(new StoreUnavailableError(`too many operations waiting (waiterCountMax ${this.countMax})`));
    return new Promise<void>((resolve, reject) => {
      const waiter: Waiter = {
        condition, resolve, reject,
        timer: setTimeout(() => {
          this.waiting.delete(waiter);
          reject(new StoreUnavailableError(`timed out waiting for ${what}`));
        }, Math.max(0, deadlineAt - Date.now())),
      };
      this.waiting.add(waiter);
    });
  }

  /** check settles every waiter whose condition now holds. */
  check(): void {
    for (const waiter of this.waiting) {
      let holds: boolean;
      try {
        holds = waiter.condition();
      } catch (err) {
        this.settle(waiter);
        waiter.reject(err instanceof Error ? err : new Error(String(err)));
        continue;
      }
      if (!holds) continue;
      this.settle(waiter);
      waiter.resolve();
    }
  }

  /** rejectAll ends every wait with err (the node stopped or failed). */
  rejectAll(err: Error): void {
    for (const waiter of [...this.waiting]) {
      this.settle(waiter);
      waiter.reject(err);
    }
  }

  private settle(waiter: Waiter): void {
    clearTimeout(waiter.timer);
    this.waiting.delete(waiter);
  }
}
