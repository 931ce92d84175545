// Calls: the calls this node placed and has not heard the end of (requestId → why it was made), so
// each answer is judged against what was asked. An answer to a request id we no longer hold (swept,
// or already settled) is ignored; a call never answered is swept once it is older than a horizon.

/** CallContext remembers why we made a call, so its answer can be judged. */
export type CallContext =
  /** prevSeq: the seq the segment follows (its log-matching check); lastSeq: its last entry's. */
  | { method: 'ShipSegment'; term: number; toId: number; prevSeq: number; lastSeq: number; commitSeq: number }
  | { method: 'RequestVote'; term: number; toId: number; prevote: boolean }
  | { method: 'Heartbeat'; term: number; toId: number; round: number }
  | { method: 'ReportApplied'; term: number; toId: number }
  | { method: 'TimeoutNow'; term: number; toId: number; adminId: number }
  /** probe = a roster probe (membership-guard.ts), not our own admission. */
  | { method: 'JoinCluster'; term: number; toAddr: string; probe: boolean }
  | { method: 'StreamSegments'; term: number; toId: number }
  | { method: 'FetchSnapshot'; term: number; toId: number };

/** PlacedCall is a call's context and the tick it was placed at. */
export type PlacedCall = CallContext & { sentTick: number };

export class OutstandingCalls {
  /** Request ids start at 1 and are never reused, so a late answer cannot match a newer call. */
  private nextRequestId = 1;
  private readonly byRequestId = new Map<number, PlacedCall>();

  /**
   * place records a call made at `tick` and returns its new request id. `ctx` becomes the record (it gains
   * sentTick): every caller passes a fresh literal, and a spread of the union of contexts per call was slow.
   */
  place(ctx: CallContext, tick: number): number {
    const requestId = this.nextRequestId++;
    const placed = ctx as PlacedCall;
    placed.sentTick = tick;
    this.byRequestId.set(requestId, placed);
    return requestId;
  }

  /** get: the outstanding call with this request id, undefined when none (never placed, settled or swept). */
  get(requestId: number): PlacedCall | undefined {
    return this.byRequestId.get(requestId);
  }

  /** settle forgets a call: its answer, failure or end has been heard. */
  settle(requestId: number): void {
    this.byRequestId.delete(requestId);
  }

  /** sweep forgets every call placed before `horizonTick`: its answer, if it ever comes, is ignored. */
  sweep(horizonTick: number): void {
    for (const [id, call] of this.byRequestId) if (call.sentTick < horizonTick) this.byRequestId.delete(id);
  }

  /** size: how many calls are outstanding. */
  get size(): number {
    return this.byRequestId.size;
  }
}
