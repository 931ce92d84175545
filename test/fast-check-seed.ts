// One fast-check seed per test run, printed first: every property in the suite (fc.assert without its own
// seed) draws from it, so a failure seen once in 30,000 runs, or a run cut short by a timeout before
// fast-check could report, repeats with `SVC_FC_SEED=<seed> npx mocha <file>`. A property that fails
// also prints fast-check's own { seed, path } for the shrunk counterexample.
// Loaded by .mocharc.json ("require"): a mocha root-hook plugin.
import { randomInt } from 'node:crypto';
import fc from 'fast-check';

const fromEnv = process.env.SVC_FC_SEED;
if (fromEnv !== undefined && !/^-?\d{1,10}$/.test(fromEnv))
  throw new Error(`SVC_FC_SEED must be a 32-bit integer, got "${fromEnv}"`);
export const FAST_CHECK_SEED = fromEnv !== undefined ? Number(fromEnv) | 0 : randomInt(0, 2 ** 31 - 1);

fc.configureGlobal({ ...fc.readConfigureGlobal(), seed: FAST_CHECK_SEED });

export const mochaHooks = {
  beforeAll(): void {
    process.stdout.write(`fast-check seed=${FAST_CHECK_SEED} (repeat with SVC_FC_SEED=${FAST_CHECK_SEED})\n`);
  },
};
