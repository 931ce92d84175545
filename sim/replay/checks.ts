// The simulator's safety checkers in the form a partial history allows (sim/checkers/ need the whole
// world: every node's state at every event; a recording has only each member's own steps, and only
// since its ring's oldest run). Each reads the effects the replay produced:
//
//   election-safety     no two members lead in the same term (roleChanged leader)
//   log-matching        two members' logs (restored entries, then append effects) that hold an entry of
//                       the same seq and term agree on every term below it that both hold
//   state-machine-safety no two members apply different terms at one seq (apply effects)
//   commit-monotonic    a member's saved commit seq never goes back, across its restarts too
//   apply-contiguous    a member applies each seq once, in order, within a run
import type { RunReplay } from './replay.js';

export interface CheckViolation {
  check: string;
  node: string;
  message: string;
  atMs: number;
}

export const PARTIAL_HISTORY_CHECKS = [
  'election-safety',
  'log-matching',
  'state-machine-safety',
  'commit-monotonic',
  'apply-contiguous',
] as const;

/** checkPartialHistory runs every check over the replayed runs (runs of one member in start order). */
export function checkPartialHistory(runs: readonly RunReplay[]): CheckViolation[] {
  const violations: CheckViolation[] = [];
  const leaders = new Map<number, { node: string; atMs: number }>();
  const applied = new Map<number, { term: number; node: string }>();
  const logs = new Map<string, Map<number, number>>();
  const commits = new Map<string, number>();
  const byStart = [...runs].sort((a, b) => a.startedAtMs - b.startedAtMs);
  for (const run of byStart) {
    // A restarted member's log is what it recovered from disk: the run says so.
    const log = new Map<number, number>(run.restoredLog);
    logs.set(run.node, log);
    let lastApplied = -1;
    for (const step of run.steps) {
      for (const effect of step.effects) {
        if (effect.type === 'roleChanged' && effect.role === 'leader') {
          const other = leaders.get(effect.term);
          if (other && other.node !== run.node)
            violations.push({
              check: 'election-safety',
              node: run.node,
              atMs: step.atMs,
              message: `${run.node} and ${other.node} both led term ${effect.term}`,
            });
          else leaders.set(effect.term, { node: run.node, atMs: step.atMs });
        } else if (effect.type === 'append') {
          for (const seq of [...log.keys()]) if (seq >= effect.fromSeq) log.delete(seq);
          for (const entry of effect.entries) log.set(entry.seq, entry.term);
        } else if (effect.type === 'apply') {
          for (const entry of effect.entries) {
            if (lastApplied >= 0 && entry.seq !== lastApplied + 1)
              violations.push({
                check: 'apply-contiguous',
                node: run.node,
                atMs: step.atMs,
                message: `${run.node} applied seq ${entry.seq} after ${lastApplied}`,
              });
            lastApplied = entry.seq;
            const other = applied.get(entry.seq);
            if (other && other.term !== entry.term)
              violations.push({
                check: 'state-machine-safety',
                node: run.node,
                atMs: step.atMs,
                message: `${run.node} applied seq ${entry.seq} of term ${entry.term}; ${other.node} applied term ${other.term}`,
              });
            else if (!other) applied.set(entry.seq, { term: entry.term, node: run.node });
          }
        } else if (effect.type === 'saveHardState') {
          const before = commits.get(run.node) ?? 0;
          if (effect.hardState.commitSeq < before)
            violations.push({
              check: 'commit-monotonic',
              node: run.node,
              atMs: step.atMs,
              message: `${run.node} saved commit seq ${effect.hardState.commitSeq} after ${before}`,
            });
          commits.set(run.node, Math.max(before, effect.hardState.commitSeq));
        }
      }
    }
  }
  violations.push(...logMatching(logs));
  return violations;
}

function logMatching(logs: Map<string, Map<number, number>>): CheckViolation[] {
  const violations: CheckViolation[] = [];
  const names = [...logs.keys()];
  for (let i = 0; i < names.length; i++) {
    for (let j = i + 1; j < names.length; j++) {
      const a = logs.get(names[i]!)!;
      const b = logs.get(names[j]!)!;
      // The highest seq both hold with the same term: below it, every seq both hold must agree.
      let anchor = 0;
      for (const [seq, term] of a) if (b.get(seq) === term && seq > anchor) anchor = seq;
      for (const [seq, term] of a) {
        const other = b.get(seq);
        if (seq < anchor && other !== undefined && other !== term) {
          violations.push({
            check: 'log-matching',
            node: names[i]!,
            atMs: 0,
            message: `${names[i]} and ${names[j]} agree at seq ${anchor} but hold terms ${term} and ${other} at seq ${seq}`,
          });
          break;
        }
      }
    }
  }
  return violations;
}
