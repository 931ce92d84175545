// The fault schedule: a seed's discrete faults (crashes, pauses, partitions,
// clogs, joins, removals, promotions, transfers, idle periods), drawn up front
// as a list so a failing run can be shrunk by dropping entries. Each fault
// carries its own salt for any choice it makes when it fires, so dropping one
// fault does not change what the others do.
import { MemberRole, type AdminOp, type EngineStatus, type Roster } from '../engine/types.js';
import { forgeForeignMessage, type ForeignMessage } from './foreign.js';
import { voterIds } from '../engine/roster.js';
import type { SimOptions } from './options.js';
import { Prng, pickByFraction } from './prng.js';

export type PartitionShape = 'halves' | 'symmetric' | 'asymmetric' | 'isolate';

export type FaultEvent =
  | { kind: 'crash'; atMs: number; durationMs: number; salt: number }
  | { kind: 'pause'; atMs: number; durationMs: number; salt: number }
  | { kind: 'partition'; atMs: number; durationMs: number; shape: PartitionShape; salt: number }
  | { kind: 'clog'; atMs: number; durationMs: number; salt: number }
  | { kind: 'join'; atMs: number; slot: number; salt: number }
  | { kind: 'remove'; atMs: number; salt: number }
  | { kind: 'promote'; atMs: number; salt: number }
  | { kind: 'transfer'; atMs: number; salt: number }
  | { kind: 'idle'; atMs: number; durationMs: number; salt: number }
  /** foreign: a volley of forged calls (sim/foreign.ts) at live nodes over durationMs. */
  | { kind: 'foreign'; atMs: number; durationMs: number; salt: number }
  /** filter: a learner gets a community-overlay filter (a key prefix), or a filtered one loses it (`--filtered`). */
  | { kind: 'filter'; atMs: number; salt: number };

/** FAULT_START_MS: no fault fires before the cluster had a chance to elect a first leader. */
const FAULT_START_MS = 2_000;

/** faultSchedule is the seed's full fault list, sorted by time; indices into it name faults. */
export function faultSchedule(options: SimOptions): FaultEvent[] {
  const prng = new Prng(`sim:${options.seed}`).fork('faults');
  const minutes = options.safetyPhaseMs / 60_000;
  const events: FaultEvent[] = [];
  const at = (): number =>
    Math.round(prng.uniform(FAULT_START_MS, Math.max(FAULT_START_MS + 1, options.safetyPhaseMs)));
  const count = (perMinute: number): number => Math.round(perMinute * minutes * prng.uniform(0.5, 1.5));
  const salt = (): number => prng.uint32();
  const rates = options.faults;
  for (let i = count(rates.crashPerMinute); i > 0; i--)
    events.push({ kind: 'crash', atMs: at(), durationMs: Math.round(prng.uniform(200, 20_000)), salt: salt() });
  for (let i = count(rates.pausePerMinute); i > 0; i--)
    events.push({ kind: 'pause', atMs: at(), durationMs: Math.round(prng.uniform(100, 10_000)), salt: salt() });
  for (let i = count(rates.partitionPerMinute); i > 0; i--) {
    const shape = prng.pick<PartitionShape>(['halves', 'symmetric', 'asymmetric', 'isolate']);
    events.push({
      kind: 'partition',
      atMs: at(),
      durationMs: Math.round(prng.uniform(500, 30_000)),
      shape,
      salt: salt(),
    });
  }
  for (let i = count(rates.clogPerMinute); i > 0; i--)
    events.push({ kind: 'clog', atMs: at(), durationMs: Math.round(prng.uniform(200, 10_000)), salt: salt() });
  for (let i = count(rates.removePerMinute); i > 0; i--) events.push({ kind: 'remove', atMs: at(), salt: salt() });
  for (let i = count(rates.promotePerMinute); i > 0; i--) events.push({ kind: 'promote', atMs: at(), salt: salt() });
  for (let i = count(rates.transferPerMinute); i > 0; i--) events.push({ kind: 'transfer', atMs: at(), salt: salt() });
  for (let i = count(rates.idlePerMinute); i > 0; i--)
    events.push({ kind: 'idle', atMs: at(), durationMs: Math.round(prng.uniform(3_000, 30_000)), salt: salt() });
  for (let j = 0; j < options.joinerCount; j++) {
    const atMs = Math.round(prng.uniform(FAULT_START_MS, Math.max(FAULT_START_MS + 1, options.safetyPhaseMs * 0.7)));
    events.push({ kind: 'join', atMs, slot: options.founderCount + j, salt: salt() });
  }
  // Filter changes draw from their own stream too: a seed without --filtered schedules none.
  if ((options.filteredCount ?? 0) > 0) {
    const fp = new Prng(`sim:${options.seed}`).fork('filter-faults');
    for (let i = options.filteredCount!; i > 0; i--) {
      const atMs = Math.round(fp.uniform(FAULT_START_MS, Math.max(FAULT_START_MS + 1, options.safetyPhaseMs)));
      events.push({ kind: 'filter', atMs, salt: fp.uint32() });
    }
  }
  // Foreign traffic draws from its own stream, so turning it on leaves every other fault as it was.
  if (rates.foreignPerMinute > 0) {
    const fp = new Prng(`sim:${options.seed}`).fork('foreign-faults');
    for (let i = Math.max(1, Math.round(rates.foreignPerMinute * minutes * fp.uniform(0.5, 1.5))); i > 0; i--) {
      events.push({
        kind: 'foreign',
        atMs: Math.round(fp.uniform(FAULT_START_MS, Math.max(FAULT_START_MS + 1, options.safetyPhaseMs))),
        durationMs: Math.round(fp.uniform(200, 5_000)),
        salt: fp.uint32(),
      });
    }
  }
  return events
    .map((event, order) => ({ event, order }))
    .sort((a, b) => a.event.atMs - b.event.atMs || a.order - b.order)
    .map((x) => x.event);
}

export function describeFault(event: FaultEvent): string {
  switch (event.kind) {
    case 'crash':
    case 'pause':
    case 'clog':
    case 'idle':
      return `${event.kind} at ${event.atMs}ms for ${event.durationMs}ms`;
    case 'foreign':
      return `foreign traffic at ${event.atMs}ms for ${event.durationMs}ms`;
    case 'partition':
      return `partition (${event.shape}) at ${event.atMs}ms for ${event.durationMs}ms`;
    case 'join':
      return `join n${event.slot + 1} at ${event.atMs}ms`;
    case 'remove':
    case 'promote':
    case 'transfer':
    case 'filter':
      return `${event.kind} at ${event.atMs}ms`;
  }
}

/** FaultWorld is what firing a fault needs from the world. */
export interface FaultWorld {
  readonly nowUs: number;
  readonly nodes: readonly { index: number; state: string; status: EngineStatus | null }[];
  /** clusterId is the cluster's wire id (forged calls may carry it, or another). */
  readonly clusterId: string;
  leaderRoster(): { leaderId: number; roster: Roster } | null;
  crash(index: number): void;
  restart(index: number): void;
  pause(index: number): void;
  resume(index: number): void;
  partition(a: readonly number[], b: readonly number[], oneWay: boolean): void;
  isolate(index: number): void;
  heal(): void;
  clog(from: number, to: number, ms: number): void;
  join(index: number, via: readonly number[]): void;
  /** admin sends an operator command to the leader, or to `target` (a node slot) when given. */
  admin(op: AdminOp, target?: number): number;
  /**
   * leavesOnly (autopilot seeds): members go away by leaving, any member but the leader, and the engine refuses
   * a leave below the fault tolerance (VoterFloorChecker watches); otherwise removals keep three voters.
   */
  readonly leavesOnly?: boolean;
  idle(untilMs: number): void;
  /** foreign delivers a forged call to a node (sim/foreign.ts). */
  foreign(index: number, message: ForeignMessage): void;
  schedule(atMs: number, label: string, run: () => void): void;
}

/** FOREIGN_VOLLEY_COUNT_MAX bounds the forged calls one foreign-traffic fault sends. */
const FOREIGN_VOLLEY_COUNT_MAX = 24;

/** FaultInjector fires faults during the safety phase and undoes them when their time is up. */
export class FaultInjector {
  active = true;
  /** excluded nodes stay down through the liveness phase (outside the healed core). */
  readonly excluded = new Set<number>();
  private partitionToken = 0;

  constructor(private readonly world: FaultWorld) {}

  fire(event: FaultEvent): void {
    if (!this.active) return;
    const prng = new Prng(`fault:${event.salt}`);
    const w = this.world;
    const started = w.nodes.filter((n) => n.state !== 'unborn').map((n) => n.index);
    const live = w.nodes.filter((n) => n.state === 'up' || n.state === 'paused').map((n) => n.index);
    const nowMs = w.nowUs / 1_000;
    switch (event.kind) {
      case 'crash': {
        const victim = pickByFraction(live, prng.next());
        if (victim === undefined) return;
        w.crash(victim);
        w.schedule(nowMs + event.durationMs, 'fault ends: restart', () => {
          if (!this.excluded.has(victim)) w.restart(victim);
        });
        return;
      }
      case 'pause': {
        const victim = pickByFraction(
          w.nodes.filter((n) => n.state === 'up').map((n) => n.index),
          prng.next(),
        );
        if (victim === undefined) return;
        w.pause(victim);
        w.schedule(nowMs + event.durationMs, 'fault ends: resume', () => w.resume(victim));
        return;
      }
      case 'partition': {
        if (started.length < 2) return;
        w.heal();
        const token = ++this.partitionToken;
        const order = prng.shuffled(started);
        if (event.shape === 'isolate') w.isolate(order[0]!);
        else {
          const cut = event.shape === 'halves' ? Math.floor(order.length / 2) : prng.between(1, order.length - 1);
          w.partition(order.slice(0, cut), order.slice(cut), event.shape === 'asymmetric');
        }
        w.schedule(nowMs + event.durationMs, 'fault ends: heal partition', () => {
          if (token === this.partitionToken && this.active) w.heal();
        });
        return;
      }
      case 'clog': {
        if (started.length < 2) return;
        const [from, to] = prng.shuffled(started);
        w.clog(from!, to!, event.durationMs);
        return;
      }
      case 'join': {
        const members = this.members();
        if (members.length === 0 || w.nodes[event.slot]?.state !== 'unborn') return;
        const via = [pickByFraction(members, prng.next())!];
        const second = pickByFraction(members, prng.next())!;
        if (prng.chance(0.5) && second !== via[0]) via.push(second);
        w.join(event.slot, via);
        return;
      }
      case 'remove': {
        const view = w.leaderRoster();
        if (!view) return;
        const voters = voterIds(view.roster);
        const candidates = view.roster.members
          .filter((m) =>
            w.leavesOnly === true
              ? m.id !== view.leaderId && m.role !== MemberRole.Removed
              : m.role === MemberRole.Learner || (m.role === MemberRole.Voter && voters.length >= 3),
          )
          .map((m) => m.id);
        const id = pickByFraction(candidates, prng.next());
        if (id !== undefined)
          w.admin({ op: w.leavesOnly === true ? 'leave' : 'remove', memberId: id }, this.misdirected(prng, live));
        return;
      }
      case 'filter': {
        // A learner (filtered or not) of the leader's roster: a filtered one mostly loses its filter, an
        // unfiltered one gets a key prefix of the workload's (sim/workload.ts keys are k0, k1, …).
        const view = w.leaderRoster();
        const learners = view?.roster.members.filter((m) => m.role === MemberRole.Learner).map((m) => m.id) ?? [];
        const id = pickByFraction(learners, prng.next());
        if (id === undefined || !view) return;
        const filtered = view.roster.filters?.[id] !== undefined;
        const filter = filtered && prng.chance(0.7) ? null : { prefixes: [`k${prng.int(10)}`], tenants: [] };
        w.admin({ op: 'filter', memberId: id, filter }, this.misdirected(prng, live));
        return;
      }
      case 'promote': {
        const view = w.leaderRoster();
        const id =
          view &&
          pickByFraction(
            view.roster.members.filter((m) => m.role === MemberRole.Learner).map((m) => m.id),
            prng.next(),
          );
        if (id) w.admin({ op: 'promote', memberId: id }, this.misdirected(prng, live));
        return;
      }
      case 'transfer': {
        const view = w.leaderRoster();
        // Now and then the target is a learner, which the leader must refuse.
        const targets = prng.chance(0.15)
          ? (view?.roster.members.map((m) => m.id) ?? [])
          : view
            ? voterIds(view.roster).filter((v) => v !== view.leaderId)
            : [];
        const id = view && pickByFraction(targets, prng.next());
        if (id) w.admin({ op: 'transfer', memberId: id }, this.misdirected(prng, live));
        return;
      }
      case 'idle':
        w.idle(nowMs + event.durationMs);
        return;
      case 'foreign': {
        // Each forged call picks its target when it is sent and reads its status (term, leader,
        // log), as an attacker watching the cluster would; they stop with the safety phase.
        const count = prng.between(1, FOREIGN_VOLLEY_COUNT_MAX);
        for (let i = 0; i < count; i++) {
          const shot = new Prng(`fault:${event.salt}:${i}`);
          w.schedule(nowMs + shot.uniform(0, event.durationMs), 'foreign call', () => {
            if (!this.active) return;
            const targets = w.nodes.filter((n) => (n.state === 'up' || n.state === 'paused') && n.status !== null);
            const target = pickByFraction(targets, shot.next());
            if (target) w.foreign(target.index, forgeForeignMessage(shot, target.status!, w.clusterId));
          });
        }
        return;
      }
    }
  }

  /** misdirected sends a fifth of operator commands to a random node, which must refuse unless it leads. */
  private misdirected(prng: Prng, live: number[]): number | undefined {
    return prng.chance(0.2) ? pickByFraction(live, prng.next()) : undefined;
  }

  /** members are started nodes with a member id that do not know they were removed. */
  private members(): number[] {
    return this.world.nodes
      .filter((n) => (n.state === 'up' || n.state === 'paused') && n.status && n.status.id !== 0 && !n.status.removed)
      .map((n) => n.index);
  }
}
