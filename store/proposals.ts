// Proposals tracks the store commands this node proposed to its own engine as the leader. The
// engine applies a committed entry before it reports proposalResult, so the outcome computed at apply
// is read back by the proposal's request id (StoreStateMachine.recall) when the result arrives. A
// proposal that fails tells the caller whether retrying (with the same request id, which the state
// machine de-duplicates) makes sense.
import type { Effect, Proposal } from '../engine/types.js';
import type { CommandResult } from './command.js';
import { StoreRefusal } from './errors.js';
import type { StoreEngine } from './host.js';
import type { StoreStateMachine } from './state-machine.js';
import { LazyMinHeap } from './lazy-heap.js';

interface Pending {
  proposalId: number;
  requestId: string;
  resolve: (value: { seq: number; result: CommandResult }) => void;
  reject: (err: Error) => void;
  deadlineAt: number;
  /** settled: answered, refused or timed out (it may still sit in the deadline heap until popped). */
  settled: boolean;
}

/**
 * The pending proposals by deadline, the earliest on top (LazyMinHeap). One timer for the earliest deadline
 * replaces a timer per proposal: at 64 writers a leader answers a whole round in one step, and a timer set and
 * cleared per write was measurable CPU on the write path (bench/write-cpu.ts).
 */
const deadlineOf = (p: Pending): number => p.deadlineAt;

export class Proposals {
  private readonly pending = new Map<number, Pending>();
  private readonly deadlines = new LazyMinHeap<Pending>(deadlineOf);
  /** deadlineTimer fires at deadlineTimerAt, the earliest deadline of a pending proposal when it was set. */
  private deadlineTimer: NodeJS.Timeout | null = null;
  private deadlineTimerAt = Infinity;
  private nextProposalId = 1;
  /** batch gathers the proposals of this event-loop turn; flushed as one engine input (proposeBatch). */
  private batch: Proposal[] = [];

  constructor(
    private readonly engine: StoreEngine,
    private readonly stateMachine: StoreStateMachine,
    private readonly onOutcome: (outcome: string) => void,
    private readonly batchCountMax: number,
    private readonly onBatch: (size: number) => void = () => undefined,
  ) {}

  get count(): number {
    return this.pending.size;
  }

  /** propose hands the command to the engine; it resolves once committed and applied here. */
  propose(data: Uint8Array, requestId: string, deadlineAt: number): Promise<{ seq: number; result: CommandResult }> {
    if (this.engine.overloaded())
      return Promise.reject(new StoreRefusal('unavailable', 'node overloaded: input queue full'));
    const proposalId = this.nextProposalId++;
    return new Promise((resolve, reject) => {
      const p: Pending = { proposalId, requestId, resolve, reject, deadlineAt, settled: false };
      this.pending.set(proposalId, p);
      this.deadlines.push(p);
      if (deadlineAt < this.deadlineTimerAt) this.armDeadlineTimer(deadlineAt);
      this.batch.push({ proposalId, data });
      // setImmediate runs after this turn's I/O callbacks: every proposal that arrived with this one joins it.
      if (this.batch.length === 1) setImmediate(() => this.flush());
      else if (this.batch.length >= this.batchCountMax) this.flush();
    });
  }

  private armDeadlineTimer(at: number): void {
    if (this.deadlineTimer !== null) clearTimeout(this.deadlineTimer);
    this.deadlineTimerAt = at;
    this.deadlineTimer = setTimeout(this.onDeadlineTimer, Math.max(0, at - Date.now()));
  }

  private disarmDeadlineTimer(): void {
    if (this.deadlineTimer !== null) clearTimeout(this.deadlineTimer);
    this.deadlineTimer = null;
    this.deadlineTimerAt = Infinity;
  }

  /** onDeadlineTimer refuses every pending proposal whose deadline has passed, then waits for the next deadline. */
  private readonly onDeadlineTimer = (): void => {
    this.deadlineTimer = null;
    this.deadlineTimerAt = Infinity;
    const now = Date.now();
    // Bounded by the heap: each pass pops one entry.
    for (let top = this.deadlines.peek(); top !== undefined; top = this.deadlines.peek()) {
      if (top.settled) {
        this.deadlines.pop();
        this.deadlines.dead--;
        continue;
      }
      if (top.deadlineAt > now) {
        this.armDeadlineTimer(top.deadlineAt);
        return;
      }
      this.deadlines.pop();
      top.settled = true;
      this.pending.delete(top.proposalId);
      this.onOutcome('timeout');
      top.reject(new StoreRefusal('timeout', 'proposal not committed before its deadline; outcome unknown'));
    }
  };

  /** settle takes p out of the pending set (its heap entry goes lazily); no pending proposal, no timer. */
  private settle(p: Pending): void {
    this.pending.delete(p.proposalId);
    p.settled = true;
    if (this.pending.size === 0) {
      this.deadlines.clear();
      this.disarmDeadlineTimer();
      return;
    }
    this.deadlines.dead++;
    this.deadlines.compactIfMostlyDead();
  }

  private flush(): void {
    if (this.batch.length === 0) return;
    const proposals = this.batch;
    this.batch = [];
    this.onBatch(proposals.length);
    if (proposals.length === 1) this.engine.submit({ type: 'propose', ...proposals[0]! });
    else this.engine.submit({ type: 'proposeBatch', proposals });
  }

  onResult(effect: Extract<Effect, { type: 'proposalResult' }>): void {
    const p = this.pending.get(effect.proposalId);
    if (!p) return;
    this.settle(p);
    if (!effect.ok) {
      this.onOutcome('refused');
      p.reject(refusal(effect));
      return;
    }
    // The entry was applied before this result (the engine's effect order). The state machine remembers the
    // last DEDUP_ENTRY_COUNT_MAX outcomes by request id, and a leader's uncommitted proposals, the last
    // commands of its log, are at most proposalQueueCountMax, which the node holds to that bound.
    const result = this.stateMachine.recall(p.requestId)?.result;
    if (!result) {
      this.onOutcome('lost');
      p.reject(new StoreRefusal('internal', `entry ${effect.seq} committed but its outcome was not seen at apply`));
      return;
    }
    this.onOutcome(result.outcome);
    p.resolve({ seq: effect.seq, result });
  }

  rejectAll(err: Error): void {
    const pending = [...this.pending.values()];
    this.pending.clear();
    this.deadlines.clear();
    this.disarmDeadlineTimer();
    for (const p of pending) {
      p.settled = true;
      p.reject(err);
    }
  }
}

/** refusal turns the engine's result code into a refusal the caller can act on. */
function refusal(effect: Extract<Effect, { type: 'proposalResult' }>): StoreRefusal {
  if (effect.code === 'leadership-lost') return new StoreRefusal('leadership-changed', effect.reason);
  if (effect.code === 'not-leader') return new StoreRefusal('not-leader', effect.reason, effect.leaderHint);
  return new StoreRefusal('unavailable', effect.reason, effect.leaderHint);
}
