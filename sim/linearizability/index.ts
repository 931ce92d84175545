// The linearizability checker for key-value histories (Wing & Gong's search, Lowe's memoisation,
// per-key partitioning). See sim/README.md, "Linearizability checker".
export type { CheckOptions, CheckResult, KvInput, KvOperation, KvOutput } from './types.js';
export { checkKvHistory } from './check.js';
export { formatOperation, formatOperations } from './format.js';
export { InvalidHistoryError, assertValidKvHistory, validateKvHistory } from './validate.js';
export { MEMO_TABLE_WORDS_MAX_DEFAULT, MINIMISE_STEP_BUDGET_DEFAULT, STEP_BUDGET_DEFAULT } from './limits.js';
