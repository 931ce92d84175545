// ReadIndexBatch lets concurrent reads share one read-index call (on a follower, one ReadIndex RPC to the
// leader instead of one per read). A read may only use a read index taken AFTER it began — an index answered
// earlier could miss a write acknowledged in between — so a reader always joins a call that has not started
// yet. At most one call is in flight and one gathering, whatever the number of readers (etcd batches its
// linearizable reads the same way), unless `overlap` allows more (below).
//
// The gathering window: a call starts one loop turn (setImmediate) after its first reader arrived, or after
// the previous call settled, whichever is later. A leader answers within a fraction of a millisecond, far
// sooner than a busy follower handles its waiting requests, so without that turn a call would start with
// the one or two readers gathered while the last answer was on the wire; with it, every request whose I/O
// the loop is handling joins. The delay is bounded by one turn of the loop and never makes an index older:
// a call that starts later can only answer a higher commit seqno.
//
// Where the calls are cheap and already batched further down — on the leader, whose read indexes come from
// its own engine (engine-reads.ts gathers a loop turn's requests into one input, and the engine makes the
// inputs that arrive while a heartbeat round is in flight share the next round) — waiting for the call in
// flight only adds a round to a read's wait. `overlap` (asked as each call would start) lets the next call
// start one turn after its first reader even while another is in flight.

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
  private inFlight = 0;
  /** scheduled: a start is queued for the gathering (setImmediate). */
  private scheduled = false;
  private gathering: Gathering | null = null;
  private readonly counts: ReadIndexBatchStats = { calls: 0, readers: 0 };

  /**
   * take performs one read-index call that must finish by deadlineAt; overlap says whether a call may start
   * while another is in flight (true where calls are batched further down, e.g. on the leader).
   */
  constructor(
    private readonly take: (deadlineAt: number) => Promise<number>,
    private readonly overlap: () => boolean = () => false,
  ) {}

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
    const promise = new Promise<number>((res, rej) => {
      resolve = res;
      reject = rej;
    });
    this.gathering = { promise, resolve, reject, deadlineAt };
    // With a call in flight (and no overlap), its settling schedules this one.
    if (this.inFlight === 0 || this.overlap()) this.startNextTurn();
    return promise;
  }

  private startNextTurn(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      this.start();
    });
  }

  private start(): void {
    const batch = this.gathering;
    if (!batch) return;
    // Asked again as the call would start: leadership may have moved during the turn.
    if (this.inFlight > 0 && !this.overlap()) return;
    this.gathering = null;
    this.inFlight++;
    this.counts.calls++;
    let call: Promise<number>;
    try {
      call = this.take(batch.deadlineAt);
    } catch (err) {
      call = Promise.reject(err);
    }
    call.then(batch.resolve, batch.reject);
    const settled = (): void => {
      this.inFlight--;
      if (this.gathering) this.startNextTurn();
    };
    call.then(settled, settled);
  }
}
