// The API's Redis is named by one URL, wherever it is configured (REDIS_URL, a node's api.redisUrl, the
// Kubernetes Secret's redis-url), so every connection the API opens (queues, workers, rate limit, event streams)
// is made here from it:
// - `redis://[[user]:password@]host:port[/db]` or `rediss://…` (TLS): one server, as ioredis reads it;
// - `redis+sentinel://[[user]:password@]host:port[,host:port…]/<primary name>[/db][?sentinelPassword=…&replicasToAck=N&ackTimeoutMs=T]`
//   (or `rediss+sentinel://` for TLS to the servers): a primary watched by Redis Sentinel. ioredis asks the
//   sentinels for the primary, follows a failover (failoverDetector: it hears +switch-master instead of waiting
//   for the old primary's connection to time out), and reconnects when a demoted primary answers READONLY.
// Redis replicates asynchronously, so a write the old primary acknowledged may be missing from the new one.
// Where the API acknowledges something to a client because Redis holds it (a queued job), it first waits
// for `replicasToAck` replicas to have it (WAIT; default 1 with Sentinel, 0 for one server); a shortfall is a
// 503 that is safe to repeat, never a 202 that a failover could take back. The URL format is ours: WHATWG URL
// cannot hold several hosts, and ioredis takes Sentinel settings only as options.
import { Redis } from 'ioredis';
import type { RedisOptions } from 'ioredis';

/** sentinelReplicasToAckDefault is how many replicas must hold a queued job before it is acknowledged. */
export const sentinelReplicasToAckDefault = 1;
/**
 * redisAckTimeoutMsDefault bounds WAIT for those replicas (then the request answers 503, safe to repeat); it
 * and redisAckTimeoutMsMax stay below the API connections' command timeout (app.ts redisCommandTimeoutMs).
 */
export const redisAckTimeoutMsDefault = 500;
export const redisAckTimeoutMsMax = 900;
/** sentinelHostsMax bounds the sentinels one URL may name. */
export const sentinelHostsMax = 16;

export interface RedisServerTarget {
  kind: 'server';
  url: string;
  replicasToAck: number;
  ackTimeoutMs: number;
}

export interface RedisSentinelTarget {
  kind: 'sentinel';
  sentinels: Array<{ host: string; port: number }>;
  /** name is the primary's name in the sentinels' configuration (`sentinel monitor <name> …`). */
  name: string;
  username?: string;
  password?: string;
  sentinelPassword?: string;
  db: number;
  tls: boolean;
  replicasToAck: number;
  ackTimeoutMs: number;
}

export type RedisTarget = RedisServerTarget | RedisSentinelTarget;

export class RedisUrlError extends Error {}

const sentinelUrlPattern =
  /^(rediss?)\+sentinel:\/\/(?:([^:@/]*)(?::([^@/]*))?@)?([^/?#@]+)\/([^/?#]+)(?:\/(\d+))?(?:\?([^#]*))?$/;
const hostPortPattern = /^(?:\[([0-9a-fA-F:.]+)\]|([a-zA-Z0-9.-]+)):(\d{1,5})$/;

/** isRedisUrl says whether text is a Redis URL this API takes (for config checks; parseRedisUrl says why not). */
export function isRedisUrl(text: string): boolean {
  try {
    parseRedisUrl(text);
    return true;
  } catch {
    return false;
  }
}

/** parseRedisUrl reads a Redis URL (see the top of this file); it throws RedisUrlError naming what is wrong. */
export function parseRedisUrl(url: string): RedisTarget {
  if (/^rediss?:\/\/\S+$/.test(url)) {
    return { kind: 'server', url, replicasToAck: 0, ackTimeoutMs: redisAckTimeoutMsDefault };
  }
  const match = sentinelUrlPattern.exec(url);
  if (!match) {
    throw new RedisUrlError(
      'a Redis URL is redis://, rediss://, or redis+sentinel://[:password@]host:port[,host:port…]/<primary name>',
    );
  }
  const [, scheme, username, password, hostList, name, db, query] = match;
  const sentinels = hostList!.split(',').map((entry) => {
    const host = hostPortPattern.exec(entry);
    const port = Number(host?.[3]);
    if (!host || port < 1 || port > 65_535)
      throw new RedisUrlError(`a sentinel is host:port, got ${JSON.stringify(entry)}`);
    return { host: host[1] ?? host[2]!, port };
  });
  if (sentinels.length > sentinelHostsMax) throw new RedisUrlError(`at most ${sentinelHostsMax} sentinels`);
  const params = new URLSearchParams(query ?? '');
  for (const key of params.keys()) {
    if (!['sentinelPassword', 'replicasToAck', 'ackTimeoutMs'].includes(key))
      throw new RedisUrlError(`unknown Redis URL parameter ${JSON.stringify(key)}`);
  }
  const count = (key: string, fallback: number, max: number): number => {
    const text = params.get(key);
    if (text === null) return fallback;
    const value = Number(text);
    if (!/^\d+$/.test(text) || value > max) throw new RedisUrlError(`${key} must be an integer 0-${max}`);
    return value;
  };
  const decoded = (text: string | undefined): string | undefined =>
    text === undefined || text === '' ? undefined : decodeURIComponent(text);
  const sentinelPassword = params.get('sentinelPassword');
  return {
    kind: 'sentinel',
    sentinels,
    name: decodeURIComponent(name!),
    ...(decoded(username) !== undefined ? { username: decoded(username)! } : {}),
    ...(decoded(password) !== undefined ? { password: decoded(password)! } : {}),
    ...(sentinelPassword ? { sentinelPassword } : {}),
    db: db === undefined ? 0 : Number(db),
    tls: scheme === 'rediss',
    replicasToAck: count('replicasToAck', sentinelReplicasToAckDefault, 16),
    ackTimeoutMs: count('ackTimeoutMs', redisAckTimeoutMsDefault, redisAckTimeoutMsMax),
  };
}

/** connectRedis opens a connection to the Redis `url` names, with `options` (the caller's retry and timeout policy). */
export function connectRedis(url: string, options: RedisOptions = {}): Redis {
  const target = parseRedisUrl(url);
  if (target.kind === 'server') return new Redis(url, options);
  const client = new Redis({
    ...options,
    sentinels: target.sentinels,
    name: target.name,
    ...(target.username !== undefined ? { username: target.username } : {}),
    ...(target.password !== undefined ? { password: target.password } : {}),
    ...(target.sentinelPassword !== undefined ? { sentinelPassword: target.sentinelPassword } : {}),
    db: target.db,
    ...(target.tls ? { tls: {}, enableTLSForSentinelMode: true } : {}),
    failoverDetector: true,
    // A primary demoted by a failover answers writes with READONLY until this connection finds the new one:
    // reconnect (through the sentinels) and resend the command.
    reconnectOnError: (error) => (error.message.startsWith('READONLY') ? 2 : false),
  });
  // quit() ends the connection without the connector's disconnect, which alone closes the failover detector's
  // sentinel subscriptions (ioredis 6): without this they reconnect to the sentinels for good.
  client.once('end', () => client.disconnect());
  return client;
}

/** redisAddresses are the host:port endpoints a URL names (one server, or every sentinel), for egress denial. */
export function redisAddresses(url: string): string[] {
  const target = parseRedisUrl(url);
  if (target.kind === 'server') return [url];
  return target.sentinels.map(({ host, port }) => (host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`));
}

/** RedisAckShortfall: fewer replicas than asked hold the writes in time (the request may be repeated). */
export class RedisAckShortfall extends Error {}

/**
 * awaitReplicated waits until `replicasToAck` replicas hold every write `client` has sent so far (Redis WAIT,
 * bounded by ackTimeoutMs); it throws RedisAckShortfall when fewer do. Nothing to wait for with replicasToAck 0.
 */
export async function awaitReplicated(client: Redis, url: string): Promise<void> {
  const { replicasToAck, ackTimeoutMs } = parseRedisUrl(url);
  if (replicasToAck === 0) return;
  const acked = await client.wait(replicasToAck, ackTimeoutMs);
  if (acked < replicasToAck)
    throw new RedisAckShortfall(`${acked} of ${replicasToAck} Redis replicas acknowledged within ${ackTimeoutMs} ms`);
}

/** sentinelQueryTimeoutMs bounds one question to one sentinel. */
export const sentinelQueryTimeoutMs = 2_000;

/**
 * sentinelServers asks the sentinels of a `redis+sentinel://` URL for the servers they watch now: the primary
 * and its replicas, as host:port (empty for a one-server URL). The first sentinel that answers is believed;
 * it throws when none does.
 */
export async function sentinelServers(url: string): Promise<string[]> {
  const target = parseRedisUrl(url);
  if (target.kind === 'server') return [];
  let lastError: unknown = new Error('no sentinel');
  for (const sentinel of target.sentinels) {
    const client = new Redis({
      host: sentinel.host,
      port: sentinel.port,
      ...(target.sentinelPassword !== undefined ? { password: target.sentinelPassword } : {}),
      ...(target.tls ? { tls: {} } : {}),
      lazyConnect: true,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
      connectTimeout: sentinelQueryTimeoutMs,
      commandTimeout: sentinelQueryTimeoutMs,
    });
    client.on('error', () => undefined);
    try {
      await client.connect();
      const primary = (await client.call('SENTINEL', 'get-master-addr-by-name', target.name)) as
        [string, string] | null;
      const replicas = (await client.call('SENTINEL', 'replicas', target.name)) as string[][];
      const servers = primary ? [`${primary[0]}:${primary[1]}`] : [];
      for (const fields of replicas) {
        const field = (name: string): string | undefined => fields[fields.indexOf(name) + 1];
        if (field('ip') && field('port')) servers.push(`${field('ip')}:${field('port')}`);
      }
      return servers;
    } catch (error) {
      lastError = error;
    } finally {
      client.disconnect();
    }
  }
  throw lastError;
}
