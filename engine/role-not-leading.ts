// NOT_LEADING and REMOVED: the handler set every role but the leader starts from, and the removed
// node's, which is exactly it (roles.ts says what a handler set is).
import type { RoleHandlers } from './core.js';

/**
 * NOT_LEADING is what every role but the leader does with these: acts on none of the answers, reports
 * its own sync to its leader, folds no report, and refuses joins, commands and admin ops. A removed
 * node is exactly this; the other roles start from it.
 */
export const NOT_LEADING: Omit<RoleHandlers, 'role'> = {
  tick: () => {},
  onShipAnswer: () => {},
  onHeartbeatAnswer: () => {},
  onVoteAnswer: () => {},
  onJoinAnswer: () => {},
  onPersisted: (c) => c.afterFrontierMoved(),
  foldReport: () => false,
  onJoin: (c, callId) =>
    c.replyJoinRefusal(callId, c.leaderId === 0 ? 'not the leader; no leader known yet' : 'not the leader'),
  onPropose: (c, proposals) => {
    for (const { proposalId } of proposals)
      c.refuseProposal(proposalId, { code: 'not-leader', reason: 'not the leader' });
  },
  onAdmin: (c, adminId) =>
    c.adminResult(adminId, 'not-leader', `not the leader (leader is ${c.leaderId || 'unknown'})`),
};

export const REMOVED: RoleHandlers = { ...NOT_LEADING, role: 'removed' };
