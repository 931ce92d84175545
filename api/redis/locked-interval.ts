// startLockedInterval runs a periodic task on one process of the cluster at a time: each interval, the process
// that takes a Redis lock (SET NX with a TTL of one interval) runs it, the others skip. The lock outlives the
// task on that process, so no two processes run it in the same interval; a process that dies leaves the lock
// to expire. Sweeps (album blobs, run records) use it.
import type { Redis } from 'ioredis';

export interface LockedInterval {
  stop(): void;
}

export function startLockedInterval(
  redis: Redis,
  lockKey: string,
  intervalMs: number,
  task: () => Promise<unknown>,
  onError: (error: unknown) => void,
): LockedInterval {
  const timer = setInterval(() => {
    void (async () => {
      const taken = await redis.set(lockKey, String(process.pid), 'PX', intervalMs, 'NX');
      if (taken === 'OK') await task();
    })().catch(onError);
  }, intervalMs);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}
