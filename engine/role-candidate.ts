// The campaign's handler sets (roles.ts): a precandidate counts pre-votes, a candidate votes; each
// counts only the answers to its own campaign, in its own term (a vote for an earlier one is stale).
import type { CallContext } from './calls.js';
import type { EngineCore, RoleHandlers } from './core.js';
import { tickFollower } from './role-follower.js';
import { NOT_LEADING } from './role-not-leading.js';
import type { VoteResponse } from './rpc.js';

/** countVote records one answer and acts on the tally: won (a pre-vote campaigns, a vote leads), lost (follow). */
function countVote(c: EngineCore, ctx: Extract<CallContext, { method: 'RequestVote' }>, body: VoteResponse): void {
  if (ctx.term !== c.hs.term) return;
  c.election.recordVote(ctx.toId, body.granted);
  const tally = c.tally();
  if (tally === 'won') {
    if (ctx.prevote) c.startElection(false);
    else c.becomeLeader();
  } else if (tally === 'lost') {
    c.becomeFollower(c.hs.term, 0);
  }
}

export const PRECANDIDATE: RoleHandlers = {
  ...NOT_LEADING,
  role: 'precandidate',
  tick: tickFollower,
  onVoteAnswer: (c, ctx, body) => {
    if (ctx.prevote) countVote(c, ctx, body);
  },
};

export const CANDIDATE: RoleHandlers = {
  ...NOT_LEADING,
  role: 'candidate',
  tick: tickFollower,
  onVoteAnswer: (c, ctx, body) => {
    if (!ctx.prevote) countVote(c, ctx, body);
  },
};
