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
// flight only adds a round to a read's wait. `overlap` (asked as each call would start, with the number of
// calls in flight) lets the next call start one turn after its first reader even while others are in flight.
// A follower may overlap too, up to a bound (store limit readIndexCallsInFlightMax, default 1: no overlap):
// without it, its readers wait for the call in flight to come back before their own is even asked, about a
// second round trip to the leader per keyed request (bench/api-cluster.ts prints both waits). The calls stay
// one per loop turn with readers, so a busy follower's turns still gather dozens of readers each.

/** ReadIndexBatchStats counts calls and readers (how well reads share calls, for the bench and tests). */
export interface ReadIndexBatchStats {
  /** calls started (each one read-index call). */
  calls: number;
  /** readers that asked for a read index. */
  readers: number;
  /** gatherMs sums, over calls started, the time from the call's first reader to its start (ms). */
  gatherMs: number;
  /** callMs sums, over calls settled, the time from start to answer or failure (ms). */
  callMs: number;
}

/** ReadIndexOverlap: may a call start while `inFlight` (>= 1) others are in flight? */
export type ReadIndexOverlap = (inFlight: number) => boolean;

interface Gathering {
  /** firstAt: when the first reader arrived (performance.now(), ms). */
  firstAt: number;
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
  private readonly counts: ReadIndexBatchStats = { calls: 0, readers: 0, gatherMs: 0, callMs: 0 };

  /**
   * take performs one read-index call that must finish by deadlineAt; overlap says whether a call may start
   * while others are in flight (always where calls are batched further down, e.g. on the leader; up to a
   * bound on a follower).
   */
  constructor(
    private readonly take: (deadlineAt: number) => Promise<number>,
    private readonly overlap: ReadIndexOverlap = () => false,
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
    this.gathering = { firstAt: performance.now(), promise, resolve, reject, deadlineAt };
    // With calls in flight (and no overlap), the next one to settle schedules this one.
    if (this.mayStart()) this.startNextTurn();
    return promise;
  }

  private mayStart(): boolean {
    return this.inFlight === 0 || this.overlap(this.inFlight);
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
    if (!this.mayStart()) return;
    this.gathering = null;
    this.inFlight++;
    this.counts.calls++;
    const startedAt = performance.now();
    this.counts.gatherMs += startedAt - batch.firstAt;
    let call: Promise<number>;
    try {
      call = this.take(batch.deadlineAt);
    } catch (err) {
      call = Promise.reject(err);
    }
    call.then(batch.resolve, batch.reject);
    const settled = (): void => {
      this.counts.callMs += performance.now() - startedAt;
      this.inFlight--;
      if (this.gathering) this.startNextTurn();
    };
    call.then(settled, settled);
  }
}
