// Coverage: counts of the rare situations a run reached. A checker that watches for a bug in a
// situation the faults never produce proves nothing, so a sweep prints these per situation (total
// count and how many seeds reached it) and names the ones no seed reached.

/** COVERAGE_SITUATIONS: each counted situation, with what it means (printed by a sweep). */
export const COVERAGE_SITUATIONS = {
  'late-answer': "an answer held back 0.5-3 election timeouts (within its call's deadline) was delivered",
  'late-answer-new-term': 'a late answer reached a caller that had moved to a newer term since the call',
  'crash-after-hard-state': "a crash right after a hard-state save, before that step's messages left",
  'crash-after-reply': 'a crash right after a reply left (the rest of the step lost)',
  'crash-unsynced-append': 'a crash while appends were written but not synced (inside the append/sync window)',
  'replay-after-crash': 'a request reached the restarted server that had answered it before crashing',
  'vote-replay-after-crash': 'that replayed request was a RequestVote',
  'kind4-truncated': 'an uncommitted membership record was cut from a log by truncation',
  'conf-change-in-election': 'a membership change was asked for while some node was campaigning',
  'learner-vote-granted': 'a node whose roster calls it a learner granted a vote',
  'leader-quorum-silent': 'a leader went more than one election timeout without hearing from a quorum',
  'leader-isolated-past-bound': 'a leader stayed cut off from a quorum by the network past the step-down bound',
  'check-quorum-step-down': 'a leader stepped down because no quorum answered it (check-quorum)',
  'snapshot-arrived-stale':
    "a fetched snapshot reached its puller not past the puller's applied seqno (Raft refuses it)",
  'snapshot-arrived-behind':
    "a fetched snapshot reached its puller below the puller's applied seqno (installing it would move the state back)",
  'filtered-snapshot-installed':
    "a filtered member installed a snapshot its leader cut to the member's communities (behind the leader's compaction point)",
  'filtered-snapshot-refused':
    'a filtered snapshot reached a member that no longer expected it (its filter changed between the offer and the install): refused, wrong-filter',
  'figure8-tail':
    "a follower's log, cut where it differs from the leader's, lost a tail of a higher term than the leader's entry there (the Raft paper's figure 8)",
  'vote-answer-new-term':
    'an answer to a RequestVote (pre-vote or real) reached its candidate after the candidate had moved to a newer term',
} as const;

export type CoverageSituation = keyof typeof COVERAGE_SITUATIONS;

export type CoverageCounts = Record<CoverageSituation, number>;

export function emptyCoverage(): CoverageCounts {
  const counts = {} as CoverageCounts;
  for (const key of Object.keys(COVERAGE_SITUATIONS) as CoverageSituation[]) counts[key] = 0;
  return counts;
}

/** Coverage is one run's counts. */
export class Coverage {
  readonly counts = emptyCoverage();

  add(situation: CoverageSituation, count = 1): void {
    this.counts[situation] += count;
  }
}

/** CoverageTally adds up runs: total counts and how many runs reached each situation. */
export class CoverageTally {
  readonly totals = emptyCoverage();
  readonly runsReaching = emptyCoverage();
  runCount = 0;

  add(counts: CoverageCounts): void {
    this.runCount++;
    for (const key of Object.keys(counts) as CoverageSituation[]) {
      this.totals[key] += counts[key];
      if (counts[key] > 0) this.runsReaching[key]++;
    }
  }

  /** lines: one per situation (`name  total  in N of M seeds`), then the ones never reached. */
  lines(): string[] {
    const keys = Object.keys(COVERAGE_SITUATIONS) as CoverageSituation[];
    const width = Math.max(...keys.map((k) => k.length));
    const out = keys.map(
      (k) =>
        `  ${k.padEnd(width)} ${String(this.totals[k]).padStart(8)} in ${this.runsReaching[k]} of ${this.runCount} seeds`,
    );
    const never = keys.filter((k) => this.runsReaching[k] === 0);
    out.push(never.length === 0 ? '  every situation was reached' : `  NEVER REACHED: ${never.join(', ')}`);
    return out;
  }
}
