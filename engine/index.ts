export * from './types.js';
export * from './rpc.js';
export * from './limits.js';
export * from './roster.js';
export * from './segment-frame.js';
export { Engine, JOIN_REFUSAL_REMOVED } from './engine.js';
export { emptyRestoredState } from './restored.js';
