// A process that takes a data directory's lock (argv[2]) and keeps it until it is killed: the other
// process that data-dir-lock.test.ts needs. It prints "locked" once it holds the lock.
import { acquireDataDirLock } from '../../../transports/storage/data-dir-lock.js';

const dir = process.argv[2];
if (dir === undefined) throw new Error('usage: lock-holder.ts DATA_DIR');
await acquireDataDirLock(dir);
process.stdout.write('locked\n');
setInterval(() => undefined, 60_000);
