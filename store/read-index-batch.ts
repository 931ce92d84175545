// ReadIndexBatch lets concurrent reads share one read-index call (on a follower, one ReadIndex RPC to the
// leader instead of one per read). A read may only use a read index taken AFTER it began — an index answered
// earlier could miss a write acknowledged in between — so a reader always joins a call that has not started
// yet. At most one call is in flight and one gathering, whatever the number of readers (etcd batches its
// linearizable reads the same way).
//
// The gathering window: a call starts one loop turn (setImmediate) after its first reader arrived, or after
// the previous call settled, whichever is later. A leader answers within a fraction of a millisecond, far
// sooner than a busy follower handles its waiting requests, so without that turn a call would start with
// the one or two readers gathered while the last answer was on the wire; with it, every request whose I/O
// the loop is handling joins. The delay is bounded by one turn of the loop and never makes an index older:
// a call that starts later can only answer a higher commit seqno.

/** ReadIndexBatchStats counts calls and readers (how well reads share calls, for the bench and tests). */
export interface ReadIndexBatchStats {
  /** calls started (each one read-index call). */
  calls: number;
  /** readers that asked for a read index. */
  readers: number;
}

interface Gathering {
  promise: Promise<number>;
  resolve: (seq: number) => void;
  reject: (err: unknown) => void;
  deadlineAt: number;
}

export class ReadIndexBatch {
  private inFlight = false;
  private gathering: Gathering | null = null;
  private readonly counts: ReadIndexBatchStats = { calls: 0, readers: 0 };

  /** take performs one read-index call that must finish by deadlineAt. */
  constructor(private readonly take: (deadlineAt: number) => Promise<number>) {}

  get stats(): ReadIndexBatchStats {
    return { ...this.counts };
  }

  /** readIndex resolves with a read index taken after this call began, sharing the call with concurrent readers. */
  readIndex(deadlineAt: number): Promise<number> {
    this.counts.readers++;
    const gathering = this.gathering;
    if (gathering) {
      // The shared call must not outlive any of its readers' deadlines.
      gathering.deadlineAt = Math.min(gathering.deadlineAt, deadlineAt);
      return gathering.promise;
    }
    let resolve!: (seq: number) => void;
    let reject!: (err: unknown) => void;
    const promise = new Promise<number>((res, rej) => { resolve = res; reject = rej; });
    this.gathering = { promise, resolve, reject, deadlineAt };
    // With a call in flight, its settling schedules this one.
    if (!this.inFlight) this.startNextTurn();
    return promise;
  }

  private startNextTurn(): void {
    setImmediate(() => this.start());
  }

  private start(): void {
    const batch = this.gathering;
    this.gathering = null;
    if (!batch) return;
    this.inFlight = true;
    this.counts.calls++;
    let call: Promise<number>;
    try {
      call = this.take(batch.deadlineAt);
    } catch (err) {
      call = Promise.reject(err);
    }
    call.then(batch.resolve, batch.reject);
    const settled = (): void => {
      this.inFlight = false;
      if (this.gathering) this.startNextTurn();
    };
    call.then(settled, settled);
  }
}
