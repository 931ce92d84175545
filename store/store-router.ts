// StoreRouter gets store commands committed and read indexes taken wherever this node stands:
// as the leader it proposes to its own engine; otherwise it forwards to the leader over
// svc.store.v1 (mTLS). It retries while the leader is unknown or changing, with the same request
// id, until the caller's deadline: the state machine applies a request id once, so a retry after
// an outcome-unknown failure cannot write twice.
import * as grpc from '@grpc/grpc-js';
import { memberById } from '../engine/roster.js';
import { encodeCommand, type CommandResult, type StoreCommand } from './command.js';
import type { StoreLimits } from './limits.js';
import { StoreUnavailableError, type StoreHost } from './replicated-store.js';
import type { StoreStateMachine } from './state-machine.js';
import { StoreCallError, type StoreClientPool, type StoreServiceHandler } from '../transports/store-rpc/store-service.js';
import type { Driver } from '../transports/node/driver.js';
import type { Proposals } from './proposals.js';
import type { Waiters } from './waiters.js';

/** Errors worth another attempt: the leader moved, is electing, or did not answer; the outcome is settled by de-duplication. */
const RETRYABLE: ReadonlySet<number> = new Set([
  grpc.status.FAILED_PRECONDITION, grpc.status.ABORTED, grpc.status.UNAVAILABLE, grpc.status.DEADLINE_EXCEEDED,
  grpc.status.CANCELLED, grpc.status.RESOURCE_EXHAUSTED,
]);

export class StoreRouter implements StoreHost {
  constructor(
    private readonly driver: Driver,
    readonly stateMachine: StoreStateMachine,
    private readonly proposals: Proposals,
    private readonly clients: StoreClientPool,
    private readonly waiters: Waiters,
    private readonly limits: StoreLimits,
  ) {}

  commit(command: StoreCommand, deadlineAt: number): Promise<{ seq: number; result: CommandResult }> {
    const bytes = encodeCommand(command);
    return this.routed('commit', deadlineAt,
      () => this.proposeHere(command, bytes, deadlineAt),
      (leader, callDeadlineAt) => this.clients.propose(leader, bytes, callDeadlineAt));
  }

  async readIndex(deadlineAt: number): Promise<number> {
    const answer = await this.routed('read index', deadlineAt,
      () => this.readIndexHere(deadlineAt),
      (leader, callDeadlineAt) => this.clients.readIndex(leader, callDeadlineAt));
    return answer.commitSeq;
  }

  waitApplied(seq: number, deadlineAt: number): Promise<void> {
    return this.waiters.untilReached(this.appliedSeq, seq, deadlineAt, `this node to apply seq ${seq}`);
  }

  /** appliedSeq is the one counter function of every waitApplied (Waiters keeps their waits in one heap by seq). */
  private readonly appliedSeq = (): number => this.stateMachine.appliedSeq;

  /** serviceHandler answers other members' Store calls: only the leader serves them. */
  serviceHandler(): StoreServiceHandler {
    return {
      propose: (command, deadlineAt) => this.proposeHere(command, encodeCommand(command), deadlineAt),
      readIndex: (deadlineAt) => this.readIndexHere(deadlineAt),
    };
  }

  private proposeHere(command: StoreCommand, bytes: Uint8Array, deadlineAt: number): Promise<{ seq: number; result: CommandResult }> {
    const refusal = this.notLeader();
    if (refusal) return Promise.reject(refusal);
    // Applied already (a retry whose first attempt committed): answer the first outcome.
    const seen = this.stateMachine.recall(command.requestId);
    if (seen) return Promise.resolve(seen);
    return this.proposals.propose(bytes, command.requestId, deadlineAt);
  }

  /**
   * readIndexHere: the leader's commit seqno is a safe read index once it has committed an entry of
   * its own term (its term-start barrier): from then on it covers every write committed before.
   * Leadership itself rests on the engine's check-quorum lease (a leader that lost its quorum for
   * an election timeout steps down), as etcd's lease-based reads do.
   */
  private async readIndexHere(deadlineAt: number): Promise<{ commitSeq: number; term: number }> {
    const refusal = this.notLeader();
    if (refusal) throw refusal;
    const term = this.driver.status().term;
    await this.waiters.until(() => {
      const s = this.driver.status();
      return s.role !== 'leader' || s.term !== term || this.driver.termAt(s.commitSeq) === term;
    }, deadlineAt, 'the leader to commit an entry of its term');
    const s = this.driver.status();
    if (s.role !== 'leader' || s.term !== term) throw new StoreCallError(grpc.status.ABORTED, 'leadership changed while taking the read index');
    return { commitSeq: s.commitSeq, term };
  }

  private notLeader(): StoreCallError | null {
    const s = this.driver.status();
    if (s.role === 'leader') return null;
    const leader = s.leaderId === 0 ? undefined : memberById(s.roster, s.leaderId);
    return new StoreCallError(grpc.status.FAILED_PRECONDITION, leader ? `not the leader; the leader is ${leader.name}` : 'not the leader; no leader known', leader?.grpcAddr ?? '');
  }

  /** routed runs one attempt after another — here as the leader, or at the leader — until one succeeds or the deadline passes. */
  private async routed<T>(what: string, deadlineAt: number, here: () => Promise<T>, there: (leader: string, callDeadlineAt: number) => Promise<T>): Promise<T> {
    let lastProblem = 'no leader known';
    let hint = '';
    let hintFollowed = false;
    // Bounded by deadlineAt: every pass either returns, throws, or waits at least retryBackoffMs.
    for (;;) {
      const s = this.driver.status();
      if (this.driver.failure) throw new StoreUnavailableError(`this node has stopped: ${this.driver.failure.message}`);
      if (s.removed) throw new StoreUnavailableError('this node was removed from the cluster');
      if (Date.now() >= deadlineAt) throw new StoreUnavailableError(`${what} timed out: ${lastProblem}`);
      const leader = s.leaderId === 0 ? undefined : memberById(s.roster, s.leaderId);
      const target = s.role === 'leader' ? 'here' : hint !== '' ? hint : leader?.grpcAddr ?? '';
      hint = '';
      if (target !== '') {
        try {
          return target === 'here' ? await here() : await there(target, Math.min(deadlineAt, Date.now() + this.limits.callDeadlineMs));
        } catch (err) {
          if (!(err instanceof StoreCallError)) throw err;
          if (!RETRYABLE.has(err.code)) throw new StoreUnavailableError(`${what} failed: ${err.message}`);
          lastProblem = err.message;
          // A refusal naming the leader is followed at once, but only once between pauses.
          if (err.leaderHint !== '' && err.leaderHint !== target && !hintFollowed) {
            hint = err.leaderHint;
            hintFollowed = true;
            continue;
          }
        }
      }
      hintFollowed = false;
      await pause(Math.min(this.limits.retryBackoffMs, Math.max(0, deadlineAt - Date.now())));
    }
  }
}

function pause(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
