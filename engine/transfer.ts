// LeadershipTransfer: the leader's one handover at a time (an admin `transfer` op). The leader waits
// until the target holds its whole log, sends it TimeoutNow once, and the transfer ends when the
// target refuses or cannot be reached, when it times out, or when leadership moves. While one is in
// progress the leader takes no proposals and no membership change (membership.ts).

interface Transfer {
  targetId: number;
  adminId: number;
  elapsedTicks: number;
  /** sent: TimeoutNow has gone to the target; it is sent once per transfer. */
  sent: boolean;
}

export class LeadershipTransfer {
  private current: Transfer | null = null;

  get inProgress(): boolean {
    return this.current !== null;
  }

  /** start begins a transfer to `targetId` for the admin op `adminId`; the caller checked none is in progress. */
  start(targetId: number, adminId: number): void {
    this.current = { targetId, adminId, elapsedTicks: 0, sent: false };
  }

  /**
   * takeDue: when TimeoutNow is due (a transfer not yet sent whose target `caughtUp`), marks it sent
   * and returns the target and admin op; null otherwise.
   */
  takeDue(caughtUp: (targetId: number) => boolean): { targetId: number; adminId: number } | null {
    const t = this.current;
    if (!t || t.sent || !caughtUp(t.targetId)) return null;
    t.sent = true;
    return { targetId: t.targetId, adminId: t.adminId };
  }

  /** tick: one leader tick; a transfer reaching `timeoutTicks` ends, and its admin id is returned (else null). */
  tick(timeoutTicks: number): number | null {
    if (!this.current) return null;
    this.current.elapsedTicks++;
    if (this.current.elapsedTicks < timeoutTicks) return null;
    return this.end();
  }

  /** settle ends the transfer of admin op `adminId` (its TimeoutNow was refused or failed); false when that is not the one in progress. */
  settle(adminId: number): boolean {
    if (this.current?.adminId !== adminId) return false;
    this.current = null;
    return true;
  }

  /** end forgets the transfer in progress (leadership moved or timed out) and returns its admin id, null when none. */
  end(): number | null {
    const adminId = this.current?.adminId ?? null;
    this.current = null;
    return adminId;
  }
}
