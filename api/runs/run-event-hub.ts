// RunEventHub wakes open run event streams when their run gets an event: one subscriber connection per API
// process listens on runKeys.eventsChannel (every append publishes the run id there) and calls the listeners
// of that run. Events themselves are always read from the run's Redis stream, in its order, so a wake-up lost
// to a reconnect costs latency (until the stream's next keep-alive read), never an event. An open stream so
// holds no Redis connection of its own.
import type { Redis } from 'ioredis';
import { connectRedis } from '../redis/redis-target.js';
import { runKeys } from './run-records.js';

/** hubSubscribeWaitMs bounds how long a new stream waits for the hub's subscription to be confirmed. */
export const hubSubscribeWaitMs = 1000;

export class RunEventHub {
  private readonly subscriber: Redis;
  private readonly listeners = new Map<string, Set<() => void>>();
  private readonly subscribed: Promise<unknown>;
  private notifications = 0;

  constructor(redisUrl: string) {
    // ioredis subscribes again after a reconnect (autoResubscribe).
    this.subscriber = connectRedis(redisUrl, { maxRetriesPerRequest: null });
    this.subscriber.on('error', () => undefined);
    this.subscriber.on('message', (_channel: string, runId: string) => {
      this.notifications++;
      for (const wake of this.listeners.get(runId) ?? []) wake();
    });
    this.subscribed = this.subscriber.subscribe(runKeys.eventsChannel).catch(() => undefined);
  }

  /** listen calls wake on every event appended to runId until the returned function is called. */
  async listen(runId: string, wake: () => void): Promise<() => void> {
    let set = this.listeners.get(runId);
    if (!set) {
      set = new Set();
      this.listeners.set(runId, set);
    }
    set.add(wake);
    const listening = set;
    // Not confirmed in time: the stream still reads on every keep-alive, so it stays correct, only slower.
    await Promise.race([this.subscribed, new Promise((resolve) => setTimeout(resolve, hubSubscribeWaitMs).unref())]);
    return () => {
      listening.delete(wake);
      if (listening.size === 0 && this.listeners.get(runId) === listening) this.listeners.delete(runId);
    };
  }

  /**
   * notificationCount counts every notification this process heard. Two reads of one stream position made
   * while it did not change cannot differ by an event whose listeners were not woken after both began, which
   * is what lets streams share a read (routes/runs.ts).
   */
  get notificationCount(): number {
    return this.notifications;
  }

  get listenerCount(): number {
    let count = 0;
    for (const set of this.listeners.values()) count += set.size;
    return count;
  }

  close(): void {
    this.listeners.clear();
    this.subscriber.disconnect();
  }
}
