// The replicated store: the DocumentStore the HTTP API runs on in a cluster, its state machine and its
// command format. The svc.store.v1 service that carries writes and read indexes to the leader is transports/store-rpc.
export * from './limits.js';
export * from './command.js';
export {
  StoreStateMachine,
  StateMachineError,
  decodeStoreSnapshot,
  STORE_SNAPSHOT_FILE,
  type AppliedCommand,
  type StoreState,
} from './state-machine.js';
export { ReplicatedStore } from './replicated-store.js';
export {
  StoreUnavailableError,
  StoreCatchingUpError,
  CATCH_UP_RETRY_AFTER_SECONDS,
  StoreRefusal,
  RETRYABLE_REFUSALS,
  type RefusalKind,
} from './errors.js';
export type { StoreHost, StoreEngine, LeaderLink, ProposalInput, ReadIndexAnswer } from './host.js';
export { StoreRouter } from './store-router.js';
export { Proposals } from './proposals.js';
export { Waiters } from './waiters.js';
