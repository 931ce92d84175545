// The leader's handler set (roles.ts): check-quorum, heartbeats, ship retries and the transfer
// timeout on each tick; its followers' answers to ships and heartbeats.
import { filterOf } from './communities.js';
import type { EngineCore, RoleHandlers } from './core.js';
import {
  leaderAdministers,
  leaderAdmits,
  leaderFoldsReport,
  leaderPersisted,
  leaderProposes,
} from './role-leader-requests.js';
import { NOT_LEADING } from './role-not-leading.js';

export const LEADER: RoleHandlers = {
  ...NOT_LEADING,
  role: 'leader',
  onPersisted: leaderPersisted,
  foldReport: leaderFoldsReport,
  onJoin: leaderAdmits,
  onPropose: leaderProposes,
  onAdmin: leaderAdministers,

  tick(c: EngineCore): void {
    c.heartbeatElapsedTicks++;
    if (c.election.tickLeader()) {
      if (!c.checkQuorum()) {
        c.becomeFollower(c.hs.term, 0);
        return;
      }
    }
    const timedOut = c.transfer.tick(c.limits.transferTimeoutTicks);
    if (timedOut !== null) c.adminResult(timedOut, 'transfer-timed-out', 'leadership transfer timed out');
    c.autopilotTick();
    if (c.heartbeatElapsedTicks >= c.limits.heartbeatIntervalTicks) {
      c.heartbeatElapsedTicks = 0;
      c.broadcastHeartbeat();
    }
    for (const [id, pr] of c.progress.entries()) {
      // A live stream is ended after liveStreamTicksMax (the follower opens another), or when what it carried
      // went unreported for shipRetryTicks: then ShipSegment again, from the follower's reported frontier.
      if (pr.liveStalled(c.ticks, c.limits.shipRetryTicks)) {
        c.endLive(pr);
        pr.rewind();
      } else if (pr.live !== null && c.ticks - pr.live.openedTick >= c.limits.liveStreamTicksMax) c.endLive(pr);
      if (pr.shipTimedOut(c.ticks, c.limits.shipRetryTicks)) pr.abandonShips();
      if (pr.pauseTimedOut(c.ticks, c.limits.pullTimeoutTicks)) pr.rewind();
      c.maybeShip(id);
    }
  },

  onShipAnswer(c, requestId, ctx, body): void {
    if (ctx.term !== c.hs.term || body.term !== c.hs.term) return;
    const pr = c.progress.get(ctx.toId);
    if (!pr) return;
    const wasInFlight = pr.answered(requestId);
    // After a member's filter changed, an answer to a ship sent before says what it held before (matchFloor).
    if (!wasInFlight && pr.matchFloor > 0) return;
    c.progress.heard(ctx.toId);
    if (pr.live !== null && !wasInFlight) {
      // A ship from before the live stream: the stream carries what followed it; only its frontier counts.
      c.foldMatch(ctx.toId, body.appliedSeqno);
      return;
    }
    if (!body.accepted && pr.refusalSuperseded(ctx.prevSeq) && filterOf(c.currentRoster(), ctx.toId) === null) {
      // The follower has reported a matched frontier past this ship's prevSeq since it refused it (a gap it has
      // filled by pulling, answers overtaking each other): the refusal is stale, as etcd's raft ignores a
      // rejection at or below Match (Progress.MaybeDecrTo). Pausing on it would wait for a report that never
      // comes — the follower's pull is done — until pullTimeoutTicks (sim seed 209520: 3 s stalls, again and again).
      c.foldMatch(ctx.toId, body.appliedSeqno);
      pr.skipMatched();
      c.maybeShip(ctx.toId);
      return;
    }
    if (body.accepted) pr.shipAccepted(ctx.lastSeq, ctx.commitSeq, body.appliedSeqno);
    else if (filterOf(c.currentRoster(), ctx.toId)) pr.refusedByFiltered(body.appliedSeqno, c.log.baseSeq, c.ticks);
    else pr.shipRefused(c.ticks);
    c.foldMatch(ctx.toId, body.appliedSeqno);
    pr.skipMatched();
    c.maybeShip(ctx.toId);
  },

  onHeartbeatAnswer(c, ctx, body): void {
    if (ctx.term !== c.hs.term || body.term !== c.hs.term || !body.accepted) return;
    c.progress.heard(ctx.toId);
    const pr = c.progress.get(ctx.toId);
    if (pr) pr.heardCapabilities(body.capabilities);
    c.reads.onAck(ctx.toId, ctx.round);
  },
};
