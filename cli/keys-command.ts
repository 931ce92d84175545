// `svc keys create`: the first admin API key, written into a running cluster's replicated store
// through the store client (api/ bootstrapAdminKey) and printed once. Only its hash is stored.
import { bootstrapAdminKey } from '../api/auth/api-keys.js';
import { ADMIN_TARGET_FLAGS, adminTarget, type AdminTarget } from './admin-target.js';
import { parseFlags, stringFlag } from './flags.js';
import type { Io } from './io.js';
import { ADMIN_KEY_NAME_DEFAULT, EXIT_FAILED, EXIT_OK } from './limits.js';
import { RemoteStoreWriter } from './remote-store.js';
import { KEYS_USAGE, UsageError } from './usage.js';

const KEY_NAME = /^[A-Za-z0-9][A-Za-z0-9 ._-]{0,99}$/;

export async function runKeysCommand(args: string[], io: Io): Promise<number> {
  const { values, positionals } = parseFlags(args, { ...ADMIN_TARGET_FLAGS, name: { type: 'string' } }, 1);
  if (values.help === true) {
    io.out.write(`${KEYS_USAGE}\n`);
    return EXIT_OK;
  }
  if (positionals[0] !== 'create')
    throw new UsageError(
      positionals[0] === undefined
        ? 'keys needs an action: create'
        : `unknown keys action ${JSON.stringify(positionals[0])} (create)`,
    );
  const name = stringFlag(values, 'name') ?? ADMIN_KEY_NAME_DEFAULT;
  if (!KEY_NAME.test(name))
    throw new UsageError(`--name must be 1-100 letters, digits, spaces, '.', '_' or '-', got ${JSON.stringify(name)}`);
  const target = await adminTarget(values);
  try {
    const admin = await createAdminKey(target, name);
    if (target.json) io.out.write(`${JSON.stringify(admin)}\n`);
    else io.out.write(`admin key for ${name} (user ${admin.userId}, key ${admin.keyId}), shown once:\n${admin.key}\n`);
    return EXIT_OK;
  } catch (err) {
    io.err.write(`svc keys create: ${(err as Error).message}\n`);
    return EXIT_FAILED;
  }
}

/** createAdminKey bootstraps an admin user and key into the target cluster's store. */
export async function createAdminKey(
  target: AdminTarget,
  name: string,
): Promise<{ key: string; keyId: string; userId: string }> {
  const store = new RemoteStoreWriter(target);
  try {
    return await bootstrapAdminKey(store, name);
  } finally {
    store.close();
  }
}
