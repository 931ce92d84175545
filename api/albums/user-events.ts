// Album events on the user's channel. publish appends the event to the user's Redis stream (its entry id
// is the event id) and PUBLISHes it on `user:<userId>`, in one Lua script, so ids and publications come in
// the same order. The stream is the truth; the channel is how every API process, whichever node the worker
// ran on, learns at once that there is something new. GET /events (event-stream.ts) reads the stream.
import type { Redis } from 'ioredis';
import { userEventsMax, userEventsRetentionSeconds } from './limits.js';

export const userEventKeys = {
  channel: (userId: string) => `user:${userId}`,
  stream: (userId: string) => `svc:user:${userId}:events`,
} as const;

export type AlbumEventName =
  | 'anchor.started' | 'anchor.retrying' | 'anchor.completed' | 'anchor.failed'
  | 'shot.started' | 'shot.retrying' | 'shot.completed' | 'shot.failed'
  | 'album.completed';

export type EventData = Record<string, string | number | boolean | null>;

export interface UserEventPublisher {
  /** publish resolves with the event id once the event is in the user's stream and published. */
  publish(userId: string, event: AlbumEventName, data: EventData): Promise<string>;
}

// KEYS[1] stream; ARGV: max length, event, data (JSON), retention seconds, channel. The message is built as a
// string so the data's JSON passes through untouched (cjson would reorder keys and round numbers).
const publishScript = `
local id = redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[1], '*', 'event', ARGV[2], 'data', ARGV[3])
redis.call('EXPIRE', KEYS[1], ARGV[4])
redis.call('PUBLISH', ARGV[5], '{"id":"' .. id .. '","event":"' .. ARGV[2] .. '","data":' .. ARGV[3] .. '}')
return id`;

export class RedisUserEventPublisher implements UserEventPublisher {
  constructor(private readonly redis: Redis) {}

  async publish(userId: string, event: AlbumEventName, data: EventData): Promise<string> {
    const id = await this.redis.eval(publishScript, 1, userEventKeys.stream(userId), String(userEventsMax), event,
      JSON.stringify(data), String(userEventsRetentionSeconds), userEventKeys.channel(userId));
    return String(id);
  }
}
