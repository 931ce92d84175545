// Faults modelled on TigerBeetle's VOPR, for bugs the plain schedule (faults.ts) almost never shows:
//  - boundary-crash: a crash placed at an effect boundary (after a hard-state save, after a reply
//    leaves, between an append and its sync; sim/crash-points.ts), often of whichever node gets there
//    first, often waiting for a vote, often with the served request replayed after the restart, and
//    sometimes with the leader cut off for a moment so that there is an election to vote in;
//  - conf-burst: a membership change asked of the leader, the leader cut off right after (so the
//    record is appended but not committed: a deposed leader truncates it later), and more changes
//    asked of whichever nodes are up while the others elect a new leader;
//  - deposed-tail: the Raft paper's figure 8 set up. The leader A is cut off with the tail its clients
//    still append (term T1, uncommitted); the first node B to campaign for the next term is cut off
//    from sending as it asks for votes, so if it wins, its first entries (term T2 > T1) stay on it
//    alone; A comes back while B is still mute, and when A wins the next election its older-term
//    entries cut B's higher-term tail (coverage figure8-tail), which only Raft's rule of counting
//    replicas for the leader's own term alone keeps from looking committed.
// Drawn up front from their own PRNG stream, each with its own salt, like faults.ts; run.ts appends
// them to the seed's fault list, so --only-faults and shrinking cover them too.
import { MemberRole, type AdminOp, type Roster } from '../engine/types.js';
import { voterIds } from '../engine/roster.js';
import { CRASH_BOUNDARIES, type CrashBoundary, type CrashTrap } from './crash-points.js';
import type { SimOptions } from './options.js';
import { Prng, pickByFraction } from './prng.js';

export type VoprFault =
  | {
      kind: 'boundary-crash';
      atMs: number;
      boundary: CrashBoundary;
      anyNode: boolean;
      votesOnly: boolean;
      provokeElection: boolean;
      replay: boolean;
      windowMs: number;
      downMs: number;
      salt: number;
    }
  | { kind: 'conf-burst'; atMs: number; isolateMs: number; burstMs: number; salt: number }
  | { kind: 'deposed-tail'; atMs: number; waitMs: number; backMs: number; muteMs: number; salt: number };

/** FAULT_START_MS: like faults.ts, nothing before a first leader could be elected. */
const FAULT_START_MS = 2_000;

export function voprSchedule(options: SimOptions): VoprFault[] {
  const prng = new Prng(`sim:${options.seed}`).fork('faults-vopr');
  const minutes = options.safetyPhaseMs / 60_000;
  const count = (perMinute: number): number => Math.round(perMinute * minutes * prng.uniform(0.5, 1.5));
  const at = (): number =>
    Math.round(prng.uniform(FAULT_START_MS, Math.max(FAULT_START_MS + 1, options.safetyPhaseMs)));
  const events: VoprFault[] = [];
  for (let i = count(options.faults.boundaryCrashPerMinute ?? 0); i > 0; i--) {
    const boundary = prng.pick(CRASH_BOUNDARIES);
    const votesOnly = boundary !== 'after-append' && prng.chance(0.5);
    events.push({
      kind: 'boundary-crash',
      atMs: at(),
      boundary,
      anyNode: prng.chance(0.5),
      votesOnly,
      provokeElection: votesOnly && prng.chance(0.7),
      replay: prng.chance(0.7),
      windowMs: Math.round(prng.uniform(2_000, 15_000)),
      downMs: Math.round(prng.uniform(20, 3_000)),
      salt: prng.uint32(),
    });
  }
  for (let i = count(options.faults.confBurstPerMinute ?? 0); i > 0; i--) {
    events.push({
      kind: 'conf-burst',
      atMs: at(),
      isolateMs: Math.round(prng.uniform(1_000, 3_500)),
      burstMs: Math.round(prng.uniform(2_000, 6_000)),
      salt: prng.uint32(),
    });
  }
  // Drawn after the families above, so a seed without deposed tails draws as before.
  for (let i = count(options.faults.deposedTailPerMinute ?? 0); i > 0; i--) {
    events.push({
      kind: 'deposed-tail',
      atMs: at(),
      waitMs: Math.round(prng.uniform(DEPOSED_TAIL_WAIT_MS.min, DEPOSED_TAIL_WAIT_MS.max)),
      backMs: Math.round(prng.uniform(DEPOSED_TAIL_BACK_MS.min, DEPOSED_TAIL_BACK_MS.max)),
      muteMs: Math.round(prng.uniform(DEPOSED_TAIL_MUTE_MS.min, DEPOSED_TAIL_MUTE_MS.max)),
      salt: prng.uint32(),
    });
  }
  return events
    .map((event, order) => ({ event, order }))
    .sort((a, b) => a.event.atMs - b.event.atMs || a.order - b.order)
    .map((x) => x.event);
}

export function describeVoprFault(event: VoprFault): string {
  switch (event.kind) {
    case 'boundary-crash':
      return (
        `boundary-crash ${event.boundary}${event.votesOnly ? ' (a vote)' : ''} of ${event.anyNode ? 'any node' : 'one node'} at ${event.atMs}ms ` +
        `within ${event.windowMs}ms, down ${event.downMs}ms${event.replay ? ', request replayed' : ''}${event.provokeElection ? ', leader cut off' : ''}`
      );
    case 'conf-burst':
      return `conf-burst at ${event.atMs}ms: leader cut off ${event.isolateMs}ms, changes for ${event.burstMs}ms`;
    case 'deposed-tail':
      return (
        `deposed-tail at ${event.atMs}ms: leader cut off, the next candidate (within ${event.waitMs}ms) mute ` +
        `${event.muteMs}ms, the first leader back ${event.backMs}ms after it`
      );
  }
}

/** VoprWorld is what firing these faults needs from the world. */
export interface VoprWorld {
  readonly nowUs: number;
  readonly nodes: readonly {
    index: number;
    state: string;
    status: { id: number; role: string; term: number; removed: boolean; roster: Roster } | null;
  }[];
  leader(): { index: number; id: number; roster: Roster } | null;
  armCrash(trap: CrashTrap): void;
  isolate(index: number): void;
  healNode(index: number): void;
  /** blockLink cuts the one directed link `from` → `to` (messages sent on it from now on are lost). */
  blockLink(from: number, to: number): void;
  /** watch runs `check` after every event until it returns true. */
  watch(check: () => boolean): void;
  /** admin sends an operator command to the leader, or to `target` (a node slot) when given. */
  admin(op: AdminOp, target?: number): number;
  /** noteConfChangeInElection counts a change asked for while some node campaigns (coverage). */
  noteConfChangeInElection(): void;
  schedule(atMs: number, label: string, run: () => void): void;
}

/** CONF_BURST_GAP_MS: the range of gaps between the changes of one burst. */
const CONF_BURST_GAP_MS = { min: 100, max: 400 } as const;
/** ELECTION_PROVOKE_MS: how long a boundary crash waiting for a vote cuts the leader off. */
const ELECTION_PROVOKE_MS = { min: 1_500, max: 3_000 } as const;
/**
 * DEPOSED_TAIL_WAIT_MS: how long a deposed-tail waits for another node to campaign (a cut-off leader is replaced
 * within a few election timeouts); with none by then, the leader comes back and nothing else is done.
 */
const DEPOSED_TAIL_WAIT_MS = { min: 4_000, max: 6_000 } as const;
/** DEPOSED_TAIL_BACK_MS: how soon after the candidate goes mute the first leader comes back. */
const DEPOSED_TAIL_BACK_MS = { min: 20, max: 400 } as const;
/** DEPOSED_TAIL_MUTE_MS: how long the candidate stays mute (long enough for an election without it). */
const DEPOSED_TAIL_MUTE_MS = { min: 3_000, max: 6_000 } as const;

export class VoprInjector {
  active = true;

  constructor(private readonly world: VoprWorld) {}

  fire(event: VoprFault): void {
    if (!this.active) return;
    const prng = new Prng(`fault:${event.salt}`);
    const w = this.world;
    const nowMs = w.nowUs / 1_000;
    const live = w.nodes.filter((n) => n.state === 'up' || n.state === 'paused').map((n) => n.index);
    switch (event.kind) {
      case 'boundary-crash': {
        const leader = w.leader();
        const victim = event.anyNode
          ? -1
          : prng.chance(0.4) && leader
            ? leader.index
            : (pickByFraction(live, prng.next()) ?? -1);
        w.armCrash({
          boundary: event.boundary,
          nodeIndex: victim,
          untilUs: w.nowUs + event.windowMs * 1_000,
          votesOnly: event.votesOnly,
          replayDelayMs: event.replay ? prng.uniform(1, 300) : -1,
          downMs: event.downMs,
        });
        if (event.provokeElection && leader)
          this.cutOff(leader.index, prng.uniform(ELECTION_PROVOKE_MS.min, ELECTION_PROVOKE_MS.max));
        return;
      }
      case 'conf-burst': {
        const leader = w.leader();
        if (!leader) return;
        this.askChange(prng, leader.index);
        // The record is appended at once; cut the leader off before it can commit it. Not once the liveness
        // phase has begun (inactive): its reconnect would then never come and the node stay cut off (seed 200196).
        w.schedule(nowMs + prng.uniform(0, 30), 'conf-burst: cut the leader off', () => {
          if (this.active) this.cutOff(leader.index, event.isolateMs);
        });
        const endMs = nowMs + event.burstMs;
        const next = (atMs: number): void => {
          if (atMs > endMs) return;
          w.schedule(atMs, 'conf-burst: another change', () => {
            if (!this.active) return;
            const up = w.nodes.filter((n) => n.state === 'up').map((n) => n.index);
            // Half to whoever leads now (the newest term), half to any node that is up (maybe the deposed leader).
            this.askChange(prng, prng.chance(0.5) ? undefined : pickByFraction(up, prng.next()));
            next(atMs + prng.uniform(CONF_BURST_GAP_MS.min, CONF_BURST_GAP_MS.max));
          });
        };
        next(nowMs + prng.uniform(CONF_BURST_GAP_MS.min, CONF_BURST_GAP_MS.max));
        return;
      }
      case 'deposed-tail':
        return this.deposeTail(event);
    }
  }

  /** deposeTail: figure 8 set up (see the file's head). Any step that does not happen ends it, with every cut healed. */
  private deposeTail(event: Extract<VoprFault, { kind: 'deposed-tail' }>): void {
    const w = this.world;
    const leader = w.leader();
    const first = leader ? w.nodes[leader.index] : undefined;
    if (!leader || !first?.status || voterIds(leader.roster).length < 3) return;
    const firstTerm = first.status.term;
    w.isolate(first.index);
    const giveUpUs = w.nowUs + event.waitMs * 1_000;
    w.watch(() => {
      if (!this.active) return true;
      if (w.nowUs >= giveUpUs) {
        w.healNode(first.index);
        return true;
      }
      // A real campaign for a newer term: its vote requests left in the step that made it a candidate.
      const second = w.nodes.find(
        (n) => n !== first && n.state === 'up' && n.status?.role === 'candidate' && n.status.term > firstTerm,
      );
      if (!second) return false;
      for (const other of w.nodes) w.blockLink(second.index, other.index);
      const nowMs = w.nowUs / 1_000;
      w.schedule(nowMs + event.backMs, 'deposed-tail: the first leader back', () => {
        if (!this.active) return;
        w.healNode(first.index);
        // healNode lifted the mute candidate's link to it too: it stays mute.
        w.blockLink(second.index, first.index);
      });
      w.schedule(nowMs + event.muteMs, 'deposed-tail: the candidate heard again', () => {
        if (this.active) w.healNode(second.index);
      });
      return true;
    });
  }

  private cutOff(index: number, forMs: number): void {
    const w = this.world;
    w.isolate(index);
    w.schedule(w.nowUs / 1_000 + forMs, 'fault ends: reconnect', () => {
      if (this.active) w.healNode(index);
    });
  }

  /** askChange asks for one membership change (promote a learner, remove a member, or a transfer). */
  private askChange(prng: Prng, target: number | undefined): void {
    const w = this.world;
    const view = target === undefined ? w.leader()?.roster : w.nodes[target]?.status?.roster;
    if (!view) return;
    const learners = view.members.filter((m) => m.role === MemberRole.Learner).map((m) => m.id);
    const voters = voterIds(view);
    if (w.nodes.some((n) => n.status && (n.status.role === 'candidate' || n.status.role === 'precandidate')))
      w.noteConfChangeInElection();
    const draw = prng.next();
    const pick = prng.next();
    let op: AdminOp | null = null;
    if (learners.length > 0 && draw < 0.5) op = { op: 'promote', memberId: pickByFraction(learners, pick)! };
    else if (draw < 0.65 && (learners.length > 0 || voters.length >= 4)) {
      const removable = view.members
        .filter((m) => m.role === MemberRole.Learner || (m.role === MemberRole.Voter && voters.length >= 4))
        .map((m) => m.id);
      op = { op: 'remove', memberId: pickByFraction(removable, pick)! };
    } else if (voters.length >= 2) op = { op: 'transfer', memberId: pickByFraction(voters, pick)! };
    if (op) w.admin(op, target);
  }
}
