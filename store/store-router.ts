// StoreRouter gets store commands committed and read indexes taken wherever this node stands:
// as the leader it proposes to its own engine; otherwise it forwards to the leader through the
// LeaderLink (svc.store.v1 over mTLS in a node). It retries while the leader is unknown or changing,
// with the same request id, until the caller's deadline: the state machine applies a request id once,
// so a retry after an outcome-unknown failure cannot write twice. It also answers other members'
// forwarded calls (serveProposal, serveReadIndex), in the wire's terms.
import { memberById, memberByName } from '../engine/roster.js';
import { MemberRole, type ReadIndexAsker } from '../engine/types.js';
import type { CommandResult as CommandResultMessage } from '../proto/gen/svc/store/v1/store.js';
import {
  commandNamesRequestId,
  decodeCommand,
  resultFromMessage,
  resultToMessage,
  type CommandResult,
  type EncodedCommand,
} from './command.js';
import { RETRYABLE_REFUSALS, StoreRefusal, StoreUnavailableError } from './errors.js';
import type { LeaderLink, ReadIndexAnswer, StoreEngine, StoreHost } from './host.js';
import type { MemberFilter } from '../engine/types.js';
import type { StoreLimits } from './limits.js';
import type { EngineReads } from './engine-reads.js';
import type { StoreStateMachine } from './state-machine.js';
import type { VersionedValue } from './document-store.js';
import type { Proposals } from './proposals.js';
import type { Waiters } from './waiters.js';

/** Committed: a proposal's outcome as this node applied it. */
type Committed = { seq: number; result: CommandResult };

/** answerMessage: a proposal's outcome in the wire's terms (serveProposal's answer). */
const answerMessage = (committed: Committed): { seq: number; result: CommandResultMessage } => ({
  seq: committed.seq,
  result: resultToMessage(committed.result),
});

export class StoreRouter implements StoreHost {
  constructor(
    private readonly engine: StoreEngine,
    readonly stateMachine: StoreStateMachine,
    private readonly proposals: Proposals,
    private readonly reads: EngineReads,
    private readonly link: LeaderLink,
    private readonly waiters: Waiters,
    private readonly limits: StoreLimits,
  ) {}

  commit(command: EncodedCommand, deadlineAt: number): Promise<Committed> {
    return this.routed(
      'commit',
      deadlineAt,
      () => this.proposeHere(command, deadlineAt),
      async (leader, callDeadlineAt) => {
        const answer = await this.link.propose(leader, command, callDeadlineAt);
        return { seq: answer.seq, result: readResult(leader, answer.result) };
      },
    );
  }

  async readIndex(deadlineAt: number, gathered = false): Promise<number> {
    const answer = await this.routed(
      'read index',
      deadlineAt,
      () => this.readIndexHere(deadlineAt, undefined, gathered),
      // The term is read as the request goes (after every read it serves began): at that moment this member had
      // granted no vote above it, which is what makes it an ack at the leader (engine/read-index.ts).
      (leader, callDeadlineAt) => this.link.readIndex(leader, callDeadlineAt, this.engine.status().term),
    );
    return answer.commitSeq;
  }

  /**
   * getAtLeader reads one key at the leader, where it is read linearizably (its own read index, its own apply):
   * a catching-up member's read goes there instead of waiting for its own apply. Only a member that follows
   * asks; a node that leads now reads here (refused as unavailable, its caller retries).
   */
  getAtLeader(key: string, deadlineAt: number): Promise<VersionedValue | null> {
    const get = this.link.get?.bind(this.link);
    if (!get) return Promise.reject(new StoreUnavailableError('this node cannot read at the leader'));
    return this.routed(
      'read at the leader',
      deadlineAt,
      () => Promise.reject(new StoreUnavailableError('this node leads now: read it here')),
      (leader, callDeadlineAt) => get(leader, key, callDeadlineAt),
    );
  }

  overlay(): MemberFilter | 'refilling' | null {
    const s = this.engine.status();
    if (!s.filter && !s.filteredData) return null;
    // Only data cut by the filter in force is served; anything else is a member about to drop what it holds.
    return s.filter && s.dataFilter && JSON.stringify(s.dataFilter) === JSON.stringify(s.filter)
      ? s.filter
      : 'refilling';
  }

  readsLocally(): boolean {
    return this.engine.status().role === 'leader';
  }

  waitApplied(seq: number, deadlineAt: number): Promise<void> {
    return this.waiters.untilReached(this.appliedSeq, seq, deadlineAt, `this node to apply seq ${seq}`);
  }

  /** appliedSeq is the one counter function of every waitApplied (Waiters keeps their waits in one heap by seq). */
  private readonly appliedSeq = (): number => this.stateMachine.appliedSeq;

  /**
   * serveProposal answers another member's forwarded command (only the leader commits it), proposed as the bytes
   * it came as. With the request id the sender put beside it, and the command's last bytes naming that id
   * (commandNamesRequestId), it is not decoded here: apply decodes it, once, and a command that is malformed
   * within commits as a `rejected` outcome. Otherwise (an older sender, another encoding) it is decoded to find
   * the id, and a malformed one is refused as invalid.
   */
  serveProposal(
    bytes: Uint8Array,
    deadlineAt: number,
    sentRequestId = '',
  ): Promise<{ seq: number; result: CommandResultMessage }> {
    // Not an async function: one per forwarded write, its frame and awaits were garbage the leader made per write.
    let requestId = sentRequestId;
    try {
      if (!commandNamesRequestId(bytes, requestId)) {
        const decoded = decodeCommand(bytes);
        if (!decoded.ok) throw new StoreRefusal('invalid', `bad command: ${decoded.reason}`);
        requestId = decoded.command.requestId;
      }
      return this.proposeHere({ requestId, bytes }, deadlineAt).then(answerMessage);
    } catch (err) {
      return Promise.reject(err);
    }
  }

  /**
   * serveReadIndex answers another member's read-index request (only the leader serves it). asker: the member its
   * peer certificate names and the term its request carried; a member of this node's roster by that name is the
   * engine's asker (the engine counts it only if it is a voter of the leader's term: engine/read-index.ts).
   */
  serveReadIndex(deadlineAt: number, asker?: { name: string; term: number }): Promise<ReadIndexAnswer> {
    const member = asker ? memberByName(this.engine.status().roster, asker.name) : undefined;
    return this.readIndexHere(deadlineAt, member && asker ? { id: member.id, term: asker.term } : undefined);
  }

  private proposeHere(command: EncodedCommand, deadlineAt: number): Promise<Committed> {
    const refusal = this.notLeader();
    if (refusal) return Promise.reject(refusal);
    // Applied already (a retry whose first attempt committed): answer the first outcome.
    const seen = this.stateMachine.recall(command.requestId);
    if (seen) return Promise.resolve(seen);
    return this.proposals.propose(command.bytes, command.requestId, deadlineAt);
  }

  /**
   * readIndexHere: the engine's read index (engine/read-index.ts): the commit seqno when the request
   * arrived, answered once the leader has committed an entry of its own term and a heartbeat round
   * started after the request was accepted by a majority of voters. A leader cut off from its quorum
   * never confirms one (it fails its pending reads when check-quorum deposes it), so it serves no stale
   * read however long it still believes it leads.
   */
  private readIndexHere(deadlineAt: number, asker?: ReadIndexAsker, gathered = false): Promise<ReadIndexAnswer> {
    const refusal = this.notLeader();
    if (refusal) return Promise.reject(refusal);
    return this.reads.take(deadlineAt, asker, gathered);
  }

  private notLeader(): StoreRefusal | null {
    const s = this.engine.status();
    if (s.role === 'leader') return null;
    const leader = s.leaderId === 0 ? undefined : memberById(s.roster, s.leaderId);
    return new StoreRefusal(
      'not-leader',
      leader ? `not the leader; the leader is ${leader.name}` : 'not the leader; no leader known',
      leader?.grpcAddr ?? '',
    );
  }

  /** peerTurn rotates the peer asked while no leader is known. */
  private peerTurn = 0;

  /** peerToAsk is another member to ask for the leader (each in turn), or '' when there is none. */
  private peerToAsk(s: ReturnType<StoreEngine['status']>): string {
    const peers = s.roster.members.filter((m) => m.id !== s.id && m.role !== MemberRole.Removed);
    if (peers.length === 0) return '';
    return peers[this.peerTurn++ % peers.length]!.grpcAddr;
  }

  /** routed runs one attempt after another — here as the leader, or at the leader — until one succeeds or the deadline passes. */
  private async routed<T>(
    what: string,
    deadlineAt: number,
    here: () => Promise<T>,
    there: (leader: string, callDeadlineAt: number) => Promise<T>,
  ): Promise<T> {
    let lastProblem = 'no leader known';
    let hint = '';
    let hintFollowed = false;
    let peerAsked = false;
    // Bounded by deadlineAt: every pass either returns, throws, or waits at least retryBackoffMs.
    for (;;) {
      const s = this.engine.status();
      if (this.engine.failure) throw new StoreUnavailableError(`this node has stopped: ${this.engine.failure.message}`);
      if (s.removed) throw new StoreUnavailableError('this node was removed from the cluster');
      if (Date.now() >= deadlineAt) throw new StoreUnavailableError(`${what} timed out: ${lastProblem}`);
      const leader = s.leaderId === 0 ? undefined : memberById(s.roster, s.leaderId);
      let target = s.role === 'leader' ? 'here' : hint !== '' ? hint : (leader?.grpcAddr ?? '');
      hint = '';
      // No leader known: a member that just restarted hears of it only with the leader's next heartbeat, which
      // may wait on the leader's reconnect to it. A peer knows: its refusal names the leader (followed below),
      // and a peer that leads serves the call. Once between pauses, like a hint.
      if (target === '' && !peerAsked) {
        target = this.peerToAsk(s);
        peerAsked = true;
      }
      if (target !== '') {
        try {
          return target === 'here'
            ? await here()
            : await there(target, Math.min(deadlineAt, Date.now() + this.limits.callDeadlineMs));
        } catch (err) {
          if (!(err instanceof StoreRefusal)) throw err;
          if (!RETRYABLE_REFUSALS.has(err.kind)) throw new StoreUnavailableError(`${what} failed: ${err.message}`);
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
      peerAsked = false;
      await pause(Math.min(this.limits.retryBackoffMs, Math.max(0, deadlineAt - Date.now())));
    }
  }
}

/** readResult reads a leader's answer; an outcome this build does not know is refused, not guessed. */
function readResult(leader: string, message: CommandResultMessage | undefined): CommandResult {
  try {
    return resultFromMessage(message);
  } catch (err) {
    throw new StoreRefusal('internal', `malformed answer from ${leader}: ${(err as Error).message}`);
  }
}

function pause(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
