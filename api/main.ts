// Development entry point: `tsx api/main.ts`. It runs over the IN-MEMORY TEST DOUBLE store, so everything is
// lost on exit; the production entry (the svc CLI) passes the replicated store to startApiServer instead.
// On start it prints a fresh admin key once.
import { bootstrapAdminKey } from './auth/api-keys.js';
import { redactRedisUrl } from './redis/local-redis.js';
import { startApiServer } from './server.js';
import { MemoryDocumentStore } from '../store/memory-store.js';

const store = new MemoryDocumentStore();
const admin = await bootstrapAdminKey(store, 'admin');
const running = await startApiServer({ store });
process.stdout.write(
  `svc API on ${running.url} (in-memory store, redis: ${running.redisUrl ? redactRedisUrl(running.redisUrl) : 'none'})\n` +
    `admin key (shown once): ${admin.key}\n`,
);
const stop = () => {
  running.close().then(
    () => process.exit(0),
    () => process.exit(1),
  );
};
process.once('SIGINT', stop);
process.once('SIGTERM', stop);
