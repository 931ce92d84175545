// GET /events: the caller's channel `user:<userId>` as Server-Sent Events. The user's Redis stream is read
// from just after Last-Event-ID (or from now, without one); then each message on the channel wakes the
// response to read the stream again. Events are only ever taken from the stream, in its order, so a
// message missed on the channel (a reconnect, say) costs latency, never an event: every keep-alive reads the
// stream too. One subscriber connection per process serves every response (ChannelHub), and the reads
// share the router's command connection, so an open response holds no Redis connection of its own.
import { Router } from 'express';
import type { Request, Response } from 'express';
import { Redis } from 'ioredis';
import { ApiError } from '../errors.js';
import { sseReadCountMax, sseStreamDurationMsMax } from '../limits.js';
import { channelSubscribeWaitMs, userEventStreamsMax } from './limits.js';
import { userEventKeys } from './user-events.js';

const streamIdPattern = /^\d{1,20}-\d{1,20}$/;

/** ChannelHub shares one subscriber connection among every listener of this process, per channel. */
export class ChannelHub {
  private readonly subscriber: Redis;
  private readonly listeners = new Map<string, Set<() => void>>();
  private readonly subscribing = new Map<string, Promise<unknown>>();

  constructor(redisUrl: string) {
    this.subscriber = new Redis(redisUrl, { maxRetriesPerRequest: null });
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
    await Promise.race([this.subscribing.get(channel)!.catch(() => undefined),
      new Promise((resolve) => setTimeout(resolve, channelSubscribeWaitMs).unref())]);
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

export function eventStreamRoutes(options: EventStreamOptions): { router: Router; close(): void } {
  const router = Router();
  const open = new Set<Response>();

  router.get('/events', async (req, res) => {
    const { redis, hub } = options;
    if (!redis || !hub) throw new ApiError('QUEUE_UNAVAILABLE', 'no Redis is configured: set REDIS_URL');
    const header = req.headers['last-event-id'];
    const lastEventId = typeof header === 'string' && header.length > 0 ? header : null;
    if (lastEventId !== null && lastEventId !== '0' && !streamIdPattern.test(lastEventId)) {
      throw new ApiError('VALIDATION_FAILED', 'Last-Event-ID is not an event id of this stream',
        [{ path: '/headers/last-event-id', message: 'expected <ms>-<seq>' }]);
    }
    if (open.size >= userEventStreamsMax) throw new ApiError('QUEUE_UNAVAILABLE', 'too many open event streams');
    await streamUserEvents(req, res, redis, hub, req.auth!.userId, lastEventId);
  });

  async function streamUserEvents(req: Request, res: Response, redis: Redis, hub: ChannelHub, userId: string,
    lastEventId: string | null): Promise<void> {
    const stream = userEventKeys.stream(userId);
    let lastId: string;
    try {
      // Without Last-Event-ID the stream starts now: after the newest event already stored.
      lastId = lastEventId === null ? await newestId(redis, stream) : lastEventId === '0' ? '0-0' : lastEventId;
    } catch {
      throw new ApiError('QUEUE_UNAVAILABLE', 'the event store is unavailable');
    }
    let closed = false;
    let signalled: boolean;
    let wake: (() => void) | null = null;
    const stopListening = await hub.listen(userEventKeys.channel(userId), () => {
      signalled = true;
      wake?.();
    });
    req.on('close', () => {
      closed = true;
      wake?.();
    });
    open.add(res);
    res.writeHead(200, {
      'Content-Type': 'text/event-stream; charset=utf-8', 'Cache-Control': 'no-cache', 'X-Accel-Buffering': 'no',
      Connection: 'keep-alive',
    });
    res.write(': stream open\n\n');
    const deadline = Date.now() + sseStreamDurationMsMax;
    try {
      while (!closed && Date.now() < deadline) {
        signalled = false;
        const entries = await redis.xrange(stream, `(${lastId}`, '+', 'COUNT', sseReadCountMax);
        for (const [id, fields] of entries) {
          const event = fields[fields.indexOf('event') + 1] ?? 'message';
          const data = fields[fields.indexOf('data') + 1] ?? '{}';
          res.write(`id: ${id}\nevent: ${event}\ndata: ${data}\n\n`);
          lastId = id;
        }
        if (entries.length === sseReadCountMax || signalled || closed) continue;
        const timedOut = await new Promise<boolean>((resolve) => {
          const timer = setTimeout(() => resolve(true), options.keepAliveMs);
          wake = () => {
            clearTimeout(timer);
            resolve(false);
          };
        });
        wake = null;
        if (timedOut && !closed) res.write(': keep-alive\n\n');
      }
    } catch {
      // Redis failed under the stream: end it; the client resumes with Last-Event-ID.
    } finally {
      open.delete(res);
      stopListening();
      res.end();
    }
  }

  return {
    router,
    close() {
      for (const res of open) res.end();
    },
  };
}

async function newestId(redis: Redis, stream: string): Promise<string> {
  const newest = await redis.xrevrange(stream, '+', '-', 'COUNT', 1);
  return newest[0]?.[0] ?? '0-0';
}
