export * from './types.js';
export * from './rpc.js';
export * from './limits.js';
export * from './roster.js';
export * from './segment-frame.js';
export * from './values.js';
export { standingOf, senderOf, type SenderStanding } from './membership-guard.js';
export { Engine, JOIN_REFUSAL_REMOVED } from './engine.js';
export { emptyRestoredState } from './restored.js';
