// What a node does for its developer API at the very start of its start, apart from node-api.ts, while the API's
// own modules (Express, BullMQ, the image code) are still loading in the background (node.ts): the secret key
// checked, and a node-local redis-server (a child process) started so that it comes up meanwhile too.
import { readFile } from 'node:fs/promises';
import { parseSecretKey } from '../../api/secret-key.js';
import { redisServerAvailable, startLocalRedis, type LocalRedis } from '../../api/redis/local-redis.js';
import { ConfigError, type NodeApiConfig } from './config.js';

/** API_REDIS_DIR is where a node-local redis-server keeps its files, under the node's dataDir. */
export const API_REDIS_DIR = 'api-redis';

/**
 * readApiSecretKey reads api.secretKeyFile at start, so a missing or malformed key stops the node with a
 * ConfigError instead of every credential call answering 503 later. The key itself is never in a message.
 */
export async function readApiSecretKey(api: NodeApiConfig): Promise<Buffer | undefined> {
  if (api.secretKeyFile === undefined) return undefined;
  let text: string;
  try {
    text = await readFile(api.secretKeyFile, 'utf8');
  } catch (err) {
    throw new ConfigError(
      `cannot read api.secretKeyFile ${api.secretKeyFile}: ${(err as NodeJS.ErrnoException).code ?? 'error'}`,
    );
  }
  try {
    return parseSecretKey(text);
  } catch (err) {
    throw new ConfigError(`api.secretKeyFile ${api.secretKeyFile}: ${(err as Error).message}`);
  }
}

/**
 * startLocalRedisEarly starts the node-local redis-server the API would start (no api.redisUrl, no REDIS_URL in
 * the environment, api.localRedis not false, redis-server on the PATH) and answers it, or null when the API
 * would use none. Whoever takes the promise stops the server (node-api.ts hands it to the API, which owns it).
 */
export function startLocalRedisEarly(
  api: NodeApiConfig,
  dir: string,
  env: NodeJS.ProcessEnv = process.env,
): Promise<LocalRedis> | null {
  if (api.redisUrl !== undefined || env.REDIS_URL !== undefined || api.localRedis === false) return null;
  if (!redisServerAvailable()) return null;
  const starting = startLocalRedis(dir);
  // A start that fails before the API's turn stops it from node.ts; the rejection is seen there.
  starting.catch(() => undefined);
  return starting;
}
