// Cluster is the simulated world: nodes, a faulty network, disks and clocks,
// one event queue in virtual time, and the checkers that watch every step.
// It is also the scripting API (crash, partition, propose, join, ...) that
// scenarios and tests drive directly: in the lockstep preset (sim/presets.ts,
// driven by sim/lockstep.ts) it is the world every scenario runs in.
import type { DropRule } from './drop-rule.js';
import type {
  AdminOp,
  Compat,
  Effect,
  EngineConfig,
  EngineLimits,
  EngineStatus,
  Input,
  NodeStats,
  ProposalResultCode,
  ReadIndexAsker,
} from '../engine/types.js';
import { MemberRole, type Roster } from '../engine/types.js';
import type { RpcRequest, RpcStatus } from '../engine/rpc.js';
import { StatusCode } from '../engine/rpc.js';
import { DEFAULT_LIMITS, CURRENT_COMPAT } from '../engine/limits.js';
import { bootstrapRoster } from '../engine/roster.js';
import { captureArtifact } from './artifacts.js';
import { callKindOf } from './calls.js';
import type { Checker, CheckerWorld } from './checkers/checker.js';
import { CheckerSuite } from './checkers/suite.js';
import { NodeClock } from './clock.js';
import { Coverage } from './coverage.js';
import { CoverageObserver } from './coverage-observer.js';
import { CrashPoints, type Sprung } from './crash-points.js';
import { EventQueue } from './event-queue.js';
import type { SimEvent } from './events.js';
import { SIM_LIMITS, msToUs } from './limits.js';
import { VoterFloorChecker } from './checkers/voter-floor.js';
import { LOST, Network } from './network.js';
import { SimNode, type EngineFactory } from './node.js';
import type { NetworkKnobs, StorageKnobs } from './options.js';
import { Prng } from './prng.js';
import { Trace } from './trace.js';
import { traceLine } from './trace-format.js';
import { InvariantViolation, violate } from './violation.js';
import { RpcRouter, type ClientAnswer, type ForeignCall } from './rpc-router.js';
import { emptyRestoredState } from '../engine/restored.js';
import { simCommunityOf } from './state-machine.js';
import type { ForeignMessage } from './foreign.js';
import { unreachable } from './wire.js';

export type { ClientAnswer };

export interface FounderSpec {
  compat?: Compat;
  learner?: boolean;
  /** name: the node's name (default n1, n2, ... by slot); it listens at `<name>:7000` and `http://<name>:8080`. */
  name?: string;
}

export interface ClusterConfig {
  seed: number | string;
  founders: FounderSpec[];
  /** joinerSlotCount reserves node slots for nodes that join later. */
  joinerSlotCount: number;
  engineFactory: EngineFactory;
  engineLimits?: Partial<EngineLimits>;
  network: NetworkKnobs;
  storage: StorageKnobs;
  clockDriftFractionMax?: number;
  tickMs?: number;
  trace?: Trace;
  /** extraCheckers run after the built-in ones. */
  extraCheckers?: Checker[];
  /**
   * wireRoundTripEvery: every Nth message goes through its protobuf codec (encode, decode), the
   * others are shallow-copied; 1 = every message, 0 = none. Default SIM_LIMITS.wireRoundTripEvery.
   */
  wireRoundTripEvery?: number;
  /**
   * lockstep: the world scripts and scenarios run in (sim/presets.ts, sim/lockstep.ts). Every node ticks
   * at the same instants, one nominal tick apart, in slot order; nothing else takes time (network and
   * disk delays come from the knobs, which the preset sets to zero; staging is instant); a call on a cut
   * link or hit by a script's drop rule fails at once, as a refused connection does; no stats inputs;
   * each engine's random seed is fixed by its slot (the same on every restart); and the state machine
   * keeps a kind-1 entry that is not a KV command as an opaque value. Off for seeded runs.
   */
  lockstep?: boolean;
}

export type { DropRule } from './drop-rule.js';

/** NodeRef names a node by slot index (0-based) or by name ('n1', ...). */
export type NodeRef = number | string;

/** ProposalListener hears every proposalResult (the workload uses it to retry). */
export type ProposalListener = (
  node: SimNode,
  proposalId: number,
  ok: boolean,
  seq: number,
  leaderHint: string,
  code: ProposalResultCode,
) => void;

/** ReadIndexListener hears every readIndexResult (the workload's reads). */
export type ReadIndexListener = (node: SimNode, result: Extract<Effect, { type: 'readIndexResult' }>) => void;

const TICK: Input = { type: 'tick' };

export class Cluster implements CheckerWorld {
  nowUs = 0;
  readonly nodes: SimNode[] = [];
  readonly checkers: CheckerSuite;
  readonly trace: Trace;
  /** learnersNoted: per node index, whether the last view note said it is a learner. */
  private readonly learnersNoted = new Map<number, boolean>();
  readonly network: Network;
  readonly limits: EngineLimits;
  readonly tickMs: number;
  readonly foundingRoster: Roster;
  /** clusterId is the id this cluster's calls carry on the simulated wire (the real edge checks it). */
  readonly clusterId: string;
  readonly coverage = new Coverage();
  /** crashPoints: armed boundary-crash traps (sim/crash-points.ts), consulted at every step. */
  readonly crashPoints = new CrashPoints();
  /** mayRestart: a boundary crash's node comes back after its downtime unless this says no. */
  mayRestart: (index: number) => boolean = () => true;
  eventCount = 0;
  private readonly queue = new EventQueue<SimEvent>();
  private readonly router: RpcRouter;
  private readonly byGrpc = new Map<string, SimNode>();
  private readonly byHttp = new Map<string, SimNode>();
  private readonly byMemberId = new Map<number, SimNode>();
  private readonly proposals = new Map<number, Uint8Array>();
  private readonly afterEventHooks: (() => void)[] = [];
  private readonly proposalListeners: ProposalListener[] = [];
  private readonly readIndexListeners: ReadIndexListener[] = [];
  readonly adminResults: { adminId: number; ok: boolean; reason: string }[] = [];
  private nextProposalId = 1;
  private nextAdminId = 1;
  private nextReadId = 1;
  private readonly rootPrng: Prng;
  private readonly storagePrng: Prng;
  private readonly enginePrng: Prng;
  private readonly timingPrng: Prng;

  constructor(readonly config: ClusterConfig) {
    if (config.founders.length < 1) throw new Error('a cluster needs at least one founder');
    this.clusterId = `sim-${config.seed}`;
    this.rootPrng = new Prng(`sim:${config.seed}`);
    this.storagePrng = this.rootPrng.fork('storage');
    this.enginePrng = this.rootPrng.fork('engine');
    this.timingPrng = this.rootPrng.fork('timing');
    this.tickMs = config.tickMs ?? SIM_LIMITS.tickMs;
    this.limits = { ...DEFAULT_LIMITS, ...config.engineLimits };
    this.trace = config.trace ?? new Trace();
    const slotCount = config.founders.length + config.joinerSlotCount;
    this.network = new Network(this.rootPrng.fork('network'), config.network, slotCount);
    const clockPrng = this.rootPrng.fork('clock');
    const drift = config.clockDriftFractionMax ?? SIM_LIMITS.clockDriftFractionMax;
    for (let index = 0; index < slotCount; index++) {
      const founder = config.founders[index];
      const name = founder?.name ?? `n${index + 1}`;
      const node = new SimNode(
        {
          index,
          name,
          grpcAddr: `${name}:7000`,
          httpAddr: `http://${name}:8080`,
          compat: founder?.compat ?? CURRENT_COMPAT,
          isJoiner: founder === undefined,
        },
        new NodeClock(clockPrng.uniform(-drift, drift), this.tickMs, clockPrng.uniform(-500, 500)),
        config.lockstep === true,
      );
      this.nodes.push(node);
      this.byGrpc.set(node.id.grpcAddr, node);
      this.byHttp.set(node.id.httpAddr, node);
    }
    const roster = bootstrapRoster(this.nodes.slice(0, config.founders.length).map((n) => n.id));
    roster.members = roster.members.map((m, i) =>
      config.founders[i]!.learner ? { ...m, role: MemberRole.Learner } : m,
    );
    this.foundingRoster = roster;
    this.checkers = new CheckerSuite(this, [
      new CoverageObserver(this),
      ...(this.limits.autopilotEnabled === 1 ? [new VoterFloorChecker(this.limits)] : []),
      ...(config.extraCheckers ?? []),
    ]);
    this.router = new RpcRouter(
      {
        now: () => this.nowUs,
        nodes: this.nodes,
        network: this.network,
        limits: this.limits,
        tickMs: this.tickMs,
        checkers: this.checkers,
        push: (atUs, event) => this.queue.push(atUs, event),
        step: (node, input) => this.step(node, input),
        guard: (node, what, run) => this.guard(node, what, run),
        nodeByGrpcAddr: (addr) => this.byGrpc.get(addr),
        clusterId: this.clusterId,
        trace: this.trace,
        coverage: this.coverage,
      },
      this.storagePrng,
      config.storage.snapshotCorruptProbability,
      config.wireRoundTripEvery ?? SIM_LIMITS.wireRoundTripEvery,
      this.rootPrng.fork('late'),
      config.lockstep === true,
      this.rootPrng.fork('slow-snapshot'),
    );
  }

  get lockstep(): boolean {
    return this.config.lockstep === true;
  }

  // ---- the world as checkers and scripts see it ----

  nodeByMemberId(id: number): SimNode | undefined {
    return this.byMemberId.get(id);
  }

  nodeByGrpcAddr(addr: string): SimNode | undefined {
    return this.byGrpc.get(addr);
  }

  /** foreignCall describes a forged call a server took in (null for a member's call). */
  foreignCall(callId: number): ForeignCall | null {
    return this.router.foreignCalls.get(callId) ?? null;
  }

  clientCall(callId: number): boolean {
    return this.router.clientCallIds.has(callId);
  }

  /** otherClusterRefusals counts calls the simulated edge refused for carrying another cluster's id. */
  get otherClusterRefusals(): number {
    return this.router.otherClusterRefusals;
  }

  /** cutOff: a message from `from` to `to` cannot get through now (a partition, or `to` not up). */
  cutOff(from: SimNode, to: SimNode): boolean {
    return to.state !== 'up' || this.network.isBlocked(from.index, to.index);
  }

  /** leader is the live node that claims leadership in the highest term, or null. */
  leader(): SimNode | null {
    let best: SimNode | null = null;
    for (const node of this.nodes) {
      if (node.state !== 'up' || node.status?.role !== 'leader') continue;
      if (!best || node.status.term > best.status!.term) best = node;
    }
    return best;
  }

  status(ref: NodeRef): EngineStatus | null {
    return this.node(ref).status;
  }

  /** node resolves a slot index or a node name ('n3') to the node. */
  node(ref: NodeRef): SimNode {
    const node = typeof ref === 'number' ? this.nodes[ref] : this.nodes.find((n) => n.name === ref);
    if (!node)
      throw new Error(`no node ${JSON.stringify(ref)} (the cluster has ${this.nodes.map((n) => n.name).join(', ')})`);
    return node;
  }

  get founderCount(): number {
    return this.config.founders.length;
  }

  onAfterEvent(hook: () => void): void {
    this.afterEventHooks.push(hook);
  }

  onProposalResult(listener: ProposalListener): void {
    this.proposalListeners.push(listener);
  }

  onReadIndexResult(listener: ReadIndexListener): void {
    this.readIndexListeners.push(listener);
  }

  // ---- running ----

  /** start boots every founder. */
  start(): void {
    for (let i = 0; i < this.founderCount; i++) this.startNode(this.nodes[i]!);
  }

  /** schedule runs `run` at virtual time `atUs` (a world event: faults, workload, phases). */
  schedule(atUs: number, label: string, run: () => void): void {
    this.queue.push(Math.max(atUs, this.nowUs), { k: 'world', label, run });
  }

  runFor(ms: number): void {
    this.runUntil(this.nowUs + msToUs(ms));
  }

  /** tick runs the world for `count` nominal tick periods. */
  tick(count = 1): void {
    this.runFor(count * this.tickMs);
  }

  /** runUntil processes events up to virtual time `untilUs` (or until `stop` says so). */
  runUntil(untilUs: number, stop?: () => boolean): void {
    for (;;) {
      const next = this.queue.peekTimeUs();
      if (next === undefined || next > untilUs) break;
      this.processNext();
      if (stop?.()) return;
    }
    this.nowUs = Math.max(this.nowUs, untilUs);
  }

  /** runUntilTrue runs until `condition` holds (checked after each event) or `maxMs` pass; it says which. */
  runUntilTrue(condition: () => boolean, maxMs: number): boolean {
    if (condition()) return true;
    let met = false;
    this.runUntil(this.nowUs + msToUs(maxMs), () => (met = condition()));
    return met;
  }

  private processNext(): void {
    const scheduled = this.queue.pop()!;
    this.nowUs = scheduled.atUs;
    this.eventCount++;
    if (this.eventCount > SIM_LIMITS.eventCountMax)
      violate('event-budget', `more than ${SIM_LIMITS.eventCountMax} events in one run`);
    this.dispatch(scheduled.item);
    for (const hook of this.afterEventHooks) hook();
  }

  // ---- scripting: faults and clients ----

  crash(ref: NodeRef): void {
    const node = this.node(ref);
    if (!node.isLive) return;
    if (node.storage.pendingCount > 0) this.coverage.add('crash-unsynced-append');
    const torn = node.storage.crash(this.storagePrng, this.config.storage.tornWriteProbability);
    node.state = 'down';
    node.engine = null;
    node.incarnation++;
    node.inbox = [];
    node.openRequests.clear();
    node.machine.reset();
    this.router.calls.forgetNode(node.index);
    this.checkers.onCrash(node);
    this.recordWorld(`crash ${node.name} kept ${torn.keptAppendCount} torn ${torn.tornEntryCount}`);
  }

  restart(ref: NodeRef): void {
    const node = this.node(ref);
    if (node.state !== 'down') return;
    this.startNode(node);
    this.recordWorld(`restart ${node.name}`);
  }

  pause(ref: NodeRef): void {
    const node = this.node(ref);
    if (node.state !== 'up') return;
    node.state = 'paused';
    this.recordWorld(`pause ${node.name}`);
  }

  resume(ref: NodeRef): void {
    const node = this.node(ref);
    if (node.state !== 'paused') return;
    node.state = 'up';
    const queued = node.inbox;
    node.inbox = [];
    for (const event of queued) this.queue.push(this.nowUs, event);
    this.recordWorld(`resume ${node.name} inbox ${queued.length}`);
  }

  /** partition cuts every link between the two groups (both ways unless oneWay: a -> b only). */
  partition(a: readonly NodeRef[], b: readonly NodeRef[], oneWay = false): void {
    const left = a.map((r) => this.node(r));
    const right = b.map((r) => this.node(r));
    this.network.split(
      left.map((n) => n.index),
      right.map((n) => n.index),
      !oneWay,
    );
    this.recordWorld(
      `partition [${left.map((n) => n.name).join(',')}] ${oneWay ? '->' : '|'} [${right.map((n) => n.name).join(',')}]`,
    );
  }

  isolate(ref: NodeRef): void {
    const node = this.node(ref);
    this.network.isolate(node.index);
    this.recordWorld(`isolate ${node.name}`);
  }

  heal(): void {
    this.network.heal();
    this.recordWorld('heal');
  }

  /** healNode lifts the partitions touching one node (clogs stay). */
  healNode(ref: NodeRef): void {
    const node = this.node(ref);
    this.network.healNode(node.index);
    this.recordWorld(`heal ${node.name}`);
  }

  clog(from: NodeRef, to: NodeRef, ms: number): void {
    const [a, b] = [this.node(from), this.node(to)];
    this.network.clog(a.index, b.index, this.nowUs + msToUs(ms));
    this.recordWorld(`clog ${a.name}->${b.name} ${ms}ms`);
  }

  /** join boots a joiner slot (by index or name) that dials the given members' gRPC addresses. */
  join(ref: NodeRef, via: readonly NodeRef[]): void {
    const node = this.node(ref);
    if (node.state !== 'unborn') throw new Error(`${node.name} was already started`);
    if (!node.id.isJoiner) throw new Error(`${node.name} is a founder, not a joiner slot`);
    node.seeds = via.map((r) => this.node(r).id.grpcAddr);
    this.startNode(node);
    this.recordWorld(`join ${node.name} via ${node.seeds.join(',')}`);
  }

  /** injectForeign delivers a forged call (sim/foreign.ts) to a node from outside the cluster. */
  injectForeign(ref: NodeRef, message: ForeignMessage): void {
    const node = this.node(ref);
    this.router.injectForeign(node, message.request, message.clusterId, message.kind);
    this.recordWorld(
      `foreign ${message.kind} ${message.request.method} -> ${node.name}${message.clusterId === this.clusterId ? '' : ` (cluster ${message.clusterId})`}`,
    );
  }

  /** propose hands a client command to a node (as the client's believed leader); it returns the proposalId. */
  propose(ref: NodeRef, data: Uint8Array, clientDelayMs = 0): number {
    const proposalId = this.nextProposalId++;
    this.proposals.set(proposalId, data);
    this.deliverFromClient(this.node(ref).index, { type: 'propose', proposalId, data }, clientDelayMs);
    return proposalId;
  }

  /** proposeBatch hands several commands to a node in one input (proposeBatch); it returns their proposalIds. */
  proposeBatch(ref: NodeRef, datas: readonly Uint8Array[], clientDelayMs = 0): number[] {
    const proposals = datas.map((data) => {
      const proposalId = this.nextProposalId++;
      this.proposals.set(proposalId, data);
      return { proposalId, data };
    });
    this.deliverFromClient(this.node(ref).index, { type: 'proposeBatch', proposals }, clientDelayMs);
    return proposals.map((p) => p.proposalId);
  }

  /**
   * readIndex asks a node's engine for a read index (a readIndex input); it returns the readId. asker: the member
   * that forwards the read, as a real leader's driver names it from the forwarder's certificate (ReadIndexAsker).
   */
  readIndex(ref: NodeRef, clientDelayMs = 0, asker?: ReadIndexAsker): number {
    const readId = this.nextReadId++;
    const input: Input = asker ? { type: 'readIndex', readId, asker } : { type: 'readIndex', readId };
    this.deliverFromClient(this.node(ref).index, input, clientDelayMs);
    return readId;
  }

  /** admin sends an operator command to `index` (default: the current leader); it returns the adminId or 0. */
  admin(op: AdminOp, ref?: NodeRef): number {
    const target = ref === undefined ? this.leader()?.index : this.node(ref).index;
    if (target === undefined) return 0;
    // With autopilot on, members go away by leaving (refused below the fault tolerance), as pods scaled down do.
    if (this.limits.autopilotEnabled === 1 && op.op === 'remove') op = { op: 'leave', memberId: op.memberId };
    const adminId = this.nextAdminId++;
    this.deliverFromClient(target, { type: 'admin', adminId, op }, 0);
    return adminId;
  }

  private deliverFromClient(index: number, input: Input, delayMs: number): void {
    const node = this.node(index);
    if (!node.isLive) return;
    this.queue.push(this.nowUs + msToUs(delayMs), {
      k: 'input',
      node: index,
      inc: node.incarnation,
      input,
      netFrom: -1,
    });
  }

  // ---- scripting: the lockstep world's hooks (sim/lockstep.ts) ----

  /** stepNow hands `input` to a live, running node's engine at once, outside the event queue (a script's direct step). */
  stepNow(ref: NodeRef, input: Input): void {
    const node = this.node(ref);
    if (node.state !== 'up') return;
    // A script's proposal is a client's: the checkers know what was proposed under each id.
    if (input.type === 'propose') this.proposals.set(input.proposalId, input.data);
    if (input.type === 'proposeBatch') for (const p of input.proposals) this.proposals.set(p.proposalId, p.data);
    this.step(node, input);
  }

  /** runDue processes every event due by now, including those they cause now (a lockstep world's "deliver"). */
  runDue(): void {
    this.runUntil(this.nowUs);
  }

  /** drop adds a script's drop rule (lockstep: a dropped call fails at once). */
  drop(rule: DropRule): void {
    this.router.dropRules.push({ ...rule });
  }

  /** undrop forgets every drop rule. */
  undrop(): void {
    this.router.dropRules.length = 0;
  }

  /** corruptNextSnapshot flips a byte of state.json in the next snapshot a server ships. */
  corruptNextSnapshot(): void {
    this.router.corruptNextSnapshot = true;
    this.recordWorld('corrupt next snapshot');
  }

  /** delayNextSnapshot holds the next snapshot a server ships `ticks` ticks longer than the network would (a slow transfer). */
  delayNextSnapshot(ticks: number): void {
    this.router.delayNextSnapshotUs = msToUs(ticks * this.tickMs);
    this.recordWorld(`delay next snapshot ${ticks} ticks`);
  }

  /** corruptWal models WAL recovery finding damage before the tail: the node's next start has its reseed marker latched. */
  corruptWal(ref: NodeRef): void {
    const node = this.node(ref);
    node.storage.hardState = { ...(node.storage.hardState ?? emptyRestoredState().hardState), reseed: true };
    this.recordWorld(`corrupt wal ${node.name}`);
  }

  /** nameJoiner gives an unborn joiner slot its name (and binary), before join starts it. */
  nameJoiner(ref: NodeRef, name: string, compat: Compat = CURRENT_COMPAT): SimNode {
    const node = this.node(ref);
    if (node.state !== 'unborn' || !node.id.isJoiner) throw new Error(`${node.name} is not an unborn joiner slot`);
    if (this.nodes.some((n) => n !== node && n.name === name)) throw new Error(`a node is already named ${name}`);
    this.byGrpc.delete(node.id.grpcAddr);
    this.byHttp.delete(node.id.httpAddr);
    Object.assign(node.id, { name, grpcAddr: `${name}:7000`, httpAddr: `http://${name}:8080`, compat: { ...compat } });
    this.byGrpc.set(node.id.grpcAddr, node);
    this.byHttp.set(node.id.httpAddr, node);
    return node;
  }

  /** injectClient sends a raw request to a node from a test client (no partition applies); onAnswer hears its answers. */
  injectClient(ref: NodeRef, request: RpcRequest, onAnswer: (effect: ClientAnswer) => void): void {
    const node = this.node(ref);
    this.router.injectClient(node, request, onAnswer);
    this.recordWorld(`client ${request.method} -> ${node.name}`);
  }

  // ---- node lifecycle ----

  private startNode(node: SimNode): void {
    node.incarnation++;
    const restored = node.restoredState();
    const founder = !node.id.isJoiner;
    const config: EngineConfig = {
      name: node.name,
      grpcAddr: node.id.grpcAddr,
      httpAddr: node.id.httpAddr,
      bootstrapRoster: founder ? structuredClone(this.foundingRoster) : null,
      seeds: founder ? [] : [...node.seeds],
      // Lockstep: a fixed seed per slot, so a script's elections do not depend on the order nodes started in.
      randomSeed: this.lockstep ? node.index * 7919 + 17 : this.enginePrng.uint32(),
      compat: { ...node.id.compat },
      limits: { ...this.limits },
      communityOf: simCommunityOf,
    };
    node.config = config;
    node.engine = this.guard(node, 'construct', () => this.config.engineFactory(config, restored));
    node.state = 'up';
    node.inbox = [];
    node.status = this.guard(node, 'status', () => node.engine!.status());
    this.noteIdentity(node, node.status);
    this.checkers.onStart(node);
    // Recovery's effects (committed entries applied from the log) are carried out now, as their own
    // step: left queued, they would ride on whichever input came first, a forged call's, say.
    this.step(node, { type: 'start' });
    if (this.lockstep) {
      // One whole period after the start: a script's `tick 1` is one tick of every node.
      this.queue.push(this.nowUs + node.clock.tickIntervalUs, { k: 'tick', node: node.index, inc: node.incarnation });
      return;
    }
    const phaseUs = Math.floor(this.timingPrng.next() * node.clock.tickIntervalUs);
    this.queue.push(this.nowUs + phaseUs, { k: 'tick', node: node.index, inc: node.incarnation });
    this.queue.push(this.nowUs + msToUs(this.timingPrng.uniform(0, SIM_LIMITS.statsIntervalMs)), {
      k: 'stats',
      node: node.index,
      inc: node.incarnation,
    });
  }

  private guard<T>(node: SimNode, what: string, run: () => T): T {
    try {
      return run();
    } catch (error) {
      return this.threw(node, what, error);
    }
  }

  /** threw: an engine's exception is a violation (an InvariantViolation from a checker passes through). */
  private threw(node: SimNode, what: string, error: unknown): never {
    if (error instanceof InvariantViolation) throw error;
    const text = error instanceof Error ? (error.stack ?? error.message) : String(error);
    return violate('engine-exception', `${node.name} threw in ${what}: ${text}`, node.index);
  }

  private noteIdentity(node: SimNode, status: EngineStatus): void {
    if (status.id === 0) return;
    const holder = this.byMemberId.get(status.id);
    if (holder === node) return;
    if (holder && holder.status?.id === status.id) {
      violate('membership-safety', `${node.name} and ${holder.name} both hold member id ${status.id}`, node.index);
    }
    this.byMemberId.set(status.id, node);
  }

  // ---- events ----

  private dispatch(event: SimEvent): void {
    if (event.k === 'world') {
      this.recordWorld(event.label);
      event.run();
      return;
    }
    const node = this.nodes[event.node]!;
    if (event.k === 'request') {
      if (node.state === 'paused') node.inbox.push(event);
      else if (node.state === 'up') {
        if (event.afterCrashOf !== undefined && event.afterCrashOf < node.incarnation) {
          this.coverage.add('replay-after-crash');
          if (event.request.method === 'RequestVote') this.coverage.add('vote-replay-after-crash');
        }
        this.noteDelivery(event.msg);
        this.router.serve(node, event);
      } else if (!event.copy) this.router.refuse(event.callKey, event.node);
      return;
    }
    if (event.k === 'statusAsk') {
      if (node.state === 'paused') node.inbox.push(event);
      else if (node.state === 'up') this.router.answerStatus(node, event.from, event.fromInc);
      return;
    }
    if (event.inc !== node.incarnation || !node.isLive) return;
    if (node.state === 'paused') {
      if (event.k !== 'tick' && event.k !== 'stats') node.inbox.push(event);
      else this.reschedulePeriodic(node, event);
      return;
    }
    switch (event.k) {
      case 'tick':
        this.reschedulePeriodic(node, event);
        this.step(node, TICK);
        return;
      case 'stats':
        this.reschedulePeriodic(node, event);
        this.step(node, { type: 'stats', stats: this.statsOf(node) });
        return;
      case 'input':
        this.step(node, event.input);
        return;
      case 'answer': {
        const call = this.router.calls.outbound.get(event.callKey);
        if (!call) return;
        if (event.final) this.router.settle(call);
        if (event.lateFromTerm !== undefined) {
          this.coverage.add('late-answer');
          if ((node.status?.term ?? 0) > event.lateFromTerm) this.coverage.add('late-answer-new-term');
        }
        if (
          call.method === 'RequestVote' &&
          event.input.type === 'response' &&
          (node.status?.term ?? 0) > call.callerTerm
        )
          this.coverage.add('vote-answer-new-term');
        this.noteDelivery(event.msg);
        this.step(node, event.input);
        return;
      }
      case 'snapshot':
        if (this.router.calls.outbound.has(event.callKey)) this.noteDelivery(event.msg);
        this.router.receiveSnapshot(node, event);
        return;
      case 'deadline': {
        const call = this.router.calls.outbound.get(event.callKey);
        if (!call) return;
        this.router.settle(call);
        const input: Input =
          call.kind === 'snapshot'
            ? { type: 'snapshotFailed', requestId: call.requestId, code: 'failed', reason: 'deadline exceeded' }
            : {
                type: 'callFailed',
                requestId: call.requestId,
                status: status(StatusCode.DEADLINE_EXCEEDED, 'deadline exceeded'),
              };
        this.step(node, input);
        return;
      }
      case 'sync':
        for (const persisted of node.storage.syncDue(this.nowUs)) {
          if (node.state !== 'up' || node.incarnation !== event.inc) return;
          const { lastSeq, lastTerm, generation } = persisted;
          this.step(
            node,
            generation !== undefined
              ? { type: 'entriesPersisted', lastSeq, lastTerm, generation }
              : { type: 'entriesPersisted', lastSeq, lastTerm },
          );
        }
        return;
      case 'staged':
        node.artifacts.add(event.artifact);
        this.step(node, { type: 'snapshotStaged', meta: event.artifact.meta, header: event.artifact.header });
        return;
      default:
        unreachable(event);
    }
  }

  private reschedulePeriodic(node: SimNode, event: { k: 'tick' | 'stats'; node: number; inc: number }): void {
    const periodUs =
      event.k === 'tick' ? node.clock.tickIntervalUs : Math.round(msToUs(SIM_LIMITS.statsIntervalMs) / node.clock.rate);
    this.queue.push(this.nowUs + periodUs, event);
  }

  private statsOf(node: SimNode): NodeStats {
    return {
      entityCount: node.machine.size,
      signalThroughputEps: 0,
      diskBytes: node.storage.durable.entries.length * 64,
      nowNs: node.clock.wallNowNs(this.nowUs),
    };
  }

  // ---- one engine step and its effects ----

  private step(node: SimNode, input: Input): void {
    const engine = node.engine!;
    // A forged call's step is judged on a fresh status (foreign-traffic checker): node.status may
    // lag fields that effect-less steps move (a leader's durableSeq, say).
    const forged = input.type === 'request' && this.router.foreignCalls.has(input.callId);
    const before = forged ? this.guard(node, 'status', () => engine.status()) : node.status;
    // try/catch in place of guard(): no closure and no "step(...)" text per step (the hot path).
    let effects: Effect[];
    try {
      effects = engine.step(input);
    } catch (error) {
      this.threw(node, `step(${input.type})`, error);
    }
    // A step with no effects changed nothing a checker reads: a new term, vote or role comes
    // with saveHardState or roleChanged, a commit with apply, readiness with its effect. So the
    // (costly) status read is skipped; the next step with effects reads it afresh.
    const quiet = effects.length === 0 && before !== null;
    let after: EngineStatus;
    if (quiet) after = before;
    else {
      try {
        after = engine.status();
      } catch (error) {
        this.threw(node, 'status', error);
      }
    }
    node.status = after;
    if (!quiet) this.noteIdentity(node, after);
    if (!quiet && this.trace.takesNotes) this.noteLearner(node, after);
    const incarnation = node.incarnation;
    const sprung = this.crashPoints.spring(node.index, effects, this.nowUs);
    const replay =
      sprung && sprung.trap.replayDelayMs >= 0 && input.type === 'request'
        ? this.router.calls.inbound.get(input.callId)
        : undefined;
    const carried = sprung ? effects.slice(0, sprung.carryCount) : effects;
    for (const effect of carried) {
      this.execute(node, effect, after);
      if (node.incarnation !== incarnation) break;
    }
    this.trace.record(traceLine(this.eventCount, this.nowUs, node.index, input, carried));
    this.checkers.afterStep({
      node,
      input,
      effects: carried,
      before,
      after,
      nowUs: this.nowUs,
      cutShort: sprung !== null,
    });
    if (sprung && node.incarnation === incarnation) this.crashAtBoundary(node, sprung, replay);
  }

  /** crashAtBoundary crashes a node a trap caught mid-step, restarts it later and may replay the request it served. */
  private crashAtBoundary(
    node: SimNode,
    sprung: Sprung,
    replay: { callKey: number; request: RpcRequest } | undefined,
  ): void {
    const { trap } = sprung;
    if (trap.boundary === 'after-hard-state') this.coverage.add('crash-after-hard-state');
    if (trap.boundary === 'after-reply') this.coverage.add('crash-after-reply');
    this.recordWorld(`boundary crash ${node.name} ${trap.boundary} after ${sprung.carryCount} effects`);
    const crashedIncarnation = node.incarnation;
    this.crash(node.index);
    const restartUs = this.nowUs + msToUs(trap.downMs);
    this.schedule(restartUs, 'boundary crash ends: restart', () => {
      if (this.mayRestart(node.index)) this.restart(node.index);
    });
    if (replay) {
      this.queue.push(restartUs + msToUs(trap.replayDelayMs), {
        k: 'request',
        node: node.index,
        from: -1,
        callKey: replay.callKey,
        request: replay.request,
        copy: true,
        cluster: this.clusterId,
        foreign: '',
        afterCrashOf: crashedIncarnation,
        msg: undefined,
        client: undefined,
      });
    }
  }

  /** noteLearner tells the trace viewer when a node's own roster entry turns learner or stops being one. */
  private noteLearner(node: SimNode, status: EngineStatus): void {
    const learner =
      status.id !== 0 && status.roster.members.some((m) => m.id === status.id && m.role === MemberRole.Learner);
    if ((this.learnersNoted.get(node.index) ?? false) === learner) return;
    this.learnersNoted.set(node.index, learner);
    this.trace.note(`{"v":"l","n":${node.index},"t":${this.nowUs},"learner":${learner ? 1 : 0}}`);
  }

  /** noteDelivery tells the trace viewer that view-noted message `msg` reached its engine now. */
  private noteDelivery(msg: number | undefined): void {
    if (msg !== undefined && msg > 0) this.trace.note(`{"v":"r","m":${msg},"t":${this.nowUs}}`);
  }

  private recordWorld(label: string): void {
    // The text of JSON.stringify({ i, t, w: label }) (integers print alike either way), built without the object.
    this.trace.record(`{"i":${this.eventCount},"t":${this.nowUs},"w":${JSON.stringify(label)}}`);
  }

  private execute(node: SimNode, effect: Effect, after: EngineStatus): void {
    const watchers = this.checkers.beforeEffectCheckers(effect.type);
    if (watchers.length > 0) {
      const answering = 'callId' in effect ? (this.router.calls.inbound.get(effect.callId)?.request ?? null) : null;
      for (const c of watchers) c.beforeEffect!(node, effect, answering);
    }
    switch (effect.type) {
      case 'saveHardState':
        node.storage.saveHardState(effect.hardState);
        return;
      case 'append': {
        const prevTerm = node.storage.written.termAt(effect.fromSeq - 1);
        const delayUs = this.lockstep
          ? 0
          : msToUs(
              this.storagePrng.uniform(
                SIM_LIMITS.diskSyncDelayMsMin,
                Math.max(SIM_LIMITS.diskSyncDelayMsMin, this.config.storage.diskSyncDelayMsMax),
              ),
            );
        const { error, syncAtUs } = node.storage.append(
          effect.fromSeq,
          effect.entries,
          this.nowUs,
          delayUs,
          effect.generation ?? 0,
        );
        if (error) violate('engine-contract', `${node.name}: ${error}`, node.index);
        this.checkers.onAppend(node, effect.fromSeq, effect.entries, prevTerm);
        this.queue.push(syncAtUs, { k: 'sync', node: node.index, inc: node.incarnation });
        return;
      }
      case 'send':
        this.router.call(node, effect.requestId, effect.to, effect.request, callKindOf(effect.request.method));
        return;
      case 'fetchSnapshot':
        this.router.call(
          node,
          effect.requestId,
          effect.to,
          { method: 'FetchSnapshot', body: effect.request },
          'snapshot',
        );
        return;
      case 'reply':
      case 'replyError':
      case 'streamChunk':
      case 'streamEnd':
      case 'serveSnapshot':
        this.router.answer(node, effect);
        return;
      case 'apply':
        for (const entry of effect.entries) {
          const error = node.machine.apply(entry);
          if (error) violate('engine-contract', `${node.name}: ${error}`, node.index);
        }
        this.checkers.onApply(node, effect.entries);
        return;
      case 'resetStateMachine':
        node.machine.reset();
        return;
      case 'stageSnapshot': {
        if (node.machine.appliedSeq !== effect.meta.seq) {
          violate(
            'engine-contract',
            `${node.name} asked to stage a snapshot at seq ${effect.meta.seq} while its state machine is at ${node.machine.appliedSeq}`,
            node.index,
          );
        }
        const artifact = captureArtifact(effect.meta, node.machine.stateJson(), after.term, after.id);
        this.checkers.onArtifact(node, artifact, 'staged');
        const delayUs = this.lockstep
          ? 0
          : msToUs(this.storagePrng.uniform(SIM_LIMITS.snapshotStageDelayMsMin, SIM_LIMITS.snapshotStageDelayMsMax));
        this.queue.push(this.nowUs + delayUs, { k: 'staged', node: node.index, inc: node.incarnation, artifact });
        return;
      }
      case 'compact': {
        const covered = node.artifacts.newest()?.meta.seq ?? 0;
        if (effect.throughSeq > covered) {
          violate(
            'engine-contract',
            `${node.name} compacts through ${effect.throughSeq} but its newest durable snapshot is at ${covered}`,
            node.index,
          );
        }
        node.storage.compact(effect.throughSeq);
        return;
      }
      case 'proposalResult': {
        const data = this.proposals.get(effect.proposalId);
        this.checkers.onProposalResult(node, effect.proposalId, effect.ok, effect.seq, data, after.term);
        for (const listener of this.proposalListeners)
          listener(node, effect.proposalId, effect.ok, effect.seq, effect.leaderHint, effect.code);
        return;
      }
      case 'adminResult':
        this.adminResults.push({ adminId: effect.adminId, ok: effect.ok, reason: effect.reason });
        return;
      case 'readIndexResult':
        for (const listener of this.readIndexListeners) listener(node, effect);
        return;
      case 'pollStatus': {
        const target = this.byHttp.get(effect.leaderHttpAddr);
        if (!target) return;
        if (this.router.dropped(node, target, 'Status')) return;
        const atUs = this.network.send(node.index, target.index, this.nowUs);
        if (atUs !== LOST)
          this.queue.push(atUs, { k: 'statusAsk', node: target.index, from: node.index, fromInc: node.incarnation });
        return;
      }
      case 'readiness':
      case 'roleChanged':
      case 'warning':
        return;
      default:
        unreachable(effect);
    }
  }
}

function status(code: RpcStatus['code'], details: string): RpcStatus {
  return { code, details, trailers: {} };
}
