// Named bounds of the checker. All are counts, never times: the simulator runs the checker inside a
// seed, and a seed must give the same verdict on every machine.

/** Search steps (model steps tried, summed over keys) before the verdict is 'undecided'. */
export const STEP_BUDGET_DEFAULT = 5_000_000;

/**
 * Work allowed for minimising a violation: each candidate sub-history costs its search steps plus its
 * operation count. Past it the smallest violating set found so far is reported (not proven minimal).
 */
export const MINIMISE_STEP_BUDGET_DEFAULT = 2_000_000;

/**
 * One key's memo table of (linearized set, state) pairs, in 32-bit words (128 MiB). A key with many
 * operations has long bitsets, so memory can run out before the step budget does; past this bound the
 * verdict is 'undecided' too.
 */
export const MEMO_TABLE_WORDS_MAX_DEFAULT = 32 * 1024 * 1024;
