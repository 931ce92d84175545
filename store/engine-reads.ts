// EngineReads takes read indexes from this node's own engine (engine/read-index.ts, Raft §6.4): the
// leader's engine answers only once it has committed an entry of its term and a heartbeat round started
// after the request was accepted by a majority of voters, so a leader cut off from its quorum answers no
// read — it fails them when it steps down.
//
// The requests of one loop turn go to the engine as ONE readIndex input (a batch, named by its readId),
// settled by the engine's readIndexResult (or each request's own deadline). A leader's requests come from
// several sources at once — its own reads (ReadIndexBatch) and each follower's ReadIndexStream — and as
// separate inputs, the first would start a heartbeat round in its step and the others, arriving a step
// later, would each wait for the round after it (a round must start after its read arrived). Gathered for
// one turn (setImmediate: every request whose I/O the loop is handling now joins), they share the round
// the batch starts, or the next one. Sound: the batch's input reaches the engine after every request in
// it began, so its index and round are valid for each. The delay is one loop turn.
//
// A follower's request names its asker (the member its certificate names, and its term as it sent it), whose
// ack the engine counts for that request's reads only (engine/read-index.ts, "The asker's ack"): such requests
// are gathered apart, one input per asker and term, so the ack never vouches for a read that began after the
// asker sent its request (this leader's own reads, another member's). Two requests of one asker in one term may
// share an input: each read began before its own request, at whose sending the asker held that term.
//
// A request whose caller gathered a loop turn of readers already (`gathered`: this leader's own ReadIndexBatch,
// which starts its call one turn after its first reader) goes to the engine at once as its own input: a second
// turn of gathering here would add nothing to its batch and would delay its round by a whole turn of the loop,
// which on a loaded leader is every request it is handling (bench/api-cluster.ts). Sound for the same reason:
// the input reaches the engine after every read of the caller's batch began.
import type { Effect, ReadIndexAsker } from '../engine/types.js';
import { StoreRefusal } from './errors.js';
import type { ReadIndexAnswer, StoreEngine } from './host.js';

interface Waiter {
  deadlineAt: number;
  resolve: (answer: ReadIndexAnswer) => void;
  reject: (err: Error) => void;
}

/** Gathered: one loop turn's requests of one asker (or of none), bound for one readIndex input. */
interface Gathered {
  asker: ReadIndexAsker | undefined;
  waiters: Waiter[];
}

/** Batch is one readIndex input and the requests it answers. */
interface Batch {
  term: number;
  waiters: Waiter[];
  /** timer fires at the earliest deadline among the waiters (one timer per batch, not per request). */
  timer: NodeJS.Timeout | null;
}

export class EngineReads {
  private readonly pending = new Map<number, Batch>();
  /** gathering: requests of this loop turn, not yet submitted, by asker ('' none; null: no flush scheduled). */
  private gathering: Map<string, Gathered> | null = null;
  private nextReadId = 1;
  private waiterCount = 0;

  /** onOutcome is told each engine answer's outcome once per readIndex input, and 'timeout' once per request that timed out. */
  constructor(
    private readonly engine: StoreEngine,
    private readonly onOutcome: (outcome: string) => void = () => undefined,
  ) {}

  /** count: requests not settled yet (gathering or waiting for the engine). */
  get count(): number {
    return this.waiterCount;
  }

  /**
   * take asks the engine for a read index; it rejects with a StoreRefusal (not-leader, leadership-changed,
   * overloaded, timeout). asker: the member that forwarded the request (the module comment); absent for any other.
   * gathered: the caller gathered its readers for a loop turn already, so the input goes now (the module comment);
   * only without an asker (an asker's requests share an input per turn).
   */
  take(deadlineAt: number, asker?: ReadIndexAsker, gathered = false): Promise<ReadIndexAnswer> {
    if (this.engine.overloaded())
      return Promise.reject(new StoreRefusal('unavailable', 'node overloaded: input queue full'));
    return new Promise((resolve, reject) => {
      if (gathered && !asker) {
        this.waiterCount++;
        this.submit(undefined, [{ deadlineAt, resolve, reject }]);
        return;
      }
      if (this.gathering === null) {
        this.gathering = new Map();
        setImmediate(() => this.flush());
      }
      const key = asker ? `${asker.id}:${asker.term}` : '';
      let group = this.gathering.get(key);
      if (!group) this.gathering.set(key, (group = { asker, waiters: [] }));
      group.waiters.push({ deadlineAt, resolve, reject });
      this.waiterCount++;
    });
  }

  onResult(effect: Extract<Effect, { type: 'readIndexResult' }>): void {
    const batch = this.pending.get(effect.readId);
    if (!batch) return;
    this.pending.delete(effect.readId);
    if (batch.timer) clearTimeout(batch.timer);
    this.waiterCount -= batch.waiters.length;
    this.onOutcome(effect.refusal ?? 'answered');
    if (effect.refusal === null) {
      // A leader's term moves only when it steps down.
      const answer = { commitSeq: effect.index, term: batch.term };
      for (const w of batch.waiters) w.resolve(answer);
      return;
    }
    const err = refusalError(effect);
    for (const w of batch.waiters) w.reject(err);
  }

  rejectAll(err: Error): void {
    const gathered = this.gathering ?? new Map<string, Gathered>();
    this.gathering = null;
    for (const group of gathered.values()) for (const w of group.waiters) w.reject(err);
    for (const batch of this.pending.values()) {
      if (batch.timer) clearTimeout(batch.timer);
      for (const w of batch.waiters) w.reject(err);
    }
    this.pending.clear();
    this.waiterCount = 0;
  }

  /** flush submits the turn's requests as one readIndex input per asker (and one for the requests with none). */
  private flush(): void {
    const groups = this.gathering;
    this.gathering = null;
    if (groups === null) return;
    for (const { asker, waiters } of groups.values()) if (waiters.length > 0) this.submit(asker, waiters);
  }

  /** submit sends one readIndex input for waiters (counted in waiterCount already). */
  private submit(asker: ReadIndexAsker | undefined, waiters: Waiter[]): void {
    const readId = this.nextReadId++;
    const batch: Batch = { term: this.engine.status().term, waiters, timer: null };
    this.pending.set(readId, batch);
    this.armTimer(readId, batch);
    this.engine.submit(asker ? { type: 'readIndex', readId, asker } : { type: 'readIndex', readId });
  }

  private armTimer(readId: number, batch: Batch): void {
    let earliest = Infinity;
    for (const w of batch.waiters) earliest = Math.min(earliest, w.deadlineAt);
    batch.timer = setTimeout(() => this.expire(readId, batch), Math.max(0, earliest - Date.now()));
  }

  /** expire fails the requests whose deadline passed; the rest keep waiting for the engine's answer. */
  private expire(readId: number, batch: Batch): void {
    const now = Date.now();
    const expired = batch.waiters.filter((w) => w.deadlineAt <= now);
    batch.waiters = batch.waiters.filter((w) => w.deadlineAt > now);
    this.waiterCount -= expired.length;
    for (const w of expired) {
      this.onOutcome('timeout');
      w.reject(new StoreRefusal('timeout', 'the leader did not confirm its leadership before the deadline'));
    }
    if (batch.waiters.length === 0) {
      this.pending.delete(readId);
      return;
    }
    this.armTimer(readId, batch);
  }
}

function refusalError(effect: Extract<Effect, { type: 'readIndexResult' }>): StoreRefusal {
  switch (effect.refusal) {
    case 'not-leader':
      return new StoreRefusal('not-leader', 'not the leader', effect.leaderHint);
    case 'stepped-down':
      return new StoreRefusal('leadership-changed', 'leadership was lost before the read index was confirmed');
    case 'queue-full':
      return new StoreRefusal('overloaded', 'too many reads waiting for the leader to confirm its leadership');
    default:
      return new StoreRefusal('internal', `unknown read-index refusal ${String(effect.refusal)}`);
  }
}
