// The mutation bench's list (bench/mutations.ts runs it): each entry breaks one protocol rule by
// replacing exact source text. test/bench/mutations-apply.test.ts asserts every `find` occurs exactly
// once in its file, so a refactor or the formatter cannot silently disarm a mutation.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Mutation plants one rule break: `find` must occur exactly once in `file` (test/bench/mutations-apply.test.ts
 * keeps every mutation armed), and `replace` is what it becomes; `target` names the checker meant to catch it.
 */
export interface Mutation {
  name: string;
  rule: string;
  file: string;
  find: string;
  replace: string;
  target?: string;
}

const E = 'engine/core.ts';
const PROGRESS = 'engine/progress.ts';
const QUORUM = 'engine/quorum.ts';
const READINESS = 'engine/readiness.ts';
const MEMBERSHIP = 'engine/membership.ts';
const POSITIONS = 'engine/positions.ts';
const TERM_RULE = 'engine/term-rule.ts';
const LEADER = 'engine/role-leader.ts';
const LEADER_REQUESTS = 'engine/role-leader-requests.ts';

export const MUTATIONS: readonly Mutation[] = [
  {
    name: 'figure8-commit-old-term',
    rule: 'commit only entries of the current term (Figure 8)',
    file: E,
    find: 'if (quorumSeq <= this.positions.commitSeq || this.log.termAt(quorumSeq) !== this.hs.term) return;',
    replace: 'if (quorumSeq <= this.positions.commitSeq) return;',
  },
  {
    name: 'accept-term-zero',
    rule: 'leader traffic of term 0 refused, at a fresh node of term 0 too (test/engine/trust.test.ts)',
    file: TERM_RULE,
    find: 'return term === 0 && assertsLeader(request);',
    replace: 'return false;',
  },
  {
    name: 'accept-stale-term',
    rule: 'a lower term is refused (deposed leader fenced)',
    file: TERM_RULE,
    find: '  if (term < ourTerm) return true;\n',
    replace: '',
  },
  {
    name: 'prevote-as-vote',
    rule: 'a pre-vote changes no state and never inflates terms',
    file: E,
    find: 'if (req.prevote) return respond(eligible && req.term > this.hs.term);',
    replace: '',
  },
  {
    name: 'vote-ignores-log',
    rule: 'votes compare (last_log_term, last_log_seq)',
    file: E,
    find: 'logUpToDate(req.lastLogTerm, req.lastLogSeq, this.log.lastTerm(), this.log.lastSeq())',
    replace: 'true',
  },
  {
    name: 'no-lease',
    rule: 'non-transfer votes refused while a leader is fresh',
    file: E,
    find: 'return !req.transfer && inLease && req.candidateRegion !== this.leaderId;',
    replace: 'return false;',
  },
  {
    name: 'ready-on-zero-frontier',
    rule: 'leader_last_seq = 0 never converges the latch',
    file: READINESS,
    find: 'if (leaderLastSeq > 0) {\n      this.heartbeatLeaderLastSeq = leaderLastSeq;',
    replace: 'if (leaderLastSeq >= 0) {\n      this.heartbeatLeaderLastSeq = Math.max(1, leaderLastSeq);',
  },
  {
    name: 'ready-before-caught-up',
    rule: "honest convergence: frontier must reach the leader's",
    file: READINESS,
    find: 'if (this.heartbeatLeaderLastSeq > 0 && frontier >= this.heartbeatLeaderLastSeq)',
    replace: 'if (this.heartbeatLeaderLastSeq > 0)',
  },
  {
    name: 'no-capability-gate',
    rule: 'conf-changes refused until every voter reports bit 0',
    file: MEMBERSHIP,
    find: 'if ((caps & CAPABILITY_KIND4) === 0)',
    replace: 'if (false)',
  },
  {
    name: 'two-changes-in-flight',
    rule: 'one membership change at a time',
    file: MEMBERSHIP,
    find: 'if (c.pendingConfSeq !== 0)',
    replace: 'if (false)',
  },
  {
    name: 'conf-change-before-barrier',
    rule: "no conf-change before a commit in the leader's term (Ongaro)",
    file: MEMBERSHIP,
    find: 'if (c.commitSeq < c.barrierSeq)',
    replace: 'if (false)',
  },
  {
    name: 'fold-any-reporter-term',
    rule: 'ReportApplied folded only at the activation term',
    file: TERM_RULE,
    find: "    case 'ReportApplied':\n      return request.body.reporterTerm;",
    replace: "    case 'ReportApplied':\n      return null;",
  },
  {
    name: 'ignore-removed-flag',
    rule: 'removed in a vote response stops campaigning',
    file: E,
    find: '        if (response.body.removed) this.learnRemoved();\n        else this.handlers.onVoteAnswer(',
    replace:
      '        if (response.body.removed && false) this.learnRemoved();\n        else this.handlers.onVoteAnswer(',
  },
  {
    name: 'skip-unknown-kind',
    rule: 'an unknown batch kind halts the receiver',
    file: E,
    find: "        this.halt(`unknown batch kind ${e.kind} at seq ${e.seq}`);\n        return 'halted';",
    replace: '        continue;',
  },
  {
    name: 'serve-stale-puller',
    rule: 'StreamSegments served only at equal terms',
    file: TERM_RULE,
    find: "    case 'StreamSegments':\n    case 'FetchSnapshot':\n      return request.body.term;",
    replace: "    case 'StreamSegments':\n    case 'FetchSnapshot':\n      return null;",
  },
  {
    name: 'count-learners',
    rule: "learners never count toward a quorum (the commit's)",
    file: QUORUM,
    find: 'const voters = voterIds(roster);\n  if (voters.length === 0) return 0;',
    replace:
      'const voters = roster.members.filter((m) => m.role !== 2 /* MemberRole.Removed */).map((m) => m.id);\n  if (voters.length === 0) return 0;',
  },
  {
    name: 'report-undurable',
    rule: 'applied_seqno means durable and matched',
    file: POSITIONS,
    find: 'return Math.min(this.durable, this.matched);',
    replace: 'return this.matched;',
  },
  // Issue 10: the replication plane's trust boundary (docs/protocol.md, "Identity and trust — engine rules").
  {
    name: 'non-member-heard',
    rule: "a non-member's message changes nothing",
    file: E,
    find: "if (standing !== 'member') {\n        this.refuseNonMember(callId, request, sender, standing);",
    replace: "if (standing === 'removed') {\n        this.refuseNonMember(callId, request, sender, standing);",
  },
  {
    name: 'no-roster-probe',
    rule: 'a lagging roster learns a promoted leader from a member (roster probe)',
    file: E,
    find: 'if (!this.rosterProbe.due(this.ticks, this.limits.rosterProbeIntervalTicks)) return;',
    replace: 'return;',
  },
  {
    name: 'timeout-now-any-term',
    rule: 'TimeoutNow obeyed only from the leader of the current term',
    file: E,
    find: 'req.term === this.hs.term && req.term > 0 && this.leaderId !== 0 && req.leaderRegion === this.leaderId',
    replace: 'req.term >= this.hs.term && req.term > 0',
  },
  {
    name: 'source-adopts-puller-term',
    rule: "a pull (no sender) never raises the source's term",
    file: E,
    find: "return `puller claims term ${term}, above the source's ${this.hs.term}: not serving a possibly stale tail`;",
    replace:
      "return (this.becomeFollower(term, 0), `puller claims term ${term}, above the source's ${this.hs.term}: not serving a possibly stale tail`);",
  },
  {
    name: 'zero-prev-as-empty-log',
    rule: 'zero prev_log_term/seq mean unknown, not an empty log',
    file: E,
    find: 'if (prevLogTerm === 0 || prevLogSeq === 0) return 0;',
    replace: '',
  },
  {
    name: 'heartbeat-contradiction-obeyed',
    rule: 'a heartbeat contradicting the commit seqno is refused, not obeyed',
    file: E,
    find: 'if (cut !== 0 && cut <= this.positions.commitSeq) {',
    replace: 'if (false) {',
  },
  {
    name: 'segment-contradiction-obeyed',
    rule: 'a segment replacing a committed entry is refused (never truncates at/below commit)',
    file: E,
    find: 'if (have !== e.term) return e.seq;',
    replace: '',
  },
  {
    name: 'reseed-before-leader',
    rule: 'reseeding waits for a leader of the current term',
    file: E,
    find: 'if (this.hs.reseed && !this.hs.removed) this.reseedAwaitingSource = true;',
    replace: 'if (this.hs.reseed && !this.hs.removed) this.wipeForReseed();',
  },
  {
    name: 'reseeding-node-votes',
    rule: 'a node reseeding after damage grants no vote',
    file: E,
    find: 'const reinstalled = !this.hs.reseed;',
    replace: 'const reinstalled = true;',
  },
  {
    name: 'hole-ignored',
    rule: 'a hole in the recovered WAL latches the reseed marker',
    file: E,
    find: 'if (hole) this.latchReseed(',
    replace: 'if (hole && false) this.latchReseed(',
  },
  {
    name: 'learners-gate-conf-changes',
    rule: 'the capability gate is on voters: a never-capable learner can be removed',
    file: MEMBERSHIP,
    find: 'if (m.role === MemberRole.Learner && m.id !== promotingId) continue;',
    replace: '',
  },
  {
    name: 'promote-incapable-learner',
    rule: 'a learner without capability bit 0 is never promoted',
    file: MEMBERSHIP,
    find: 'if (m.role === MemberRole.Learner && m.id !== promotingId) continue;',
    replace: 'if (m.role === MemberRole.Learner) continue;',
  },
  {
    name: 'second-leader-in-term',
    rule: 'a term has one leader: a second claimant is refused',
    file: E,
    find: 'if (term === this.hs.term && this.leaderId !== 0 && this.leaderId !== leaderRegion) {',
    replace: 'if (false) {',
  },
  {
    name: 'values-unchecked',
    rule: 'terms/seqnos without room to increment are refused (values.ts)',
    file: E,
    find: 'const problem = requestValueProblem(request);',
    replace: 'const problem = null as string | null;',
  },
  {
    name: 'other-cluster-served',
    rule: "a call carrying another cluster's id is refused at the edge (sim driver)",
    file: 'sim/rpc-router.ts',
    find: 'if (event.cluster !== this.host.clusterId) {',
    replace: 'if (false) {',
  },
  {
    name: 'read-from-bare-commit',
    rule: "a read index waits for a commit of the leader's term and a heartbeat round (Raft §6.4)",
    file: 'engine/read-index.ts',
    find: '    if (!this.host.termCommitted()) {\n      this.postponed.push({ readId, asker });\n      return;\n    }\n    this.admit(readId, asker);',
    replace: '    this.answer(readId, this.host.commitSeq());',
  },
  {
    name: 'asker-ack-any-term',
    rule: "a forwarded read's asker counts as an ack only in the leader's term (engine/read-index.ts)",
    file: 'engine/read-index.ts',
    find: 'asker.term !== this.host.term() || ',
    replace: '',
  },
  {
    name: 'asker-ack-as-round-ack',
    rule: "an asker's ack covers its own reads, not the round in flight (test/sim/reads.test.ts reusesAskerAck)",
    file: 'engine/read-index.ts',
    find: 'ackFrom: this.askerAck(asker) };',
    replace: 'ackFrom: this.askerAck(asker) };\n    if (read.ackFrom !== 0) this.onAck(read.ackFrom, this.sentRound);',
  },
  {
    name: 'join-answered-before-commit',
    rule: 'a join by name is answered only once a record naming it is committed',
    file: LEADER_REQUESTS,
    find: 'if (uncommittedSeq !== 0 && !memberByName(c.committedRoster(), req.name)) {',
    replace: 'if (false) {',
  },
  {
    name: 'commit-ack-unclamped',
    rule: 'a ship tells a follower the commit seqno only up to what it matched',
    file: PROGRESS,
    find: 'this.ackedCommitSeq = Math.max(this.ackedCommitSeq, Math.min(commitSeq, Math.max(lastSeq, reportedSeq)));',
    replace: 'this.ackedCommitSeq = Math.max(this.ackedCommitSeq, commitSeq);',
  },
  // Issue 12: a break of each rule the newer checkers watch; `target` names the checker meant to catch it.
  {
    name: 'hard-state-after-messages',
    rule: "the hard state is durable before the step's messages leave",
    file: 'engine/effects.ts',
    target: 'barrier',
    find: "    if (this.hardStateEffect) out.push(this.hardStateEffect);\n    if (this.reset) out.push({ type: 'resetStateMachine' });\n    moveAll(this.appends, out);\n    moveAll(this.messages, out);",
    replace:
      "    if (this.reset) out.push({ type: 'resetStateMachine' });\n    moveAll(this.appends, out);\n    moveAll(this.messages, out);\n    if (this.hardStateEffect) out.push(this.hardStateEffect);",
  },
  {
    name: 'vote-not-saved',
    rule: 'a vote is saved before it is granted (a new vote in a known term too)',
    file: E,
    target: 'barrier',
    find: 'a.votedFor !== b.votedFor',
    replace: 'false',
  },
  {
    name: 'report-unmatched',
    rule: 'applied_seqno is matched against the leader, not only durable',
    file: POSITIONS,
    target: 'report-honesty',
    find: 'return Math.min(this.durable, this.matched);',
    replace: 'return this.durable;',
  },
  {
    name: 'no-check-quorum',
    rule: 'a leader cut off from a quorum steps down (check-quorum)',
    file: LEADER,
    target: 'leader-step-down',
    find: 'if (!c.checkQuorum()) {',
    replace: 'if (!c.checkQuorum() && c.hs.term < 0) {',
  },
  {
    name: 'check-quorum-never-forgets',
    rule: 'check-quorum counts only the voters heard in the last election timeout',
    file: PROGRESS,
    target: 'leader-step-down',
    find: '    this.recentActive.clear();\n    return active;',
    replace: '    return active;',
  },
  {
    name: 'compaction-roster-after-compact',
    rule: 'the roster at the compaction point is read before the records go',
    file: E,
    target: 'roster-replay',
    find: '      this.baseRoster = this.rosterAt(through);\n      this.log.compactThrough(through);',
    replace: '      this.log.compactThrough(through);\n      this.baseRoster = this.rosterAt(through);',
  },
  {
    name: 'roster-cache-ignores-term',
    rule: 'a cached roster is the record at that seq only if the term matches (truncation)',
    file: MEMBERSHIP,
    target: 'roster-replay',
    find: 'if (cached && cached.term === record.term) return cached.roster;',
    replace: 'if (cached) return cached.roster;',
  },
  {
    name: 'snapshot-roster-ignored',
    rule: "an installed snapshot's roster is the log base's roster",
    file: E,
    target: 'roster-replay',
    find: '    this.baseRoster = meta.roster;\n',
    replace: '',
  },
  {
    name: 'match-from-ship',
    rule: "a leader counts a follower's reported durable frontier, not what it shipped",
    file: LEADER,
    target: 'match-honesty',
    // The second of two folds in onShipAnswer: the one after a ship's answer is taken (the first is a ship from
    // before a live stream, whose frontier alone counts).
    find: '    else pr.shipRefused(c.ticks);\n    c.foldMatch(ctx.toId, body.appliedSeqno);',
    replace:
      '    else pr.shipRefused(c.ticks);\n    c.foldMatch(ctx.toId, body.accepted ? Math.max(body.appliedSeqno, ctx.lastSeq) : body.appliedSeqno);',
  },
  {
    name: 'leader-counts-unsynced-self',
    rule: 'a leader counts its own durable frontier toward the commit, not its log end',
    file: E,
    target: 'match-honesty',
    find: 'id === this.hs.selfId ? this.positions.durableSeq :',
    replace: 'id === this.hs.selfId ? this.log.lastSeq() :',
  },
  {
    name: 'install-stale-snapshot',
    rule: "a fetched snapshot not past the state machine's applied seqno is refused (Raft's stale-snapshot rule)",
    file: 'engine/snapshot-install.ts',
    target: 'applied-monotonic',
    find: "  if (stale !== null) return { type: 'snapshotFailed', requestId, code: 'stale', reason: stale };\n",
    replace: '',
  },
  {
    name: 'learner-refuses-votes',
    rule: 'a learner answers vote requests (etcd-io/etcd#10998)',
    file: E,
    target: 'promoted-learner-votes',
    find: 'const mayVote = this.hs.selfId !== 0 && !this.hs.removed && !this.filteredMember();',
    replace: 'const mayVote = isVoter(this.currentRoster(), this.hs.selfId) && !this.filteredMember();',
  },
  {
    name: 'leave-below-fault-tolerance',
    rule: 'a leave never leaves fewer than 2f + 1 voters (autopilotFailureTolerance)',
    file: 'engine/autopilot.ts',
    find: 'if (voters - 1 >= needed) return null;',
    replace: 'return null;',
    target: 'voter-floor (sim seed 12), test/engine/autopilot.test.ts',
  },
  {
    name: 'autopilot-promotes-silent-learner',
    rule: 'autopilot promotes only a learner heard within an election timeout',
    file: 'engine/autopilot.ts',
    find: 'silentTicks <= limits.electionTimeoutTicks && view.lastSeq',
    replace: 'true && view.lastSeq',
    target: 'test/engine/autopilot.test.ts',
  },
];

/** armingProblems lists each mutation whose `find` does not occur exactly once in its file under `root`. */
export function armingProblems(root: string, mutations: readonly Mutation[] = MUTATIONS): string[] {
  const problems: string[] = [];
  for (const m of mutations) {
    let text: string;
    try {
      text = readFileSync(join(root, m.file), 'utf8');
    } catch {
      problems.push(`${m.name}: ${m.file} cannot be read`);
      continue;
    }
    const count = text.split(m.find).length - 1;
    if (count !== 1)
      problems.push(`${m.name}: its find text occurs ${count} times in ${m.file} (must be exactly once)`);
    if (m.find === m.replace) problems.push(`${m.name}: replace is the same as find`);
  }
  const names = mutations.map((m) => m.name);
  for (const name of new Set(names))
    if (names.indexOf(name) !== names.lastIndexOf(name)) problems.push(`${name}: the name is used twice`);
  return problems;
}
