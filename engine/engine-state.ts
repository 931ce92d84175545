// The engine's state as a checkpoint (checkpoint.ts walks it): which classes it may hold, which fields of
// the core are configuration rather than state, and the core rebuilt from one. Engine.exportState and
// Engine.fromState (engine.ts) are the drivers' face to it.
import { assert } from './assert.js';
import { OutstandingCalls } from './calls.js';
import { exportTree, importTree, type CheckpointClasses } from './checkpoint.js';
import { EngineCore } from './core.js';
import { Effects } from './effects.js';
import { Election } from './election.js';
import { RaftLog } from './log.js';
import { RosterProbe } from './membership-guard.js';
import { JoinDialer, PendingChanges, RosterCache } from './membership.js';
import { LogPositions } from './positions.js';
import { Prng } from './prng.js';
import { Progress, ProgressTracker } from './progress.js';
import { PendingProposals } from './proposals.js';
import { FollowerPull } from './pull.js';
import { ReadIndex } from './read-index.js';
import { Readiness } from './readiness.js';
import { emptyRestoredState } from './restored.js';
import { ROLE_HANDLERS } from './role-table.js';
import { SnapshotStaging } from './snapshot-staging.js';
import { LeadershipTransfer } from './transfer.js';
import type { EngineConfig } from './types.js';
import { VersionSpread } from './versions.js';

/** ENGINE_STATE_VERSION numbers the checkpoint's shape: an import refuses another. */
export const ENGINE_STATE_VERSION = 1;

/** EngineState is an engine's whole in-memory state (JSON values and byte strings; checkpoint.ts). */
export interface EngineState {
  v: number;
  tree: unknown;
}

/** CHECKPOINT_CLASSES: every class an engine's state holds (an export meeting another one throws). */
const CHECKPOINT_CLASSES: CheckpointClasses = {
  EngineCore: EngineCore.prototype,
  OutstandingCalls: OutstandingCalls.prototype,
  Effects: Effects.prototype,
  Election: Election.prototype,
  RaftLog: RaftLog.prototype,
  RosterProbe: RosterProbe.prototype,
  JoinDialer: JoinDialer.prototype,
  PendingChanges: PendingChanges.prototype,
  RosterCache: RosterCache.prototype,
  LogPositions: LogPositions.prototype,
  Prng: Prng.prototype,
  Progress: Progress.prototype,
  ProgressTracker: ProgressTracker.prototype,
  PendingProposals: PendingProposals.prototype,
  FollowerPull: FollowerPull.prototype,
  ReadIndex: ReadIndex.prototype,
  Readiness: Readiness.prototype,
  SnapshotStaging: SnapshotStaging.prototype,
  LeadershipTransfer: LeadershipTransfer.prototype,
  VersionSpread: VersionSpread.prototype,
};

/** NOT_STATE: the core's fields that are configuration or derived from the role (set again at import). */
const NOT_STATE = ['config', 'handlers', 'roleHandlers'];

export function exportCoreState(core: EngineCore): EngineState {
  return { v: ENGINE_STATE_VERSION, tree: exportTree(core, CHECKPOINT_CLASSES, NOT_STATE) };
}

/** importCoreState builds a core with `config` and fills it with `state` (which an export of it gave). */
export function importCoreState(config: EngineConfig, state: EngineState): EngineCore {
  assert(
    state.v === ENGINE_STATE_VERSION,
    `engine state version ${String(state.v)} is not ${ENGINE_STATE_VERSION} (import it with the build that wrote it)`,
  );
  const core = new EngineCore(config, emptyRestoredState(), ROLE_HANDLERS);
  importTree(core, state.tree, CHECKPOINT_CLASSES);
  core.afterStateImport();
  return core;
}
