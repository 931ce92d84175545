// SerialQueue runs tasks one at a time, in submission order: the engine sees its inputs one by one,
// never concurrently, and a task that awaits (a hard-state fsync) holds back every task behind it.
export type Task = () => void | Promise<void>;

export class SerialQueue {
  private readonly tasks: Task[] = [];
  private running = false;
  private idleWaiters: Array<() => void> = [];

  constructor(private readonly onError: (err: unknown) => void) {}

  get length(): number {
    return this.tasks.length;
  }

  push(task: Task): void {
    this.tasks.push(task);
    if (!this.running) void this.drain();
  }

  /** idle resolves once no task is queued or running. */
  idle(): Promise<void> {
    if (!this.running && this.tasks.length === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /** clear drops the tasks not yet started. */
  clear(): void {
    this.tasks.length = 0;
  }

  private async drain(): Promise<void> {
    this.running = true;
    // Bounded by the queue: each pass removes one task.
    while (this.tasks.length > 0) {
      const task = this.tasks.shift()!;
      try {
        await task();
      } catch (err) {
        this.onError(err);
      }
    }
    this.running = false;
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const resolve of waiters) resolve();
  }
}
