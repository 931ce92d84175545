// Membership: what a node keeps about the roster and its changes, with their rules — the
// decoded kind-4 records (RosterCache), the kind-4 / capability gate on a leader's changes
// (confChangeRefusal), the joins and admin ops waiting for their record to commit
// (PendingChanges), and a joiner's own attempts (JoinDialer). Who may send us messages is
// membership-guard.ts; the record codec is roster.ts.
import { decodeRoster } from './roster.js';
import { CAPABILITY_KIND4, MemberRole, type ConfChangeRefusalCode, type Entry, type Roster } from './types.js';

/** RosterCache keeps decoded kind-4 bodies by seq, each checked against its entry's term (truncation). */
export class RosterCache {
  private readonly bySeq = new Map<number, { term: number; roster: Roster }>();

  /** rosterOf decodes a kind-4 record (or returns it cached); null for a body that is not a roster. */
  rosterOf(record: Entry): Roster | null {
    const cached = this.bySeq.get(record.seq);
    if (cached && cached.term === record.term) return cached.roster;
    const roster = decodeRoster(record.data);
    if (roster) {
      if (this.bySeq.size > 64) this.bySeq.clear();
      this.bySeq.set(record.seq, { term: record.term, roster });
    }
    return roster;
  }
}

/** ConfChangeRefusal: why a membership change is refused now, and the detail for people. */
export interface ConfChangeRefusal {
  code: ConfChangeRefusalCode;
  detail: string;
}

/** ConfChangeContext is what the gate looks at on the leader. */
export interface ConfChangeContext {
  roster: Roster;
  selfId: number;
  commitSeq: number;
  /** barrierSeq: the seq of the leader's term barrier (its first entry of the term). */
  barrierSeq: number;
  /** pendingConfSeq: an uncommitted kind-4 record's seq, 0 = none. */
  pendingConfSeq: number;
  transferring: boolean;
  /** selfCapabilities: this build's capability bits. */
  selfCapabilities: number;
  capabilitiesOf: (id: number) => number;
  /** capabilitiesKnownOf: the member has reported its bits to this leader at all (0 included). */
  capabilitiesKnownOf: (id: number) => boolean;
  clusterMemberCountMax: number;
  /** promotingId: a learner about to become a voter (0 = none): the gate covers it too. */
  promotingId: number;
  /** removingId: a voter this change removes (0 = none): the gate leaves it out while unheard (confChangeRefusal). */
  removingId: number;
}

/**
 * confChangeRefusal: kind-4 gating, one change at a time, and a committed entry of this term first.
 * The capability gate is on voters (spec), plus a learner being promoted (it is about to be
 * one): a learner that never reports bit 0 blocks nothing, so it can always be removed.
 * The voter a change removes is left out while this leader has never heard its bits, the mirror of the
 * learner promoted: the gate is there so that every voter can fold the record and go on counting toward
 * quorums, and the removed voter leaves the voter set the moment the record is appended, so if it cannot
 * fold it (the spec's permanent halt) no quorum loses it. Without this, a voter gone for good could never
 * be removed once leadership had moved to a leader that never heard it (found beside sim seed 54484;
 * scenario remove-unheard-voter-after-transfer). A voter known to lack bit 0 (it reported 0: an older
 * binary, alive) still gates its own removal, as the spec says: upgrade it, or stop it and remove it
 * after a leader change.
 */
export function confChangeRefusal(c: ConfChangeContext): ConfChangeRefusal | null {
  const refuse = (code: ConfChangeRefusalCode, detail: string): ConfChangeRefusal => ({ code, detail });
  const { promotingId, removingId } = c;
  if (c.commitSeq < c.barrierSeq)
    return refuse('term-not-committed', 'the leader has not committed an entry of its term yet; retry');
  if (c.pendingConfSeq !== 0)
    return refuse('change-in-flight', 'a membership change is in flight; retry when it commits');
  if (c.transferring) return refuse('transfer-in-progress', 'a leadership transfer is in progress');
  if ((c.selfCapabilities & CAPABILITY_KIND4) === 0)
    return refuse('leader-lacks-kind4', 'this leader cannot write kind-4 records');
  for (const m of c.roster.members) {
    if (m.id === c.selfId || m.role === MemberRole.Removed) continue;
    if (m.id === removingId && !c.capabilitiesKnownOf(m.id)) continue;
    if (m.role === MemberRole.Learner && m.id !== promotingId) continue;
    const caps = c.capabilitiesOf(m.id);
    if ((caps & CAPABILITY_KIND4) === 0)
      return refuse(
        'member-lacks-kind4',
        `member ${m.id} (${m.name}) has not reported capability bit 0; conf-changes refused`,
      );
  }
  if (c.roster.members.filter((m) => m.role !== MemberRole.Removed).length >= c.clusterMemberCountMax) {
    return refuse('member-limit', `cluster is at its member limit (${c.clusterMemberCountMax})`);
  }
  return null;
}

/** PendingChange waits for the kind-4 record at `seq` to commit: a join (answered then) or an admin op. */
export interface PendingChange {
  seq: number;
  kind: 'join' | 'admin';
  /** id: the admin op's id, or the joiner's member id. */
  id: number;
  name: string;
}

/** SettledChange is a pending change whose record committed, with the JoinCluster calls to answer. */
export interface SettledChange extends PendingChange {
  callIds: number[];
}

/** PendingChanges are a leader's membership changes waiting for their record to commit. */
export class PendingChanges {
  private waits: PendingChange[] = [];
  /** joinCalls: the JoinCluster calls to answer when the record at a seq commits. */
  private readonly joinCalls = new Map<number, number[]>();

  addAdmin(seq: number, adminId: number, name: string): void {
    this.waits.push({ seq, kind: 'admin', id: adminId, name });
  }

  /** addJoin waits for the record at `seq` that names joiner `name` (member id `id`) to answer `callId`. */
  addJoin(seq: number, id: number, name: string, callId: number): void {
    this.waits.push({ seq, kind: 'join', id, name });
    this.joinCalls.set(seq, [...(this.joinCalls.get(seq) ?? []), callId]);
  }

  /** joinAlsoAnswers: when a join by `name` already waits, `callId` is answered with it (true). */
  joinAlsoAnswers(name: string, callId: number): boolean {
    const pending = this.waits.find((w) => w.kind === 'join' && w.name === name);
    if (!pending) return false;
    this.joinCalls.get(pending.seq)!.push(callId);
    return true;
  }

  /** settle takes out, in order, the changes whose record is at or below `commitSeq`. */
  settle(commitSeq: number): SettledChange[] {
    const settled: SettledChange[] = [];
    const still: PendingChange[] = [];
    for (const wait of this.waits) {
      if (wait.seq > commitSeq) {
        still.push(wait);
        continue;
      }
      if (wait.kind === 'admin') settled.push({ ...wait, callIds: [] });
      else {
        settled.push({ ...wait, callIds: this.joinCalls.get(wait.seq) ?? [] });
        this.joinCalls.delete(wait.seq);
      }
    }
    this.waits = still;
    return settled;
  }

  /** abandon empties the set (leadership lost): the admin ids and join calls still waiting, in order. */
  abandon(): { adminIds: number[]; joinCallIds: number[] } {
    const adminIds = this.waits.filter((w) => w.kind === 'admin').map((w) => w.id);
    const joinCallIds = [...this.joinCalls.values()].flat();
    this.waits = [];
    this.joinCalls.clear();
    return { adminIds, joinCallIds };
  }
}

/** JOIN_REFUSAL_REMOVED starts the refusal_reason given to a name that was removed: the joiner stops. */
export const JOIN_REFUSAL_REMOVED = 'removed: ';

/**
 * JoinDialer: a joiner's attempts to be admitted — whom to dial next (a leader a refusal named at
 * once, else the seeds in turn, paced by joinRetryTicks) and the one JoinCluster call in flight.
 */
export class JoinDialer {
  /** inflight: the request id of our JoinCluster call, null = none. */
  private inflight: number | null = null;
  private elapsedTicks = Number.MAX_SAFE_INTEGER;
  private targetIndex = 0;
  private leaderHint = '';
  /** seeds: the configured seeds, then members learned from refusals (at most seedCountMax). */
  private readonly seeds: string[];

  constructor(
    configuredSeeds: readonly string[],
    private readonly seedCountMax: number,
  ) {
    this.seeds = [...configuredSeeds];
  }

  /** due counts a tick and returns the address to dial now, or null to wait. */
  due(retryTicks: number): string | null {
    this.elapsedTicks++;
    // Re-target a named leader at once; otherwise pace attempts (and retries after a refusal).
    if ((this.inflight !== null || this.leaderHint === '') && this.elapsedTicks < retryTicks) return null;
    if (this.seeds.length === 0 && this.leaderHint === '') return null;
    this.elapsedTicks = 0;
    const to = this.leaderHint !== '' ? this.leaderHint : this.seeds[this.targetIndex++ % this.seeds.length]!;
    this.leaderHint = '';
    return to;
  }

  /** started: our JoinCluster call `requestId` is in flight. */
  started(requestId: number): void {
    this.inflight = requestId;
  }

  /** settled: true when `requestId` was our call in flight (now settled). */
  settled(requestId: number): boolean {
    if (this.inflight !== requestId) return false;
    this.inflight = null;
    return true;
  }

  /**
   * heardRefusal reads a refusal — the re-targeting rule, whole: a name that was removed stops dialling
   * ('removed'); otherwise the leader it names is dialled next, at once (due), and the members it lists
   * join the seeds tried in turn ('retargeted').
   */
  heardRefusal(refusal: {
    refusalReason: string;
    leaderGrpcAddr: string;
    members: readonly { grpcAddr: string }[];
  }): 'removed' | 'retargeted' {
    if (refusal.refusalReason.startsWith(JOIN_REFUSAL_REMOVED)) return 'removed';
    this.refused(refusal.leaderGrpcAddr, refusal.members);
    return 'retargeted';
  }

  /** refused takes what a refusal teaches: the leader it names, and members to try besides the seeds. */
  refused(leaderGrpcAddr: string, members: readonly { grpcAddr: string }[]): void {
    this.leaderHint = leaderGrpcAddr;
    for (const m of members) {
      if (this.seeds.length >= this.seedCountMax) break;
      if (m.grpcAddr !== '' && !this.seeds.includes(m.grpcAddr)) this.seeds.push(m.grpcAddr);
    }
  }
}
