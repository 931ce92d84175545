// EngineReads takes read indexes from this node's own engine (engine/read-index.ts, Raft §6.4): the
// leader's engine answers only once it has committed an entry of its term and a heartbeat round started
// after the request was accepted by a majority of voters, so a leader cut off from its quorum answers no
// read — it fails them when it steps down. Each request is one readIndex input, named by a readId, and
// settled by the engine's readIndexResult (or this node's deadline). Concurrent requests share the
// engine's heartbeat rounds; ReadIndexBatch (read-index-batch.ts) already shares requests among readers.
import type { Effect } from '../engine/types.js';
import { StoreRefusal } from './errors.js';
import type { ReadIndexAnswer, StoreEngine } from './host.js';

interface PendingRead {
  term: number;
  resolve: (answer: ReadIndexAnswer) => void;
  reject: (err: Error) => void;
  timer: NodeJS.Timeout;
}

export class EngineReads {
  private readonly pending = new Map<number, PendingRead>();
  private nextReadId = 1;

  constructor(private readonly engine: StoreEngine, private readonly onOutcome: (outcome: string) => void = () => undefined) {}

  get count(): number {
    return this.pending.size;
  }

  /** take asks the engine for a read index; it rejects with a StoreRefusal (not-leader, leadership-changed, overloaded, timeout). */
  take(deadlineAt: number): Promise<ReadIndexAnswer> {
    if (this.engine.overloaded()) return Promise.reject(new StoreRefusal('unavailable', 'node overloaded: input queue full'));
    const readId = this.nextReadId++;
    const term = this.engine.status().term;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(readId);
        this.onOutcome('timeout');
        reject(new StoreRefusal('timeout', 'the leader did not confirm its leadership before the deadline'));
      }, Math.max(0, deadlineAt - Date.now()));
      this.pending.set(readId, { term, resolve, reject, timer });
      this.engine.submit({ type: 'readIndex', readId });
    });
  }

  onResult(effect: Extract<Effect, { type: 'readIndexResult' }>): void {
    const p = this.pending.get(effect.readId);
    if (!p) return;
    this.pending.delete(effect.readId);
    clearTimeout(p.timer);
    this.onOutcome(effect.refusal ?? 'answered');
    switch (effect.refusal) {
      case null: p.resolve({ commitSeq: effect.index, term: p.term }); return; // a leader's term moves only when it steps down
      case 'not-leader': p.reject(new StoreRefusal('not-leader', 'not the leader', effect.leaderHint)); return;
      case 'stepped-down': p.reject(new StoreRefusal('leadership-changed', 'leadership was lost before the read index was confirmed')); return;
      case 'queue-full': p.reject(new StoreRefusal('overloaded', 'too many reads waiting for the leader to confirm its leadership')); return;
      default: p.reject(new StoreRefusal('internal', `unknown read-index refusal ${String(effect.refusal)}`));
    }
  }

  rejectAll(err: Error): void {
    for (const p of this.pending.values()) {
      clearTimeout(p.timer);
      p.reject(err);
    }
    this.pending.clear();
  }
}
