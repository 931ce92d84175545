// Album events on the user's channel. publish appends the event to the user's Redis stream (its entry id
// is the event id) and PUBLISHes it on `user:<userId>`, in one Lua script, so ids and publications come in
// the same order. The stream is the truth; the channel is how every API process, whichever node the worker
// ran on, learns at once that there is something new. GET /events (event-stream.ts) reads the stream.
import type { Redis } from 'ioredis';
import { userEventsMax, userEventsRetentionSeconds } from './limits.js';

export const userEventKeys = {
  channel: (userId: string) => `user:${userId}`,
  stream: (userId: string) => `svc:user:${userId}:events`,
  /** once marks an end event as published (its value is the event id), for as long as the stream is kept. */
  once: (userId: string, onceKey: string) => `svc:user:${userId}:once:${onceKey}`,
} as const;

export type AlbumEventName =
  | 'anchor.started'
  | 'anchor.retrying'
  | 'anchor.completed'
  | 'anchor.failed'
  | 'shot.started'
  | 'shot.retrying'
  | 'shot.completed'
  | 'shot.failed'
  | 'album.completed';

export type EventData = Record<string, string | number | boolean | null>;

export interface UserEventPublisher {
  /**
   * publish resolves with the event id once the event is in the user's stream and published. With onceKey,
   * an event already published under that key is not published again (the first one's id is returned): end
   * events carry one, so a job run again after its worker died may announce its end again, and it shows once.
   */
  publish(userId: string, event: AlbumEventName, data: EventData, onceKey?: string): Promise<string>;
  /**
   * keepsOnce is true when publish honours onceKey. Only then does a job that finds its request already ended
   * announce that end again (a publisher that cannot keep it once would show it twice).
   */
  readonly keepsOnce?: boolean;
}

// KEYS[1] stream, KEYS[2] once-marker (or unused); ARGV: max length, event, data (JSON), retention seconds,
// channel, '1' when the marker counts. The message is built as a string so the data's JSON passes through
// untouched (cjson would reorder keys and round numbers). One script, so the marker and the event are one step.
const publishScript = `
if ARGV[6] == '1' then
  local prior = redis.call('GET', KEYS[2])
  if prior then return prior end
end
local id = redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[1], '*', 'event', ARGV[2], 'data', ARGV[3])
redis.call('EXPIRE', KEYS[1], ARGV[4])
if ARGV[6] == '1' then redis.call('SET', KEYS[2], id, 'EX', ARGV[4]) end
redis.call('PUBLISH', ARGV[5], '{"id":"' .. id .. '","event":"' .. ARGV[2] .. '","data":' .. ARGV[3] .. '}')
return id`;

export class RedisUserEventPublisher implements UserEventPublisher {
  readonly keepsOnce = true;

  constructor(private readonly redis: Redis) {}

  async publish(userId: string, event: AlbumEventName, data: EventData, onceKey?: string): Promise<string> {
    const once = onceKey === undefined ? '' : userEventKeys.once(userId, onceKey);
    const id = await this.redis.eval(
      publishScript,
      2,
      userEventKeys.stream(userId),
      once || userEventKeys.stream(userId),
      String(userEventsMax),
      event,
      JSON.stringify(data),
      String(userEventsRetentionSeconds),
      userEventKeys.channel(userId),
      once === '' ? '0' : '1',
    );
    return String(id);
  }
}
