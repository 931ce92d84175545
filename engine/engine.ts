// Engine: the pure replication state machine (Raft underneath). Work in progress.
import type { EngineConfig, Effect, Entry, EngineStatus, Input, RestoredState, SnapshotMeta } from './types.js';

export class Engine {
  constructor(readonly config: EngineConfig, restored: RestoredState) {
    void restored;
  }

  /** step feeds one input and returns the effects to carry out, in order. */
  step(input: Input): Effect[] {
    void input;
    throw new Error('not implemented yet');
  }

  status(): EngineStatus {
    throw new Error('not implemented yet');
  }

  /** entries are the log entries after the snapshot point, oldest first (read-only view). */
  entries(): readonly Entry[] {
    return [];
  }

  snapshot(): SnapshotMeta | null {
    return null;
  }
}
