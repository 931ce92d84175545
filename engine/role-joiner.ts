// The joiner's handler set (roles.ts): dial JoinCluster (JoinDialer paces and re-targets it) until
// admitted, then follow with the id and roster the answer gives.
import type { EngineCore, RoleHandlers } from './core.js';
import { NOT_LEADING } from './role-not-leading.js';
import type { JoinRequest } from './rpc.js';
import { parseCarriable } from './values.js';

export const JOINER: RoleHandlers = {
  ...NOT_LEADING,
  role: 'joiner',

  tick(c: EngineCore): void {
    const to = c.joining.due(c.limits.joinRetryTicks);
    if (to === null) return;
    const body: JoinRequest = {
      name: c.config.name,
      grpcAddr: c.config.grpcAddr,
      httpAddr: c.config.httpAddr,
      capabilities: c.config.compat.capabilities,
    };
    c.joining.started(
      c.sendTo(
        to,
        0,
        { method: 'JoinCluster', body },
        { method: 'JoinCluster', term: c.hs.term, toAddr: to, probe: false },
      ),
    );
  },

  onJoinAnswer(c, body): void {
    if (!body.accepted) {
      // Admitted, then removed before we heard: decommissioned, stop dialling.
      if (c.joining.heardRefusal(body) === 'removed') c.learnRemoved();
      return;
    }
    const members = body.members;
    c.hs.selfId = body.assignedId;
    c.hs.rosterBase = {
      membershipVersion: body.membershipVersion,
      members,
      nextMemberId: members.reduce((max, m) => Math.max(max, m.id + 1), body.assignedId + 1),
    };
    // The named leader leads body.term; at a term of ours above it, the leader is not known yet.
    const leaderId = body.term >= c.hs.term ? parseCarriable(body.leaderRegion) : 0;
    c.becomeFollower(Math.max(body.term, c.hs.term), leaderId);
  },
};
