// The store's interfaces to what runs it, declared here and implemented below it: StoreEngine by the node's
// driver loop (transports/node/driver.ts), LeaderLink by the node over svc.store.v1 (cli/node/store-link.ts),
// StoreHost by StoreRouter for ReplicatedStore.
import type { EngineStatus, Input, MemberFilter } from '../engine/types.js';
import type { ProposeResponse } from '../proto/gen/svc/store/v1/store.js';
import type { CommandResult, EncodedCommand } from './command.js';
import type { StoreStateMachine } from './state-machine.js';
import type { VersionedValue } from './document-store.js';

/** ProposalInput: the engine inputs the store submits (one command, or a loop turn's commands together). */
export type ProposalInput = Extract<Input, { type: 'propose' | 'proposeBatch' }>;

/** ReadIndexInput: a read-index request to the engine (answered by its readIndexResult effect). */
export type ReadIndexInput = Extract<Input, { type: 'readIndex' }>;

/** StoreEngine is the engine as the store sees it, behind the node's serial input queue. */
export interface StoreEngine {
  status(): Pick<
    EngineStatus,
    'id' | 'role' | 'term' | 'leaderId' | 'roster' | 'commitSeq' | 'removed' | 'filter' | 'filteredData' | 'dataFilter'
  >;
  /** failure is what stopped the engine's loop for good (fail-stop), or null. */
  readonly failure: Error | null;
  /** overloaded: the input queue is full; a new proposal is refused rather than queued. */
  overloaded(): boolean;
  submit(input: ProposalInput | ReadIndexInput): void;
}

/** ReadIndexAnswer is what a leader answers a read-index request with. */
export interface ReadIndexAnswer {
  commitSeq: number;
  term: number;
}

/**
 * LeaderLink carries this node's requests to the leader at an address. A failed attempt rejects with a
 * StoreRefusal (its kind decides whether StoreRouter tries again); the command goes as the bytes it was
 * encoded to once, by ReplicatedStore, with its request id beside them. The leader's answer is svc.store.v1's
 * ProposeResponse as it came (store/command.ts's resultFromMessage reads its result).
 */
export interface LeaderLink {
  propose(leader: string, command: EncodedCommand, deadlineAt: number): Promise<ProposeResponse>;
  /**
   * readIndex asks the leader for a read index. term: this member's term as it asks, read after every read the
   * request serves began; the leader may count this member as one ack of its round (engine/read-index.ts).
   */
  readIndex(leader: string, deadlineAt: number, term: number): Promise<ReadIndexAnswer>;
  /**
   * get reads one key at the leader, as the leader's store reads it (linearizably): a catching-up member's reads
   * go there (StoreRouter.getAtLeader). Null when the key does not exist.
   */
  get?(leader: string, key: string, deadlineAt: number): Promise<VersionedValue | null>;
}

/** StoreHost is what ReplicatedStore needs from its node: the local state, and a way to the leader. */
export interface StoreHost {
  readonly stateMachine: StoreStateMachine;
  /** commit gets the command committed (proposing locally or forwarding to the leader, retrying with the same request id) before deadlineAt (ms since the epoch). */
  commit(command: EncodedCommand, deadlineAt: number): Promise<{ seq: number; result: CommandResult }>;
  /**
   * readIndex resolves with a commit seqno at least as high as any write acknowledged before the call. gathered:
   * the caller gathered its readers for a loop turn already (ReadIndexBatch), so a leader asks its engine at once
   * (engine-reads.ts) rather than after another turn.
   */
  readIndex(deadlineAt: number, gathered?: boolean): Promise<number>;
  /** readsLocally: read indexes come from this node's own engine now (it leads), which batches them itself. */
  readsLocally?(): boolean;
  /** waitApplied resolves once the local state machine has applied seq. */
  waitApplied(seq: number, deadlineAt: number): Promise<void>;
  /**
   * getAtLeader reads one key at the leader (linearizably, by its own read index): where a member catching up
   * sends a read it cannot serve yet. Absent: such a read is refused (StoreCatchingUpError).
   */
  getAtLeader?(key: string, deadlineAt: number): Promise<VersionedValue | null>;
  /**
   * overlay: this node's state holds only these communities (a filtered member, docs/protocol.md "Filtered
   * members"), or holds none it can vouch for (`'refilling'`: its filter changed and it is taking the log
   * again); null: the full state.
   */
  overlay?(): MemberFilter | 'refilling' | null;
}
