// The replicated store: the DocumentStore the HTTP API runs on in a cluster, its state machine and its
// command format. The svc.store.v1 service that carries writes and read indexes to the leader is transports/store-rpc.
export * from './limits.js';
export * from './command.js';
export { StoreStateMachine, StateMachineError, decodeStoreSnapshot, STORE_SNAPSHOT_FILE, type AppliedCommand, type StoreState } from './state-machine.js';
export { ReplicatedStore, StoreUnavailableError, type StoreHost } from './replicated-store.js';
