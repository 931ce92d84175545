// ReadIndexBatch lets concurrent reads share one read-index call (on a follower, one ReadIndex RPC to the
// leader instead of one per read). A read may only use a read index taken AFTER it began — an index answered
// earlier could miss a write acknowledged in between — so reads that arrive while a call is in flight gather
// for the next call, which starts as soon as that one settles. At most one call is in flight and one
// gathering, whatever the number of readers (etcd batches its linearizable reads the same way).
export class ReadIndexBatch {
  private inFlight = false;
  private gathering: { promise: Promise<number>; resolve: (seq: number) => void; reject: (err: unknown) => void; deadlineAt: number } | null = null;

  /** take performs one read-index call that must finish by deadlineAt. */
  constructor(private readonly take: (deadlineAt: number) => Promise<number>) {}

  /** readIndex resolves with a read index taken after this call began, sharing the call with concurrent readers. */
  readIndex(deadlineAt: number): Promise<number> {
    if (!this.inFlight) return this.start(deadlineAt);
    if (this.gathering) {
      // The shared call must not outlive any of its readers' deadlines.
      this.gathering.deadlineAt = Math.min(this.gathering.deadlineAt, deadlineAt);
      return this.gathering.promise;
    }
    let resolve!: (seq: number) => void;
    let reject!: (err: unknown) => void;
    const promise = new Promise<number>((res, rej) => { resolve = res; reject = rej; });
    this.gathering = { promise, resolve, reject, deadlineAt };
    return promise;
  }

  private start(deadlineAt: number): Promise<number> {
    this.inFlight = true;
    let call: Promise<number>;
    try {
      call = this.take(deadlineAt);
    } catch (err) {
      call = Promise.reject(err);
    }
    const settled = (): void => {
      this.inFlight = false;
      const next = this.gathering;
      this.gathering = null;
      if (next) this.start(next.deadlineAt).then(next.resolve, next.reject);
    };
    call.then(settled, settled);
    return call;
  }
}
