// Election: a node's election clock and its campaign's ballot box. The clock counts ticks since we
// last heard our leader (or granted a vote); at a randomized timeout a follower campaigns (pre-vote
// first), and a leader runs check-quorum once per timeout. The lease (check-quorum's other half)
// counts since we last heard our leader: while it holds, votes for others are refused. The ballot
// box counts the answers to our campaign (quorum.ts does the arithmetic). Engine decides roles.
import { Prng } from './prng.js';
import { tallyVotes, type VoteTally } from './quorum.js';
import type { Roster } from './types.js';

export class Election {
  private readonly prng: Prng;
  /** elapsedTicks since we last heard our leader, granted a vote, or (re)started the clock. */
  private elapsedTicks = 0;
  /** timeoutTicks: the current randomized timeout, in [baseTimeoutTicks, 2 * baseTimeoutTicks). */
  private timeoutTicks = 0;
  /** leaseElapsedTicks since we last heard our leader; it starts expired, so a fresh node may vote. */
  private leaseElapsedTicks: number;
  /** votes: each voter's answer to our campaign (we vote for ourselves). */
  private votes = new Map<number, boolean>();

  /** The seed makes the jitter reproducible (prng.ts); baseTimeoutTicks is limits.electionTimeoutTicks. */
  constructor(
    private readonly baseTimeoutTicks: number,
    randomSeed: number,
  ) {
    this.prng = new Prng(randomSeed);
    this.leaseElapsedTicks = baseTimeoutTicks;
  }

  /** randomizeTimeout draws a new timeout, so that candidates rarely collide, and restarts the clock. */
  randomizeTimeout(): void {
    const t = this.baseTimeoutTicks;
    this.timeoutTicks = this.prng.intBetween(t, 2 * t);
    this.elapsedTicks = 0;
  }

  /** restartClock: a vote granted or leadership won; the next timeout counts from now. */
  restartClock(): void {
    this.elapsedTicks = 0;
  }

  /** heardLeader: our leader spoke; no campaign is due, and the lease holds again. */
  heardLeader(): void {
    this.elapsedTicks = 0;
    this.leaseElapsedTicks = 0;
  }

  /** tickFollower: one tick of a follower or candidate. */
  tickFollower(): void {
    this.elapsedTicks++;
    this.leaseElapsedTicks++;
  }

  /** timedOut: the randomized timeout has passed without a leader; time to campaign. */
  get timedOut(): boolean {
    return this.elapsedTicks >= this.timeoutTicks;
  }

  /** tickLeader: one tick of a leader; true once per base timeout, when check-quorum is due. */
  tickLeader(): boolean {
    this.elapsedTicks++;
    if (this.elapsedTicks < this.baseTimeoutTicks) return false;
    this.elapsedTicks = 0;
    return true;
  }

  /** leaseHeld: our leader was heard within a base timeout (the caller checks that we know a leader). */
  get leaseHeld(): boolean {
    return this.leaseElapsedTicks < this.baseTimeoutTicks;
  }

  /** startCampaign opens a new ballot box holding only our own vote. */
  startCampaign(selfId: number): void {
    this.votes = new Map([[selfId, true]]);
  }

  /** recordVote notes a voter's answer; a later answer from the same voter replaces it. */
  recordVote(voterId: number, granted: boolean): void {
    this.votes.set(voterId, granted);
  }

  /** tally: won, lost or pending over the roster's voters (quorum.ts). */
  tally(roster: Roster): VoteTally {
    return tallyVotes(roster, this.votes);
  }

  /** endCampaign empties the ballot box (we follow someone now). */
  endCampaign(): void {
    this.votes.clear();
  }
}
