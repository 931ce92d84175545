// Engine: the pure replication state machine — Raft (pre-vote, check-quorum lease, leadership
// transfer, learners, one-at-a-time membership changes, snapshots) spoken in svc.replication.v1
// messages. `step` takes one input and returns the effects to carry out, in order; nothing here
// reads a clock, a random source, the disk or the network. docs/protocol.md explains each rule.
// This class is the engine's face to drivers (as etcd's RawNode is raft's): the state and the order
// things happen in are EngineCore's (core.ts); what differs by role is in role-*.ts (roles.ts).
import { EngineCore } from './core.js';
import { ROLE_HANDLERS } from './role-table.js';
import type {
  Effect,
  EngineConfig,
  EngineLeadership,
  EngineStatus,
  Entry,
  Input,
  RestoredState,
  SnapshotMeta,
} from './types.js';

export { JOIN_REFUSAL_REMOVED } from './membership.js';

export class Engine {
  private readonly core: EngineCore;

  constructor(
    readonly config: EngineConfig,
    restored: RestoredState,
  ) {
    this.core = new EngineCore(config, restored, ROLE_HANDLERS);
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
