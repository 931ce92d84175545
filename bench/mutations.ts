// Mutation check (not a test): each mutation breaks one protocol rule in a private copy of the
// repository (a git worktree), then the scenarios and a short simulator sweep run against it. A
// mutation that nothing catches is a hole in our checks. The engine unit tests run too. Usage:
//   npx tsx bench/mutations.ts [seedCount=30] [name ...]
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

interface Mutation { name: string; rule: string; file: string; find: string; replace: string }

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
  { name: 'read-from-bare-commit', rule: 'a read index waits for a commit of the leader\'s term and a heartbeat round (Raft §6.4)', file: 'engine/read-index.ts',
    find: '    if (!this.host.termCommitted()) {\n      this.postponed.push(readId);\n      return;\n    }\n    this.admit(readId);', replace: '    this.answer(readId, this.host.commitSeq());' },
  { name: 'commit-ack-unclamped', rule: 'a ship tells a follower the commit seqno only up to what it matched', file: E,
    find: 'pr.ackedCommitSeq = Math.max(pr.ackedCommitSeq, Math.min(ctx.commitSeq, Math.max(ctx.lastSeq, body.appliedSeqno)));', replace: 'pr.ackedCommitSeq = Math.max(pr.ackedCommitSeq, ctx.commitSeq);' },
];

const root = new URL('..', import.meta.url).pathname;
const seedCount = Number(process.argv[2] ?? 30);
const only = process.argv.slice(3);

function runIn(dir: string, args: string[], timeoutMs: number, env: Record<string, string> = {}): { ok: boolean; out: string } {
  const r = spawnSync(args[0]!, args.slice(1), { cwd: dir, encoding: 'utf8', timeout: timeoutMs, env: { ...process.env, FORCE_COLOR: '0', ...env } });
  return { ok: r.status === 0, out: `${r.stdout}\n${r.stderr}` };
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
    const sweep = runIn(dir, ['npx', 'tsx', 'sim/cli.ts', '--seeds', `1..${seedCount}`, '--no-shrink'], 1_200_000);
    const invariants = [...new Set([...sweep.out.matchAll(/invariant=([\w-]+)/g)].map((x) => x[1]))];
    // The fixed regression seeds (test/sim/regression-seeds.test.ts) without its random sweep.
    const regressions = runIn(dir, ['npx', 'mocha', '--no-config', '--node-option', 'import=tsx', '--timeout', '600000', 'test/sim/regression-seeds.test.ts'], 1_200_000, { SVC_SIM_SWEEP_SEEDS: '0' });
    const failedSeeds = [...new Set([...regressions.out.matchAll(/^\s+\d+\) .*?seed (\d+)/gm)].map((x) => x[1]))];
    const caught = failedScenarios.length > 0 || invariants.length > 0 || !units.ok || !regressions.ok;
    rows.push(`${m.name.padEnd(28)} ${caught ? 'CAUGHT ' : 'MISSED '} scenarios: ${[...new Set(failedScenarios)].join(', ') || '-'}; engine tests: ${failedUnits.join(', ') || (units.ok ? '-' : 'failed')}; sim invariants: ${invariants.join(', ') || '-'}; regression seeds: ${failedSeeds.join(', ') || (regressions.ok ? '-' : 'failed')}  (${m.rule})`);
  } finally {
    execFileSync('git', ['worktree', 'remove', '--force', dir], { cwd: root, stdio: 'ignore' });
    rmSync(dir, { recursive: true, force: true });
  }
  console.log(rows[rows.length - 1]);
}
console.log(`\n${rows.filter((r) => r.includes('CAUGHT')).length}/${rows.length} mutations caught (scenarios + engine tests + sim seeds 1..${seedCount} + the regression seeds)`);
