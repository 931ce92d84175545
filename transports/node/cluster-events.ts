// The /cluster page's recent events: elections (a new term, a leader learnt or lost), this node's role and
// readiness changes, and membership changes, as this node saw them, in a bounded in-memory ring
// (clusterEventCountMax). leadershipEvents turns two consecutive readings of the engine (EngineLeadership) into
// events; it is pure so that its rules are tested without a node.
import type { EngineLeadership, Roster } from '../../engine/types.js';
import { MemberRole } from '../../engine/types.js';

export type ClusterEventKind = 'election' | 'role' | 'readiness' | 'membership';

export interface ClusterEventMember {
  id: number;
  name: string;
  role: string;
}

/** ClusterEvent is one entry of the ring; `seq` orders it in the node's /cluster feed (cluster-feed.ts). */
export interface ClusterEvent {
  seq: number;
  /** atMs is when this node saw it (its wall clock, ms since the epoch). */
  atMs: number;
  kind: ClusterEventKind;
  /** term is this node's term when it saw the event. */
  term: number;
  /** summary is the event for people, one line. */
  summary: string;
  /** election: the leader now known (0 and '' while none is). */
  leaderId?: number;
  leaderName?: string;
  /** role: this node's new role. */
  role?: string;
  /** readiness: the latch's new value and the engine's reason. */
  ready?: boolean;
  reason?: string;
  /** membership: the new configuration. */
  membershipVersion?: number;
  members?: ClusterEventMember[];
}

/** NewClusterEvent is an event before the feed numbers and stamps it. */
export type NewClusterEvent = Omit<ClusterEvent, 'seq' | 'atMs'>;

const ROLE_NAMES: Record<number, string> = {
  [MemberRole.Voter]: 'voter',
  [MemberRole.Learner]: 'learner',
  [MemberRole.Removed]: 'removed',
};

export function rosterMembers(roster: Roster): ClusterEventMember[] {
  return roster.members.map((m) => ({ id: m.id, name: m.name, role: ROLE_NAMES[m.role] ?? String(m.role) }));
}

/**
 * leadershipEvents: what changed between two readings. A new term or another leader is an election event
 * ("b leads term 4", or "term 5: no leader known" while a vote runs); a new role of this node a role event; a
 * new membership version a membership event naming what changed (before: the previous roster's members).
 */
export function leadershipEvents(
  before: EngineLeadership,
  after: EngineLeadership,
  nameOf: (id: number) => string,
  roster: () => { now: ClusterEventMember[]; before: ClusterEventMember[] },
  selfName: string,
): NewClusterEvent[] {
  const events: NewClusterEvent[] = [];
  if (after.term !== before.term || after.leaderId !== before.leaderId) {
    const leaderName = after.leaderId === 0 ? '' : nameOf(after.leaderId);
    events.push({
      kind: 'election',
      term: after.term,
      leaderId: after.leaderId,
      leaderName,
      summary: after.leaderId === 0 ? `term ${after.term}: no leader known` : `${leaderName} leads term ${after.term}`,
    });
  }
  if (after.role !== before.role) {
    events.push({
      kind: 'role',
      term: after.term,
      role: after.role,
      summary: `${selfName} is ${after.role} (was ${before.role})`,
    });
  }
  if (after.membershipVersion !== before.membershipVersion) {
    const { now, before: old } = roster();
    events.push({
      kind: 'membership',
      term: after.term,
      membershipVersion: after.membershipVersion,
      members: now,
      summary: `membership ${after.membershipVersion}: ${membershipChange(old, now)}`,
    });
  }
  return events;
}

/** membershipChange names what differs between two member lists ("d joined as learner, c removed"). */
export function membershipChange(before: ClusterEventMember[], after: ClusterEventMember[]): string {
  const parts: string[] = [];
  const old = new Map(before.map((m) => [m.id, m]));
  for (const m of after) {
    const was = old.get(m.id);
    if (!was) parts.push(`${m.name} joined as ${m.role}`);
    else if (was.role !== m.role) parts.push(m.role === 'removed' ? `${m.name} removed` : `${m.name} is ${m.role}`);
    old.delete(m.id);
  }
  for (const m of old.values()) parts.push(`${m.name} left`);
  return parts.length === 0 ? 'no member changed' : parts.join(', ');
}

/** EventRing keeps the newest `countMax` events in order. */
export class EventRing {
  private readonly events: ClusterEvent[] = [];

  constructor(private readonly countMax: number) {
    if (!Number.isSafeInteger(countMax) || countMax < 1)
      throw new RangeError('the event ring holds at least one event');
  }

  push(event: ClusterEvent): void {
    this.events.push(event);
    if (this.events.length > this.countMax) this.events.splice(0, this.events.length - this.countMax);
  }

  /** after lists the events with seq > afterSeq, oldest first. */
  after(afterSeq: number): ClusterEvent[] {
    return this.events.filter((event) => event.seq > afterSeq);
  }

  get size(): number {
    return this.events.length;
  }
}
