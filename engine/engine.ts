// Engine: the pure replication state machine — Raft (pre-vote, check-quorum lease, leadership
// transfer, learners, one-at-a-time membership changes, snapshots) spoken in svc.replication.v1
// messages. `step` takes one input and returns the effects to carry out, in order; nothing here
// reads a clock, a random source, the disk or the network. docs/protocol.md explains each rule.
// This class is the engine's face to drivers (as etcd's RawNode is raft's): the state and the order
// things happen in are EngineCore's (core.ts); what differs by role is in role-*.ts (roles.ts).
import { EngineCore } from './core.js';
import { exportCoreState, importCoreState, type EngineState } from './engine-state.js';
import { ROLE_HANDLERS } from './role-table.js';
import type {
  Effect,
  EngineConfig,
  EngineLeadership,
  EngineStatus,
  Entry,
  Input,
  RestoredState,
  SnapshotExpectation,
  SnapshotMeta,
} from './types.js';

import { emptyRestoredState } from './restored.js';

export { JOIN_REFUSAL_REMOVED } from './membership.js';

export { ENGINE_STATE_VERSION, type EngineState } from './engine-state.js';

export class Engine {
  private readonly core: EngineCore;

  constructor(
    readonly config: EngineConfig,
    restored: RestoredState,
    /** from: a state exported by exportState, in place of `restored` (Engine.fromState). */
    from?: EngineState,
  ) {
    this.core = from ? importCoreState(config, from) : new EngineCore(config, restored, ROLE_HANDLERS);
  }

  /** fromState rebuilds an engine from exportState's output: it takes the same decisions as the exported one. */
  static fromState(config: EngineConfig, state: EngineState): Engine {
    return new Engine(config, emptyRestoredState(), state);
  }

  /**
   * exportState is the engine's whole in-memory state between two steps (engine-state.ts): a copy that
   * shares no mutable object with the engine (byte strings aside, which the engine never changes).
   */
  exportState(): EngineState {
    return exportCoreState(this.core);
  }

  /**
   * step feeds one input and returns the effects to carry out, in order. A message's term is checked
   * once, before its handler runs; the positions are asserted after every step (positions.ts).
   */
  step(input: Input): Effect[] {
    return this.core.step(input);
  }

  status(): EngineStatus {
    return this.core.status();
  }

  /** snapshotExpectation: the snapshot this node may install now (a driver checks it right before the swap). */
  snapshotExpectation(): SnapshotExpectation {
    return this.core.snapshotExpectation();
  }

  /** entries are the log entries after the compaction point, oldest first. */
  entries(): readonly Entry[] {
    return this.core.entries();
  }

  /** logBase is the compaction point: (seq, term) of the last entry no longer held. */
  logBase(): { seq: number; term: number } {
    return this.core.logBase();
  }

  snapshot(): SnapshotMeta | null {
    return this.core.snapshot();
  }

  /** leadership is the few fields of status() a watcher compares after every step, cheaply (EngineLeadership). */
  leadership(): EngineLeadership {
    return this.core.leadership();
  }

  /** matchSeqs: on the leader, each follower's matched frontier as last reported (empty elsewhere). */
  matchSeqs(): Record<number, number> {
    return this.core.matchSeqs();
  }
}
