// VoterFloorChecker (seeds with autopilot on): the voter count never drops, through a membership change, below
// what autopilotFailureTolerance needs (2f + 1). A leader's own roster shrinks within its term only by a record
// it appended itself (a truncation never happens to a leader), so the check is on that step: a leader, still
// leader in the same term, whose roster lost a voter must still hold at least 2f + 1. In these seeds every
// removal is a leave (sim/cluster.ts), which the engine refuses below the floor (engine/autopilot.ts).
import { votersNeeded } from '../../engine/autopilot.js';
import { MemberRole, type EngineLimits, type Roster } from '../../engine/types.js';
import type { Checker, StepRecord } from './checker.js';
import { InvariantViolation } from '../violation.js';

/** voters counts a roster's voters (a loop, not a filtered copy: this runs after every leader step). */
function voters(roster: Roster): number {
  let count = 0;
  for (const m of roster.members) if (m.role === MemberRole.Voter) count++;
  return count;
}

export class VoterFloorChecker implements Checker {
  readonly name = 'voter-floor';
  private readonly needed: number;

  constructor(limits: Pick<EngineLimits, 'autopilotFailureTolerance'>) {
    this.needed = votersNeeded(limits);
  }

  afterStep(step: StepRecord): void {
    const { before, after } = step;
    if (!before || before.role !== 'leader' || after.role !== 'leader' || before.term !== after.term) return;
    // The same members array holds the same voters (the engine hands out one roster object until it changes).
    if (before.roster.members === after.roster.members) return;
    const was = voters(before.roster);
    const now = voters(after.roster);
    if (now < was && now < this.needed)
      throw new InvariantViolation(
        this.name,
        `leader ${after.name} (term ${after.term}) went from ${was} to ${now} voters, below the ${this.needed} that autopilotFailureTolerance needs`,
      );
  }
}
