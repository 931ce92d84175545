// Proposals tracks the store commands this node proposed to its own engine as the leader. The
// engine applies a committed entry and reports proposalResult in the same step, so the outcome
// computed at apply is picked up when the result arrives. A proposal that fails tells the caller
// whether retrying (with the same request id, which the state machine de-duplicates) makes sense.
import * as grpc from '@grpc/grpc-js';
import type { Effect, Proposal } from '../engine/types.js';
import type { CommandResult } from './command.js';
import type { AppliedCommand, StoreStateMachine } from './state-machine.js';
import { StoreCallError } from '../transports/store-rpc/store-service.js';
import type { Driver } from '../transports/node/driver.js';

interface Pending {
  requestId: string;
  resolve: (value: { seq: number; result: CommandResult }) => void;
  reject: (err: Error) => void;
  timer: NodeJS.Timeout;
}

export class Proposals {
  private readonly pending = new Map<number, Pending>();
  private readonly appliedThisStep = new Map<number, AppliedCommand>();
  private nextProposalId = 1;
  /** batch gathers the proposals of this event-loop turn; flushed as one engine input (proposeBatch). */
  private batch: Proposal[] = [];

  constructor(
    private readonly driver: Driver,
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
    if (this.driver.overloaded()) return Promise.reject(new StoreCallError(grpc.status.UNAVAILABLE, 'node overloaded: input queue full'));
    const proposalId = this.nextProposalId++;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(proposalId);
        this.onOutcome('timeout');
        reject(new StoreCallError(grpc.status.DEADLINE_EXCEEDED, 'proposal not committed before its deadline; outcome unknown'));
      }, Math.max(0, deadlineAt - Date.now()));
      this.pending.set(proposalId, { requestId, resolve, reject, timer });
      this.batch.push({ proposalId, data });
      // setImmediate runs after this turn's I/O callbacks: every proposal that arrived with this one joins it.
      if (this.batch.length === 1) setImmediate(() => this.flush());
      else if (this.batch.length >= this.batchCountMax) this.flush();
    });
  }

  private flush(): void {
    if (this.batch.length === 0) return;
    const proposals = this.batch;
    this.batch = [];
    this.onBatch(proposals.length);
    if (proposals.length === 1) this.driver.submit({ type: 'propose', ...proposals[0]! });
    else this.driver.submit({ type: 'proposeBatch', proposals });
  }

  /** noteApplied remembers an apply of this step for the proposalResult that follows it. */
  noteApplied(applied: AppliedCommand): void {
    if (this.pending.size > 0 && applied.result !== null) this.appliedThisStep.set(applied.seq, applied);
  }

  onResult(effect: Extract<Effect, { type: 'proposalResult' }>): void {
    const p = this.pending.get(effect.proposalId);
    if (!p) return;
    this.pending.delete(effect.proposalId);
    clearTimeout(p.timer);
    if (!effect.ok) {
      this.onOutcome('refused');
      p.reject(refusal(effect.reason, effect.leaderHint));
      return;
    }
    const result = this.appliedThisStep.get(effect.seq)?.result ?? this.stateMachine.recall(p.requestId)?.result;
    if (!result) {
      this.onOutcome('lost');
      p.reject(new StoreCallError(grpc.status.INTERNAL, `entry ${effect.seq} committed but its outcome was not seen at apply`));
      return;
    }
    this.onOutcome(result.outcome);
    p.resolve({ seq: effect.seq, result });
  }

  /** endStep forgets the step's applies. */
  endStep(): void {
    this.appliedThisStep.clear();
  }

  rejectAll(err: Error): void {
    for (const p of this.pending.values()) {
      clearTimeout(p.timer);
      p.reject(err);
    }
    this.pending.clear();
  }
}

/** refusal turns the engine's reason into a status the caller can act on. */
function refusal(reason: string, leaderHint: string): StoreCallError {
  if (reason.startsWith('leadership lost')) return new StoreCallError(grpc.status.ABORTED, reason);
  if (reason === 'not the leader') return new StoreCallError(grpc.status.FAILED_PRECONDITION, reason, leaderHint);
  return new StoreCallError(grpc.status.UNAVAILABLE, reason, leaderHint);
}
