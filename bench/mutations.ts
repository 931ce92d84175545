// Mutation check (not a test): each mutation breaks one protocol rule in a private copy of the
// repository (a git worktree), then the scenarios and a short simulator sweep run against it. A
// mutation that nothing catches is a hole in our checks. The engine unit tests run too. Usage:
//   npx tsx bench/mutations.ts [seedCount=30] [name ...]
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

interface Mutation { name: string; rule: string; file: string; find: string; replace: string; target?: string }

const E = 'engine/engine.ts';
const MUTATIONS: Mutation[] = [
  { name: 'figure8-commit-old-term', rule: 'commit only entries of the current term (Figure 8)', file: E,
    find: 'if (quorumSeq <= this.commitSeq || this.log.termAt(quorumSeq) !== this.hs.term) return;', replace: 'if (quorumSeq <= this.commitSeq) return;' },
  { name: 'accept-term-zero', rule: 'term-0 traffic rejected at term >= 1', file: E,
    find: 'if (term === 0 || term < this.hs.term) return false;', replace: 'if (term < this.hs.term) return false;' },
  { name: 'accept-stale-term', rule: 'a lower term is refused (deposed leader fenced)', file: E,
    find: 'if (term === 0 || term < this.hs.term) return false;', replace: 'if (term === 0) return false;' },
  { name: 'prevote-as-vote', rule: 'a pre-vote changes no state and never inflates terms', file: E,
    find: 'if (req.prevote) return respond(eligible && req.term > this.hs.term);', replace: '' },
  { name: 'vote-ignores-log', rule: 'votes compare (last_log_term, last_log_seq)', file: E,
    find: '&& logUpToDate(req.lastLogTerm, req.lastLogSeq, this.log.lastTerm(), this.log.lastSeq())', replace: '' },
  { name: 'no-lease', rule: 'non-transfer votes refused while a leader is fresh', file: E,
    find: 'if (!req.transfer && inLease && req.candidateRegion !== this.leaderId) return respond(false);', replace: '' },
  { name: 'ready-on-zero-frontier', rule: 'leader_last_seq = 0 never converges the latch', file: E,
    find: 'if (req.leaderLastSeq > 0) {\n      this.heartbeatLeaderLastSeq = req.leaderLastSeq;', replace: 'if (req.leaderLastSeq >= 0) {\n      this.heartbeatLeaderLastSeq = Math.max(1, req.leaderLastSeq);' },
  { name: 'ready-before-caught-up', rule: 'honest convergence: frontier must reach the leader\'s', file: E,
    find: 'if (this.heartbeatLeaderLastSeq > 0 && frontier >= this.heartbeatLeaderLastSeq)', replace: 'if (this.heartbeatLeaderLastSeq > 0)' },
  { name: 'no-capability-gate', rule: 'conf-changes refused until every voter reports bit 0', file: E,
    find: "if ((caps & CAPABILITY_KIND4) === 0) return `member ${m.id} (${m.name}) has not reported capability bit 0; conf-changes refused`;", replace: 'void caps;' },
  { name: 'two-changes-in-flight', rule: 'one membership change at a time', file: E,
    find: "if (this.pendingConfSeq() !== 0) return 'a membership change is in flight; retry when it commits';", replace: '' },
  { name: 'conf-change-before-barrier', rule: 'no conf-change before a commit in the leader\'s term (Ongaro)', file: E,
    find: "if (this.commitSeq < this.barrierSeq) return 'the leader has not committed an entry of its term yet; retry';", replace: '' },
  { name: 'fold-any-reporter-term', rule: 'ReportApplied folded only at the activation term', file: E,
    find: 'const folded = this.role === \'leader\' && req.reporterTerm === this.hs.term && req.sourceShard === this.hs.selfId;', replace: 'const folded = this.role === \'leader\' && req.sourceShard === this.hs.selfId;' },
  { name: 'ignore-removed-flag', rule: 'removed in a vote response stops campaigning', file: E,
    find: 'private onVoteResponse(ctx: Extract<CallContext, { method: \'RequestVote\' }>, body: VoteResponse): void {\n    if (body.removed) {', replace: 'private onVoteResponse(ctx: Extract<CallContext, { method: \'RequestVote\' }>, body: VoteResponse): void {\n    if (body.removed && false) {' },
  { name: 'skip-unknown-kind', rule: 'an unknown batch kind halts the receiver', file: E,
    find: "        this.halt(`unknown batch kind ${e.kind} at seq ${e.seq}`);\n        return 'halted';", replace: '        continue;' },
  { name: 'serve-stale-puller', rule: 'StreamSegments served only at equal terms', file: E,
    find: 'if (term < this.hs.term) return `stale puller term ${term}: source is at term ${this.hs.term}; rejoin first`;', replace: '' },
  { name: 'count-learners', rule: 'learners never count toward a quorum', file: E,
    find: 'const voters = voterIds(this.currentRoster());\n    if (voters.length === 0) return;', replace: 'const voters = this.currentRoster().members.filter((m) => m.role !== MemberRole.Removed).map((m) => m.id);\n    if (voters.length === 0) return;' },
  { name: 'report-undurable', rule: 'applied_seqno means durable and matched', file: E,
    find: 'return Math.min(this.durableSeq, this.matchedSeq);', replace: 'return this.matchedSeq;' },
  // Issue 10: the replication plane's trust boundary (docs/protocol.md, "Identity and trust — engine rules").
  { name: 'non-member-heard', rule: 'a non-member\'s message changes nothing', file: E,
    find: "if (standing !== 'member') {\n        this.refuseNonMember(callId, request, sender, standing);", replace: "if (standing === 'removed') {\n        this.refuseNonMember(callId, request, sender, standing);" },
  { name: 'no-roster-probe', rule: 'a lagging roster learns a promoted leader from a member (roster probe)', file: E,
    find: 'if (!this.rosterProbe.due(this.ticks, this.limits.rosterProbeIntervalTicks)) return;', replace: 'return;' },
  { name: 'timeout-now-any-term', rule: 'TimeoutNow obeyed only from the leader of the current term', file: E,
    find: 'const fromOurLeader = req.term === this.hs.term && req.term > 0 && this.leaderId !== 0 && req.leaderRegion === this.leaderId;', replace: 'const fromOurLeader = req.term >= this.hs.term && req.term > 0;' },
  { name: 'source-adopts-puller-term', rule: 'a pull (no sender) never raises the source\'s term', file: E,
    find: 'if (term > this.hs.term) return `puller claims term ${term}', replace: 'if (term > this.hs.term && (this.becomeFollower(term, 0), true)) return `puller claims term ${term}' },
  { name: 'zero-prev-as-empty-log', rule: 'zero prev_log_term/seq mean unknown, not an empty log', file: E,
    find: 'if (prevLogTerm === 0 || prevLogSeq === 0) return 0;', replace: '' },
  { name: 'heartbeat-contradiction-obeyed', rule: 'a heartbeat contradicting the commit seqno is refused, not obeyed', file: E,
    find: 'if (cut !== 0 && cut <= this.commitSeq) {', replace: 'if (false) {' },
  { name: 'segment-contradiction-obeyed', rule: 'a segment replacing a committed entry is refused (never truncates at/below commit)', file: E,
    find: 'if (have !== e.term) return e.seq;', replace: '' },
  { name: 'reseed-before-leader', rule: 'reseeding waits for a leader of the current term', file: E,
    find: 'if (this.hs.reseed && !this.hs.removed) this.reseedAwaitingSource = true;', replace: 'if (this.hs.reseed && !this.hs.removed) this.wipeForReseed();' },
  { name: 'reseeding-node-votes', rule: 'a node reseeding after damage grants no vote', file: E,
    find: 'const eligible = !this.hs.reseed', replace: 'const eligible = true' },
  { name: 'hole-ignored', rule: 'a hole in the recovered WAL latches the reseed marker', file: E,
    find: 'if (hole) this.latchReseed(', replace: 'if (hole && false) this.latchReseed(' },
  { name: 'learners-gate-conf-changes', rule: 'the capability gate is on voters: a never-capable learner can be removed', file: E,
    find: 'if (m.role === MemberRole.Learner && m.id !== promotingId) continue;', replace: '' },
  { name: 'promote-incapable-learner', rule: 'a learner without capability bit 0 is never promoted', file: E,
    find: 'if (m.role === MemberRole.Learner && m.id !== promotingId) continue;', replace: 'if (m.role === MemberRole.Learner) continue;' },
  { name: 'second-leader-in-term', rule: 'a term has one leader: a second claimant is refused', file: E,
    find: 'if (term === this.hs.term && this.leaderId !== 0 && this.leaderId !== leaderRegion) {', replace: 'if (false) {' },
  { name: 'values-unchecked', rule: 'terms/seqnos without room to increment are refused (values.ts)', file: E,
    find: 'const problem = requestValueProblem(request);', replace: 'const problem = null as string | null;' },
  { name: 'other-cluster-served', rule: 'a call carrying another cluster\'s id is refused at the edge (sim driver)', file: 'sim/rpc-router.ts',
    find: 'if (event.cluster !== this.host.clusterId) {', replace: 'if (false) {' },
  { name: 'read-from-bare-commit', rule: 'a read index waits for a commit of the leader\'s term and a heartbeat round (Raft §6.4)', file: 'engine/read-index.ts',
    find: '    if (!this.host.termCommitted()) {\n      this.postponed.push(readId);\n      return;\n    }\n    this.admit(readId);', replace: '    this.answer(readId, this.host.commitSeq());' },
  { name: 'join-answered-before-commit', rule: 'a join by name is answered only once a record naming it is committed', file: E,
    find: 'if (uncommittedSeq !== 0 && !memberByName(this.committedRoster(), req.name)) {', replace: 'if (false) {' },
  { name: 'commit-ack-unclamped', rule: 'a ship tells a follower the commit seqno only up to what it matched', file: E,
    find: 'pr.ackedCommitSeq = Math.max(pr.ackedCommitSeq, Math.min(ctx.commitSeq, Math.max(ctx.lastSeq, body.appliedSeqno)));', replace: 'pr.ackedCommitSeq = Math.max(pr.ackedCommitSeq, ctx.commitSeq);' },
  // Issue 12: a break of each rule the newer checkers watch; `target` names the checker meant to catch it.
  { name: 'hard-state-after-messages', rule: 'the hard state is durable before the step\'s messages leave', file: 'engine/effects.ts', target: 'barrier',
    find: "    if (this.hardStateEffect) out.push(this.hardStateEffect);\n    if (this.reset) out.push({ type: 'resetStateMachine' });\n    out.push(...this.appends, ...this.messages, ...this.applies, ...this.others);",
    replace: "    if (this.reset) out.push({ type: 'resetStateMachine' });\n    out.push(...this.appends, ...this.messages);\n    if (this.hardStateEffect) out.push(this.hardStateEffect);\n    out.push(...this.applies, ...this.others);" },
  { name: 'vote-not-saved', rule: 'a vote is saved before it is granted (a new vote in a known term too)', file: E, target: 'barrier',
    find: 'return a.term !== b.term || a.votedFor !== b.votedFor || a.selfId !== b.selfId', replace: 'return a.term !== b.term || a.selfId !== b.selfId' },
  { name: 'report-unmatched', rule: 'applied_seqno is matched against the leader, not only durable', file: E, target: 'report-honesty',
    find: 'return Math.min(this.durableSeq, this.matchedSeq);', replace: 'return this.durableSeq;' },
  { name: 'no-check-quorum', rule: 'a leader cut off from a quorum steps down (check-quorum)', file: E, target: 'leader-step-down',
    find: 'if (!this.checkQuorum()) {', replace: 'if (!this.checkQuorum() && this.hs.term < 0) {' },
  { name: 'check-quorum-never-forgets', rule: 'check-quorum counts only the voters heard in the last election timeout', file: E, target: 'leader-step-down',
    find: '    this.recentActive.clear();\n    return active >= Math.floor(voters.length / 2) + 1;', replace: '    return active >= Math.floor(voters.length / 2) + 1;' },
  { name: 'compaction-roster-after-compact', rule: 'the roster at the compaction point is read before the records go', file: E, target: 'roster-replay',
    find: '      this.baseRoster = this.rosterAt(through);\n      this.log.compactThrough(through);', replace: '      this.log.compactThrough(through);\n      this.baseRoster = this.rosterAt(through);' },
  { name: 'roster-cache-ignores-term', rule: 'a cached roster is the record at that seq only if the term matches (truncation)', file: E, target: 'roster-replay',
    find: 'if (cached && cached.term === record.term) return cached.roster;', replace: 'if (cached) return cached.roster;' },
  { name: 'snapshot-roster-ignored', rule: 'an installed snapshot\'s roster is the log base\'s roster', file: E, target: 'roster-replay',
    find: '    this.baseRoster = meta.roster;\n', replace: '' },
  { name: 'match-from-ship', rule: 'a leader counts a follower\'s reported durable frontier, not what it shipped', file: E, target: 'match-honesty',
    find: '    this.foldMatch(ctx.toId, body.appliedSeqno);', replace: '    this.foldMatch(ctx.toId, body.accepted ? Math.max(body.appliedSeqno, ctx.lastSeq) : body.appliedSeqno);' },
  { name: 'leader-counts-unsynced-self', rule: 'a leader counts its own durable frontier toward the commit, not its log end', file: E, target: 'match-honesty',
    find: '(id === this.hs.selfId ? this.durableSeq :', replace: '(id === this.hs.selfId ? this.log.lastSeq() :' },
  { name: 'learner-refuses-votes', rule: 'a learner answers vote requests (etcd-io/etcd#10998)', file: E, target: 'promoted-learner-votes',
    find: '&& this.hs.selfId !== 0 && !this.hs.removed', replace: '&& isVoter(this.currentRoster(), this.hs.selfId)' },
];

const root = new URL('..', import.meta.url).pathname;
const seedCount = Number(process.argv[2] ?? 30);
const only = process.argv.slice(3);

function runIn(dir: string, args: string[], timeoutMs: number, env: Record<string, string> = {}): { ok: boolean; out: string } {
  const r = spawnSync(args[0]!, args.slice(1), { cwd: dir, encoding: 'utf8', timeout: timeoutMs, env: { ...process.env, FORCE_COLOR: '0', ...env } });
  return { ok: r.status === 0, out: `${r.stdout}\n${r.stderr}` };
}

interface Catch { seed: number; invariant: string; atS: number }

/** sweepTimed runs the sweep and notes, for each failing seed, when (seconds into the sweep) it was reported. */
function sweepTimed(dir: string, count: number): Promise<Catch[]> {
  return new Promise((resolve) => {
    const startedMs = performance.now();
    const child = spawn('npx', ['tsx', 'sim/cli.ts', '--seeds', `1..${count}`], { cwd: dir, env: { ...process.env, FORCE_COLOR: '0' } });
    const caught: Catch[] = [];
    let pending = '';
    child.stdout.on('data', (chunk: Buffer) => {
      pending += chunk.toString('utf8');
      const lines = pending.split('\n');
      pending = lines.pop()!;
      for (const line of lines) {
        const m = /^seed=(\d+) result=fail invariant=([\w-]+)/.exec(line);
        if (m) caught.push({ seed: Number(m[1]), invariant: m[2]!, atS: (performance.now() - startedMs) / 1_000 });
      }
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), 1_200_000);
    child.on('close', () => {
      clearTimeout(timer);
      resolve(caught);
    });
  });
}

const rows: string[] = [];
for (const m of MUTATIONS) {
  if (only.length > 0 && !only.includes(m.name)) continue;
  const dir = mkdtempSync(join(tmpdir(), 'svc-mut-'));
  try {
    execFileSync('git', ['worktree', 'add', '--detach', dir, 'HEAD'], { cwd: root, stdio: 'ignore' });
    symlinkSync(join(root, 'node_modules'), join(dir, 'node_modules'));
    const path = join(dir, m.file);
    const text = readFileSync(path, 'utf8');
    if (!text.includes(m.find)) {
      rows.push(`${m.name.padEnd(28)} NOT APPLIED (source changed)`);
      continue;
    }
    writeFileSync(path, text.replace(m.find, m.replace));
    const scen = runIn(dir, ['npx', 'mocha', '--config', '.mocharc.scenarios.json'], 300_000);
    const failedScenarios = [...scen.out.matchAll(/^\s+\d+\) (?:scenarios\s+)?([\w-]+):?$/gm)].map((x) => x[1]).filter((x) => x !== 'scenarios');
    const units = runIn(dir, ['npx', 'mocha', '--no-config', '--node-option', 'import=tsx', '--timeout', '120000', 'test/engine/*.test.ts'], 300_000);
    const failedUnits = [...new Set([...units.out.matchAll(/^\s+\d+\) (engine[\w /-]*)$/gm)].map((x) => x[1]!.trim()))];
    const caughtBySweep = await sweepTimed(dir, seedCount);
    const invariants = [...new Set(caughtBySweep.map((c) => c.invariant))];
    const firstCatches = invariants.map((inv) => caughtBySweep.find((c) => c.invariant === inv)!)
      .map((c) => `${c.invariant} (seed ${c.seed}, ${c.atS.toFixed(0)} s)`);
    // The fixed regression seeds (test/sim/regression-seeds.test.ts) without its random sweep.
    const regressions = runIn(dir, ['npx', 'mocha', '--no-config', '--node-option', 'import=tsx', '--timeout', '600000', 'test/sim/regression-seeds.test.ts'], 1_200_000, { SVC_SIM_SWEEP_SEEDS: '0' });
    const failedSeeds = [...new Set([...regressions.out.matchAll(/^\s+\d+\) .*?seed (\d+)/gm)].map((x) => x[1]))];
    const caught = failedScenarios.length > 0 || invariants.length > 0 || !units.ok || !regressions.ok;
    // An engine test on the simulated world may fail by a checker's InvariantViolation: that checker caught it too.
    const unitInvariants = [...units.out.matchAll(/InvariantViolation: ([\w-]+):/g)].map((x) => x[1]!);
    const targetHit = m.target === undefined ? '' : ` target ${m.target}: ${[...invariants, ...unitInvariants, ...failedScenarios].includes(m.target) ? 'hit' : 'NOT HIT'};`;
    rows.push(`${m.name.padEnd(28)} ${caught ? 'CAUGHT ' : 'MISSED '}${targetHit} scenarios: ${[...new Set(failedScenarios)].join(', ') || '-'}; engine tests: ${failedUnits.join(', ') || (units.ok ? '-' : 'failed')}; sim invariants (first seed, seconds into the sweep): ${firstCatches.join(', ') || '-'}; regression seeds: ${failedSeeds.join(', ') || (regressions.ok ? '-' : 'failed')}  (${m.rule})`);
  } finally {
    execFileSync('git', ['worktree', 'remove', '--force', dir], { cwd: root, stdio: 'ignore' });
    rmSync(dir, { recursive: true, force: true });
  }
  console.log(rows[rows.length - 1]);
}
console.log(`\n${rows.filter((r) => r.includes('CAUGHT')).length}/${rows.length} mutations caught (scenarios + engine tests + sim seeds 1..${seedCount} + the regression seeds)`);
