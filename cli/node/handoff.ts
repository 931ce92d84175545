// handOffLeadership: what a stopping leader does before it stops (SIGTERM in `svc node`): hand leadership to
// the voter that holds the most of its log (engine/autopilot.ts, handoffTarget) with the engine's transfer
// (TimeoutNow), so the others need not wait out an election timeout and the cluster changes term once. It is
// bounded by handoffTimeoutMs: a transfer the engine ends unsuccessfully (target not caught up in
// transferTimeoutTicks, refused, unreachable) is tried again while time is left; then the node stops anyway.
// A follower has nothing to hand over.
import { handoffTarget } from '../../engine/autopilot.js';
import { memberById } from '../../engine/roster.js';
import type { AdminOp, EngineStatus } from '../../engine/types.js';

export interface HandoffPorts {
  status(): EngineStatus;
  matchSeqs(): Record<number, number>;
  admin(op: AdminOp, timeoutMs: number): Promise<void>;
  /** pause waits between attempts (one tick). */
  pause(): Promise<void>;
  now(): number;
}

/** HandoffOutcome says what happened, for the log: handed (to whom, in which term), not needed, or given up. */
export type HandoffOutcome =
  | { outcome: 'handed'; to: string; attempts: number }
  | { outcome: 'not-leader'; role: string }
  | { outcome: 'no-voter' }
  | { outcome: 'gave-up'; attempts: number; lastError: string };

export async function handOffLeadership(ports: HandoffPorts, timeoutMs: number): Promise<HandoffOutcome> {
  const deadline = ports.now() + timeoutMs;
  let attempts = 0;
  let lastError = 'no attempt fitted in the time';
  for (;;) {
    const status = ports.status();
    if (status.role !== 'leader') {
      // Leadership moved during an attempt (the engine resolves the transfer when it sees the new term).
      if (attempts > 0 && status.leaderId !== status.id) {
        const to = memberById(status.roster, status.leaderId)?.name ?? `member ${status.leaderId || '?'}`;
        return { outcome: 'handed', to, attempts };
      }
      return { outcome: 'not-leader', role: status.role };
    }
    const match = ports.matchSeqs();
    const target = handoffTarget(status.roster, status.id, (id) => match[id] ?? 0);
    if (target === null) return { outcome: 'no-voter' };
    const left = deadline - ports.now();
    if (left <= 0) return { outcome: 'gave-up', attempts, lastError };
    attempts += 1;
    try {
      await ports.admin({ op: 'transfer', memberId: target }, left);
      const to = memberById(status.roster, target)?.name ?? `member ${target}`;
      return { outcome: 'handed', to, attempts };
    } catch (err) {
      lastError = err instanceof Error ? err.message : String(err);
    }
    if (ports.now() >= deadline) return { outcome: 'gave-up', attempts, lastError };
    await ports.pause();
  }
}
