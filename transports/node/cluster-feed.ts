// ClusterFeed is what a node's /cluster page and stream read (api/cluster/): the members with their figures, and
// the node's ring of recent events (cluster-events.ts), in one ordered feed.
//
// Where the figures come from. This node's own come from its engine, and so do the leader (the engine's leaderId,
// which changes the moment the engine learns of an election: that is what makes the page show a new leader
// within a second), each member's version when its /status does not answer (the versions the engine saw in
// heartbeats) and, on the leader, each follower's matched position. The other members' figures (role, term,
// commit and applied positions, readiness, version) are read from their own GET /status, over their HTTP ports
// with the CA the status-poll readiness path already trusts, every clusterPollIntervalMs while a stream is open
// and never otherwise. Not through Admin.Status as `svc status` does: that service takes admin certificates only
// (the peer gate), and a node holds a peer certificate; /status carries the same fields for these purposes.
//
// The feed numbers its entries from 1 in this process (epoch: the process's start, so that an id from before
// a restart is not taken for one of this run): every event gets a number, and so does each new view of the
// members, of which only the newest is kept. Reading after a number gives the events since, then the newest
// view if it is newer: a stream that resumes gets what it missed and the present, never stale members.
import type { EngineLeadership } from '../../engine/types.js';
import type { NodeStatusDocument } from './node-status.js';
import {
  EventRing,
  leadershipEvents,
  type ClusterEvent,
  type ClusterEventMember,
  type NewClusterEvent,
} from './cluster-events.js';
import { DEFAULT_CLUSTER_FEED_LIMITS, type ClusterFeedLimits } from './cluster-limits.js';
import type { StatusAnswer } from './status-poll.js';

export interface ClusterFeedHost {
  /** status is this node's /status document, or null while the node is not running. */
  status(): NodeStatusDocument | null;
  /** matchSeqs: on a leader, each follower's matched position (empty elsewhere). */
  matchSeqs(): Record<number, number>;
  /** fetchStatus reads a member's /status at its advertised HTTP base (status-poll.ts fetchStatusDocument). */
  fetchStatus(httpAddr: string, timeoutMs: number, bytesMax: number): Promise<StatusAnswer>;
  now(): number;
}

/** ClusterMemberView is one member as the page shows it; a figure this node does not know is null. */
export interface ClusterMemberView {
  id: number;
  name: string;
  /** membership: voter or learner (the roster's). */
  membership: string;
  grpcAddr: string;
  httpAddr: string;
  self: boolean;
  leader: boolean;
  /** reachable: this node's own figures, or the member's /status answered at the last read. */
  reachable: boolean;
  error: string | null;
  /** figuresAtMs is when the figures were read (this node's clock). */
  figuresAtMs: number | null;
  role: string | null;
  term: number | null;
  leaderId: number | null;
  lastSeq: number | null;
  commitSeq: number | null;
  appliedSeq: number | null;
  durableSeq: number | null;
  snapshotSeq: number | null;
  ready: boolean | null;
  healthy: boolean | null;
  buildVersion: string | null;
  /** buildVersionFrom: 'status' (its /status) or 'heartbeat' (what this node's engine saw in heartbeats). */
  buildVersionFrom: 'status' | 'heartbeat' | null;
  /** applyLag: the highest commit position known here less this member's applied position. */
  applyLag: number | null;
  /** matchLag: on a leader, its last position less this member's matched one (the entries it still has to send). */
  matchLag: number | null;
}

export interface ClusterView {
  answeredBy: { id: number; name: string };
  atMs: number;
  term: number;
  leader: { id: number; name: string } | null;
  membershipVersion: number;
  /** commitSeq is the highest commit position known here: what applyLag is measured from. */
  commitSeq: number;
  members: ClusterMemberView[];
  pollIntervalMs: number;
  eventCountMax: number;
}

export type ClusterFeedEntry =
  | { seq: number; event: 'cluster.event'; data: ClusterEvent }
  | { seq: number; event: 'cluster.view'; data: ClusterView };

interface MemberFigures {
  atMs: number;
  document: Record<string, unknown> | null;
  error: string | null;
}

export class ClusterFeed {
  /** epoch names this process's numbering (its start, ms): ids of another epoch are read from the beginning. */
  readonly epoch: number;
  readonly limits: ClusterFeedLimits;
  private seq = 0;
  private readonly ring: EventRing;
  private latestView: { seq: number; view: ClusterView; key: string } | null = null;
  private readonly figures = new Map<number, MemberFigures>();
  private readonly listeners = new Set<() => void>();
  private leadership: EngineLeadership | null = null;
  private members: ClusterEventMember[] = [];
  private polling = false;
  private lastPollMs = 0;
  private pollTimer: NodeJS.Timeout | null = null;
  private wakePoller: (() => void) | null = null;
  private closed = false;

  constructor(
    private readonly host: ClusterFeedHost,
    limits: Partial<ClusterFeedLimits> = {},
  ) {
    this.limits = { ...DEFAULT_CLUSTER_FEED_LIMITS, ...limits };
    this.epoch = host.now();
    this.ring = new EventRing(this.limits.clusterEventCountMax);
  }

  /** started records the engine's first reading: the node's role and term as it starts. */
  started(leadership: EngineLeadership, selfName: string): void {
    this.leadership = leadership;
    const status = this.host.status();
    this.members = status ? status.members.map((m) => ({ id: m.id, name: m.name, role: m.role })) : [];
    this.record({
      kind: 'role',
      term: leadership.term,
      role: leadership.role,
      summary: `${selfName} started as ${leadership.role} in term ${leadership.term}`,
    });
  }

  /**
   * stepped compares the engine's reading after a step with the last one: called after every step, so it does
   * nothing more than compare four numbers unless one changed.
   */
  stepped(after: EngineLeadership, selfName: string, roster: () => ClusterEventMember[]): void {
    const before = this.leadership;
    if (
      before === null ||
      (before.role === after.role &&
        before.term === after.term &&
        before.leaderId === after.leaderId &&
        before.membershipVersion === after.membershipVersion)
    )
      return;
    this.leadership = after;
    let members: ClusterEventMember[] | null = null;
    const current = (): ClusterEventMember[] => (members ??= roster());
    const events = leadershipEvents(
      before,
      after,
      (id) => current().find((m) => m.id === id)?.name ?? `member ${id}`,
      () => ({ now: current(), before: this.members }),
      selfName,
    );
    if (after.membershipVersion !== before.membershipVersion) this.members = current();
    for (const event of events) this.record(event);
  }

  /** readiness records a change of this node's readiness latch (the engine's readiness effect). */
  readiness(ready: boolean, reason: string, selfName: string): void {
    this.record({
      kind: 'readiness',
      term: this.leadership?.term ?? 0,
      ready,
      reason,
      summary: `${selfName} is ${ready ? 'ready' : 'not ready'} (${reason})`,
    });
  }

  private record(event: NewClusterEvent): void {
    this.ring.push({ ...event, seq: ++this.seq, atMs: this.host.now() });
    // The view goes with the event, so a reader sees a new leader in the same read as its election.
    this.publish(true);
  }

  /** entriesAfter lists the feed after afterSeq in order, at most countMax: events, and the newest view if newer. */
  entriesAfter(afterSeq: number, countMax: number): ClusterFeedEntry[] {
    if (this.latestView === null) this.publish(false);
    const entries: ClusterFeedEntry[] = this.ring
      .after(afterSeq)
      .map((event) => ({ seq: event.seq, event: 'cluster.event', data: event }));
    const latest = this.latestView;
    if (latest !== null && latest.seq > afterSeq)
      entries.push({ seq: latest.seq, event: 'cluster.view', data: latest.view });
    entries.sort((a, b) => a.seq - b.seq);
    return entries.slice(0, countMax);
  }

  /** listen calls wake whenever the feed grows, until the returned function is called; while any listens, members are read. */
  listen(wake: () => void): () => void {
    this.listeners.add(wake);
    void this.pollLoop();
    return () => {
      this.listeners.delete(wake);
    };
  }

  /** snapshot is the view now, with the other members' figures read if the last read is older than the interval. */
  async snapshot(): Promise<ClusterView> {
    if (this.host.now() - this.lastPollMs >= this.limits.clusterPollIntervalMs) await this.pollOnce();
    return this.buildView();
  }

  get eventCount(): number {
    return this.ring.size;
  }

  /** pollingMembers: the other members' /status are being read (only while a stream listens). */
  get pollingMembers(): boolean {
    return this.polling;
  }

  close(): void {
    this.closed = true;
    this.listeners.clear();
    this.wakePoller?.();
  }

  /** publish numbers a new view when it differs from the newest one (always, with force), and wakes the readers. */
  private publish(force: boolean): void {
    const view = this.buildView();
    const { atMs: _atMs, ...rest } = view;
    const key = JSON.stringify(rest);
    if (!force && this.latestView !== null && this.latestView.key === key) return;
    this.latestView = { seq: ++this.seq, view, key };
    for (const wake of [...this.listeners]) wake();
  }

  private async pollLoop(): Promise<void> {
    if (this.polling) return;
    this.polling = true;
    try {
      // Bounded by the listeners: it ends once the last stream closes (or the feed does).
      while (this.listeners.size > 0 && !this.closed) {
        await this.pollOnce();
        this.publish(false);
        await new Promise<void>((resolve) => {
          this.wakePoller = resolve;
          this.pollTimer = setTimeout(resolve, this.limits.clusterPollIntervalMs);
          this.pollTimer.unref?.();
        });
        this.wakePoller = null;
        if (this.pollTimer) clearTimeout(this.pollTimer);
      }
    } finally {
      this.polling = false;
    }
  }

  /** pollOnce reads every other member's /status at once, each within clusterPollTimeoutMs. */
  private async pollOnce(): Promise<void> {
    const own = this.host.status();
    if (own === null) return;
    this.lastPollMs = this.host.now();
    const others = own.members.filter((m) => m.id !== own.id && m.role !== 'removed');
    for (const id of this.figures.keys()) if (!others.some((m) => m.id === id)) this.figures.delete(id);
    await Promise.all(
      others.map(async (member) => {
        const answer =
          member.httpAddr === ''
            ? ({ ok: false, error: 'no HTTP address advertised' } as const)
            : await this.host.fetchStatus(
                member.httpAddr,
                this.limits.clusterPollTimeoutMs,
                this.limits.clusterStatusBytesMax,
              );
        this.figures.set(member.id, {
          atMs: this.host.now(),
          document: answer.ok ? answer.document : null,
          error: answer.ok ? null : answer.error,
        });
      }),
    );
  }

  private buildView(): ClusterView {
    const now = this.host.now();
    const own = this.host.status();
    if (own === null) {
      return {
        answeredBy: { id: 0, name: '' },
        atMs: now,
        term: 0,
        leader: null,
        membershipVersion: 0,
        commitSeq: 0,
        members: [],
        pollIntervalMs: this.limits.clusterPollIntervalMs,
        eventCountMax: this.limits.clusterEventCountMax,
      };
    }
    const match = own.role === 'leader' ? this.host.matchSeqs() : {};
    const leader = own.leaderId === 0 ? null : own.members.find((m) => m.id === own.leaderId);
    const members: ClusterMemberView[] = own.members
      .filter((m) => m.role !== 'removed')
      .map((m) => {
        const self = m.id === own.id;
        const figures = self
          ? { atMs: now, document: own as unknown as Record<string, unknown>, error: null }
          : this.figures.get(m.id);
        const doc = figures?.document ?? null;
        const polledVersion = doc ? text(doc.buildVersion) : null;
        const heardVersion = own.versionsSeen[String(m.id)] ?? null;
        const matched = match[m.id];
        return {
          id: m.id,
          name: m.name,
          membership: m.role,
          grpcAddr: m.grpcAddr,
          httpAddr: m.httpAddr,
          self,
          leader: m.id === own.leaderId,
          reachable: doc !== null,
          error: figures?.error ?? null,
          figuresAtMs: figures?.atMs ?? null,
          role: doc ? text(doc.role) : null,
          term: doc ? count(doc.term) : null,
          leaderId: doc ? count(doc.leaderId) : null,
          lastSeq: doc ? count(doc.lastSeq) : null,
          commitSeq: doc ? count(doc.commitSeq) : null,
          appliedSeq: doc ? count(doc.appliedSeq) : null,
          durableSeq: doc ? count(doc.durableLastSeq) : null,
          snapshotSeq: doc ? count(doc.snapshotSeq) : null,
          ready: doc ? flag(doc.ready) : null,
          healthy: doc ? flag(doc.healthy) : null,
          buildVersion: polledVersion ?? (self ? own.buildVersion : heardVersion),
          buildVersionFrom: polledVersion !== null ? 'status' : heardVersion !== null ? 'heartbeat' : null,
          applyLag: null,
          matchLag:
            own.role !== 'leader' ? null : self ? 0 : matched === undefined ? null : Math.max(0, own.lastSeq - matched),
        };
      });
    // Lag is measured from the highest commit position anyone here reported: a member's own commit may trail.
    const commitSeq = Math.max(own.commitSeq, ...members.map((m) => m.commitSeq ?? 0));
    for (const m of members) m.applyLag = m.appliedSeq === null ? null : Math.max(0, commitSeq - m.appliedSeq);
    return {
      answeredBy: { id: own.id, name: own.name },
      atMs: now,
      term: own.term,
      leader: leader ? { id: leader.id, name: leader.name } : null,
      membershipVersion: own.membershipVersion,
      commitSeq,
      members,
      pollIntervalMs: this.limits.clusterPollIntervalMs,
      eventCountMax: this.limits.clusterEventCountMax,
    };
  }
}

// A member's /status is input: each figure is taken only if it has the type it should, else shown as unknown.
const textLengthMax = 256;
function text(value: unknown): string | null {
  return typeof value === 'string' ? value.slice(0, textLengthMax) : null;
}
function count(value: unknown): number | null {
  return Number.isSafeInteger(value) && (value as number) >= 0 ? (value as number) : null;
}
function flag(value: unknown): boolean | null {
  return typeof value === 'boolean' ? value : null;
}
