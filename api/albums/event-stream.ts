// GET /events: the caller's channel `user:<userId>` as Server-Sent Events. The user's Redis stream is read
// from just after Last-Event-ID (or from now, without one); then each message on the channel wakes the
// response to read the stream again. Events are only ever taken from the stream, in its order, so a
// message missed on the channel (a reconnect, say) costs latency, never an event: every keep-alive reads the
// stream too. One subscriber connection per process serves every response (ChannelHub), and the reads
// share the router's command connection, so an open response holds no Redis connection of its own. The SSE
// loop itself is the API's shared one (api/sse/event-stream-response.ts).
import { Router } from 'express';
import type { Response } from 'express';
import type { Redis } from 'ioredis';
import { connectRedis } from '../redis/redis-target.js';
import { ApiError } from '../errors.js';
import { sseReadCountMax } from '../limits.js';
import { eventStreamResponse, lastEventIdOf } from '../sse/event-stream-response.js';
import { channelSubscribeWaitMs, userEventStreamsMax } from './limits.js';
import { userEventKeys } from './user-events.js';

/** ChannelHub shares one subscriber connection among every listener of this process, per channel. */
export class ChannelHub {
  private readonly subscriber: Redis;
  private readonly listeners = new Map<string, Set<() => void>>();
  private readonly subscribing = new Map<string, Promise<unknown>>();

  constructor(redisUrl: string) {
    this.subscriber = connectRedis(redisUrl, { maxRetriesPerRequest: null });
    this.subscriber.on('error', () => undefined);
    this.subscriber.on('message', (channel: string) => {
      for (const listener of this.listeners.get(channel) ?? []) listener();
    });
  }

  /** listen calls wake on every message of channel until the returned function is called. */
  async listen(channel: string, wake: () => void): Promise<() => void> {
    let set = this.listeners.get(channel);
    if (!set) {
      set = new Set();
      this.listeners.set(channel, set);
      this.subscribing.set(channel, this.subscriber.subscribe(channel));
    }
    set.add(wake);
    // A subscription that Redis does not confirm in time is not waited for: readers also poll the stream on
    // every keep-alive, so they stay correct, only slower, until it is.
    await Promise.race([
      this.subscribing.get(channel)!.catch(() => undefined),
      new Promise((resolve) => setTimeout(resolve, channelSubscribeWaitMs).unref()),
    ]);
    return () => {
      set.delete(wake);
      if (set.size > 0 || this.listeners.get(channel) !== set) return;
      this.listeners.delete(channel);
      this.subscribing.delete(channel);
      this.subscriber.unsubscribe(channel).catch(() => undefined);
    };
  }

  close(): void {
    this.subscriber.disconnect();
  }
}

export interface EventStreamOptions {
  redis: Redis | undefined;
  hub: ChannelHub | undefined;
  keepAliveMs: number;
}

export function eventStreamRoutes(options: EventStreamOptions): {
  router: Router;
  /** openStreams is the event streams this router holds open now (svc_http_sse_streams_open). */
  openStreams(): number;
  close(): void;
} {
  const router = Router();
  const open = new Set<Response>();

  router.get('/events', async (req, res) => {
    const { redis, hub } = options;
    if (!redis || !hub) throw new ApiError('QUEUE_UNAVAILABLE', 'no Redis is configured: set REDIS_URL');
    const lastEventId = lastEventIdOf(req);
    if (open.size >= userEventStreamsMax) throw new ApiError('QUEUE_UNAVAILABLE', 'too many open event streams');
    const stream = userEventKeys.stream(req.auth!.userId);
    let startAfter: string;
    try {
      // Without Last-Event-ID the stream starts now: after the newest event already stored.
      startAfter = lastEventId === null ? await newestId(redis, stream) : lastEventId === '0' ? '0-0' : lastEventId;
    } catch {
      throw new ApiError('QUEUE_UNAVAILABLE', 'the event store is unavailable');
    }
    await eventStreamResponse(req, res, {
      startAfter,
      keepAliveMs: options.keepAliveMs,
      open,
      listen: (wake) => hub.listen(userEventKeys.channel(req.auth!.userId), wake),
      read: (afterId) => redis.xrange(stream, `(${afterId}`, '+', 'COUNT', sseReadCountMax),
    });
  });

  return {
    router,
    openStreams: () => open.size,
    close() {
      for (const res of open) res.end();
    },
  };
}

async function newestId(redis: Redis, stream: string): Promise<string> {
  const newest = await redis.xrevrange(stream, '+', '-', 'COUNT', 1);
  return newest[0]?.[0] ?? '0-0';
}
