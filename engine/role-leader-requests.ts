// The leader's answers to what only a leader does (roles.ts): admit a joiner, append client
// commands, carry out an operator's membership and leadership commands, fold a follower's report,
// count its own sync toward the commit. Other roles refuse these (role-not-leading.ts).
import { leaveRefusal } from './autopilot.js';
import { assertNever } from './assert.js';
import type { EngineCore } from './core.js';
import { canonicalFilter, filterOf, filterProblem, isRefilling, withFilter } from './communities.js';
import { JOIN_REFUSAL_REMOVED } from './membership.js';
import type { AppliedReport, JoinRequest } from './rpc.js';
import { memberById, memberByName, withMember } from './roster.js';
import {
  CAPABILITY_KIND4,
  EntryKind,
  MemberRole,
  type AdminOp,
  type AdminResultCode,
  type Entry,
  type Proposal,
} from './types.js';

/** leaderAdmits answers a well-formed JoinCluster: a known name by its id (once its record commits), a new one as a learner. */
export function leaderAdmits(c: EngineCore, callId: number, req: JoinRequest): void {
  const roster = c.currentRoster();
  const existing = memberByName(roster, req.name);
  if (existing && existing.role === MemberRole.Removed) {
    c.replyJoinRefusal(callId, `${JOIN_REFUSAL_REMOVED}member ${req.name} was removed; join under a new name`);
    return;
  }
  if (existing) {
    if (c.pendingChanges.joinAlsoAnswers(req.name, callId)) return;
    const uncommittedSeq = c.pendingConfSeq();
    if (uncommittedSeq !== 0 && !memberByName(c.committedRoster(), req.name)) {
      // The record naming it came from an earlier leader and is not committed yet: it may still be
      // truncated (and the id handed to another joiner). Answer once it commits in our term.
      c.pendingChanges.addJoin(uncommittedSeq, existing.id, req.name, callId);
      return;
    }
    c.replyJoinAccepted(callId, existing.id, roster);
    return;
  }
  if ((req.capabilities & CAPABILITY_KIND4) === 0) {
    c.replyJoinRefusal(callId, 'joiner lacks capability bit 0 (kind-4 membership records)');
    return;
  }
  const refusal = c.confChangeRefusal(0);
  if (refusal) {
    c.replyJoinRefusal(callId, refusal.detail);
    return;
  }
  const id = roster.nextMemberId;
  const next = withMember(roster, {
    id,
    name: req.name,
    grpcAddr: req.grpcAddr,
    httpAddr: req.httpAddr,
    role: MemberRole.Learner,
  });
  const seq = c.appendConfChange(next);
  c.pendingChanges.addJoin(seq, id, req.name, callId);
}

/** leaderProposes appends client commands (one append, one segment per follower) unless a transfer or a full queue refuses them. */
export function leaderProposes(c: EngineCore, proposals: readonly Proposal[]): void {
  const refusal = c.transfer.inProgress
    ? { code: 'transfer-in-progress' as const, reason: 'leadership transfer in progress' }
    : null;
  const entries: Entry[] = [];
  for (const { proposalId, data } of proposals) {
    if (refusal !== null) c.refuseProposal(proposalId, refusal);
    else if (c.pendingProposals.size >= c.limits.proposalQueueCountMax)
      c.refuseProposal(proposalId, { code: 'queue-full', reason: 'proposal queue full' });
    else {
      const entry: Entry = {
        seq: c.log.lastSeq() + entries.length + 1,
        term: c.hs.term,
        kind: EntryKind.EventBatch,
        data,
      };
      entries.push(entry);
      c.pendingProposals.add(entry.seq, proposalId);
    }
  }
  if (entries.length === 0) return;
  c.appendLocal(entries);
  for (const id of c.progress.ids()) c.maybeShip(id);
  c.maybeCommit();
}

/** leaderAdministers carries out an operator's transfer, promote or remove. */
export function leaderAdministers(c: EngineCore, adminId: number, op: AdminOp): void {
  const fail = (code: AdminResultCode, reason: string) => c.adminResult(adminId, code, reason);
  const roster = c.currentRoster();
  const member = memberById(roster, op.memberId);
  if (!member || member.role === MemberRole.Removed) return fail('no-such-member', `no active member ${op.memberId}`);
  switch (op.op) {
    case 'transfer': {
      if (op.memberId === c.hs.selfId) return c.adminResult(adminId, 'already-leader', 'already the leader');
      if (member.role !== MemberRole.Voter) return fail('not-a-voter', 'only a voter can take leadership');
      if (c.transfer.inProgress) return fail('transfer-in-progress', 'a leadership transfer is already in progress');
      c.transfer.start(op.memberId, adminId);
      c.maybeSendTimeoutNow();
      return;
    }
    case 'filter': {
      if (member.role !== MemberRole.Learner)
        return fail('not-a-learner', 'only a learner can be filtered (a filtered member never votes)');
      const problem = op.filter === null ? null : filterProblem(op.filter);
      if (problem !== null) return fail('bad-filter', problem);
      const held = filterOf(roster, op.memberId);
      if (op.filter === null && held === null) return c.adminResult(adminId, 'done', 'not filtered');
      if (op.filter !== null && held !== null) {
        // A member holds one filter's data; another filter would leave it holding a mix. Clear first:
        // the member then wipes and refills, and wipes again when the new filter is set.
        if (JSON.stringify(canonicalFilter(op.filter)) === JSON.stringify(held))
          return c.adminResult(adminId, 'done', 'already filtered so');
        return fail('member-filtered', 'the member is filtered already: clear its filter first, then set the new one');
      }
      const refusal = c.confChangeRefusal(0);
      if (refusal) return fail(refusal.code, refusal.detail);
      const seq = c.appendConfChange(withFilter(roster, op.memberId, op.filter));
      c.pendingChanges.addAdmin(seq, adminId, member.name);
      return;
    }
    case 'promote':
    case 'remove':
    case 'leave': {
      if (op.op === 'promote' && member.role !== MemberRole.Learner)
        return fail('not-a-learner', 'only a learner can be promoted');
      if (op.op === 'promote' && filterOf(roster, op.memberId) !== null)
        return fail(
          'member-filtered',
          'the member holds only its communities: remove its filter, let it catch up on the full log, then promote',
        );
      if (
        op.op === 'promote' &&
        isRefilling(roster, op.memberId) &&
        c.progress.matchOf(op.memberId) < c.positions.commitSeq
      )
        return fail('not-full-log', "the member's filter was removed; it has not caught up on the full log yet; retry");
      if (op.op !== 'promote' && op.memberId === c.hs.selfId)
        return fail('removes-leader', 'the leader cannot remove itself: transfer leadership first');
      const below = op.op === 'leave' ? leaveRefusal(roster, op.memberId, c.limits) : null;
      if (below !== null) return fail('below-fault-tolerance', below);
      if (op.op === 'promote' && c.progress.matchOf(op.memberId) < c.positions.commitSeq)
        return fail('learner-behind', 'learner has not caught up with the commit seqno yet; retry');
      const refusal = op.op === 'promote' ? c.confChangeRefusal(op.memberId) : c.confChangeRefusal(0, op.memberId);
      if (refusal) return fail(refusal.code, refusal.detail);
      const role = op.op === 'promote' ? MemberRole.Voter : MemberRole.Removed;
      const seq = c.appendConfChange(withMember(roster, { ...member, role }));
      c.pendingChanges.addAdmin(seq, adminId, member.name);
      return;
    }
    default:
      assertNever(op);
  }
}

/** leaderFoldsReport folds a follower's ReportApplied addressed to us (its term is ours: the term rule ran first). */
export function leaderFoldsReport(c: EngineCore, req: AppliedReport): boolean {
  if (req.sourceShard !== c.hs.selfId) return false;
  const pr = c.progress.get(req.reporterShard);
  if (pr) {
    pr.heardCapabilities(req.capabilities);
    pr.reportedBehind(req.appliedSeqno);
  }
  c.progress.heard(req.reporterShard);
  c.foldMatch(req.reporterShard, req.appliedSeqno);
  c.maybeShip(req.reporterShard);
  return true;
}

/** leaderPersisted: our own sync counts toward the commit (a leader's matched frontier is its log end). */
export function leaderPersisted(c: EngineCore): void {
  c.positions.matchLogEnd();
  c.maybeCommit();
}
