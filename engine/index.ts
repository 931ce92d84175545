export * from './types.js';
export * from './rpc.js';
export * from './limits.js';
export * from './roster.js';
export * from './segment-frame.js';
export { Engine } from './engine.js';
export { emptyRestoredState } from './restored.js';
