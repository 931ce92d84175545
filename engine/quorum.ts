// Quorum: the one place the majority arithmetic lives (etcd's quorum/). Every count is over
// the roster's voters only: a learner never counts toward a commit, an election, check-quorum
// or a read index's heartbeat round.
import { voterIds } from './roster.js';
import type { Roster } from './types.js';

/** majority is how many of `voterCount` voters make a quorum. */
export function majority(voterCount: number): number {
  return Math.floor(voterCount / 2) + 1;
}

/**
 * quorumMatch is the highest seq a majority of the roster's voters has reached: the match of the
 * voter in the majority's position once matches are sorted high to low. 0 when there are no voters.
 */
export function quorumMatch(roster: Roster, matchOf: (id: number) => number): number {
  const voters = voterIds(roster);
  if (voters.length === 0) return 0;
  return quorumValue(voters, matchOf);
}

/**
 * quorumValue: the highest value a majority of `voters` has reached (sorted high to low, the value
 * in the majority's position); 0 for no voters. The caller passes voters only (read-index.ts's
 * heartbeat rounds; quorumMatch's matches).
 */
export function quorumValue(voters: readonly number[], valueOf: (id: number) => number): number {
  const count = voters.length;
  if (count === 0) return 0;
  // Insertion sort, high to low, as each value is read: rosters hold a handful of voters, and this is asked on
  // every commit and read round (a map and a sort with a comparator cost more than the rest of the call).
  const values: number[] = [];
  for (let i = 0; i < count; i++) {
    const value = valueOf(voters[i]!);
    let j = i;
    for (; j > 0 && values[j - 1]! < value; j--) values[j] = values[j - 1]!;
    values[j] = value;
  }
  return values[majority(count) - 1]!;
}

export type VoteTally = 'won' | 'lost' | 'pending';

/** tallyVotes: won once a majority of voters granted, lost once too many refused for a majority to remain. */
export function tallyVotes(roster: Roster, votes: ReadonlyMap<number, boolean>): VoteTally {
  const voters = voterIds(roster);
  const needed = majority(voters.length);
  let granted = 0;
  let rejected = 0;
  for (const id of voters) {
    const v = votes.get(id);
    if (v === true) granted++;
    else if (v === false) rejected++;
  }
  if (granted >= needed) return 'won';
  if (rejected > voters.length - needed) return 'lost';
  return 'pending';
}

/** hasQuorum: a majority of the roster's voters is active (check-quorum). */
export function hasQuorum(roster: Roster, isActive: (id: number) => boolean): boolean {
  const voters = voterIds(roster);
  let active = 0;
  for (const id of voters) if (isActive(id)) active++;
  return active >= majority(voters.length);
}
