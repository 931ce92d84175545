// RunCounters count what happened in a run (elections, snapshot installs, joins
// that became ready, ...), so a sweep can show that faults really exercised
// the engine and not just idled it.
import type { Checker, StepRecord } from './checkers/checker.js';
import type { SimNode } from './node.js';

export interface Counters {
  leaderElections: number;
  maxTerm: number;
  crashes: number;
  snapshotsStaged: number;
  snapshotsInstalled: number;
  snapshotFetchesFailed: number;
  joinersReady: number;
  membershipChanges: number;
  callsFailed: number;
  warnings: Record<string, number>;
}

export class RunObserver implements Checker {
  readonly name = 'observer';
  readonly counters: Counters = {
    leaderElections: 0,
    maxTerm: 0,
    crashes: 0,
    snapshotsStaged: 0,
    snapshotsInstalled: 0,
    snapshotFetchesFailed: 0,
    joinersReady: 0,
    membershipChanges: 0,
    callsFailed: 0,
    warnings: {},
  };

  afterStep(step: StepRecord): void {
    const c = this.counters;
    const { input, effects, node, after } = step;
    if (after.term > c.maxTerm) c.maxTerm = after.term;
    if (input.type === 'snapshotInstalled') c.snapshotsInstalled++;
    if (input.type === 'snapshotFailed') c.snapshotFetchesFailed++;
    if (input.type === 'callFailed') c.callsFailed++;
    for (const effect of effects) {
      switch (effect.type) {
        case 'roleChanged':
          if (effect.role === 'leader') c.leaderElections++;
          break;
        case 'stageSnapshot':
          c.snapshotsStaged++;
          break;
        case 'readiness':
          if (effect.ready && node.id.isJoiner) c.joinersReady++;
          break;
        case 'adminResult':
          if (effect.ok) c.membershipChanges++;
          break;
        case 'warning':
          c.warnings[effect.code] = (c.warnings[effect.code] ?? 0) + 1;
          break;
        default:
          break;
      }
    }
  }

  onCrash(_node: SimNode): void {
    this.counters.crashes++;
  }
}
