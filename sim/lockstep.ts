// Lockstep drives the simulated world (sim/cluster.ts) in its lockstep preset (sim/presets.ts) for
// scenarios (scenarios/*.txt, sim/scenario.ts) and engine tests: nodes named by the script, rounds of
// ticks, in-order delivery, and the script's faults (partitions, drop rules, crashes, a corrupted
// snapshot or WAL). The network, disks, snapshot transfer and checkers are the seeded runs' own; what
// this file adds is the script's view: names, each node's effects, the messages sent, client calls and
// linearizable reads as a node's driver runs them. A broken invariant throws (the checkers').
import type { Engine } from '../engine/engine.js';
import { DEFAULT_LIMITS, CURRENT_COMPAT } from '../engine/limits.js';
import type { RpcRequest, RpcResponse, RpcStatus } from '../engine/rpc.js';
import type { AdminOp, Compat, Effect, EngineLimits, EngineStatus, Input, MemberFilter } from '../engine/types.js';
import type { Checker } from './checkers/checker.js';
import type { Cluster, ClientAnswer } from './cluster.js';
import type { EngineFactory, SimNode } from './node.js';
import { lockstepCluster } from './presets.js';

/** JOINER_SLOT_COUNT: how many nodes a script may join after the founders. */
const JOINER_SLOT_COUNT = 4;

/** ROUNDS_MAX_DEFAULT bounds tickUntil and elect. */
const ROUNDS_MAX_DEFAULT = 1000;

/** MessageRecord is one observed RPC event, for scenario expectations. */
export interface MessageRecord {
  from: string;
  /** to: the node called ('' for an answer: answers are known by their sender and method). */
  to: string;
  method: string;
  kind: 'request' | 'response' | 'error' | 'chunk';
  request?: RpcRequest;
  response?: RpcResponse;
  status?: RpcStatus;
}

/**
 * ScriptedRead is one linearizable read as a node's driver runs it: ask the node's engine for a
 * read index; a follower's engine refuses with a leader hint, so the driver asks that leader (once);
 * the read is served from the asked node's state machine once it has applied up to the index.
 */
export interface ScriptedRead {
  node: string;
  state: 'asking' | 'waiting' | 'served' | 'refused';
  readId: number;
  index: number;
  refusal: string;
  /** askedVia: the node whose engine gave (or refused) the index. */
  askedVia: string;
  /** seen: the values the state machine of `node` held when the read was served. */
  seen: string[];
}

/** LockstepNode is the script's view of one started node. */
export class LockstepNode {
  /** effects: every effect this node's engine emitted, in order, across restarts. */
  readonly effects: Effect[] = [];

  constructor(readonly sim: SimNode) {}

  get name(): string {
    return this.sim.name;
  }

  get addr(): string {
    return this.sim.id.grpcAddr;
  }

  get alive(): boolean {
    return this.sim.isLive;
  }

  /** engine is the running engine (a crashed node has none). */
  get engine(): Engine {
    if (!this.sim.engine) throw new Error(`${this.name} is down: it has no engine`);
    return this.sim.engine as Engine;
  }

  /** status: the engine's status now, or the last one seen when the node is down. */
  status(): EngineStatus {
    const status = this.sim.engine?.status() ?? this.sim.status;
    if (!status) throw new Error(`${this.name} never started`);
    return status;
  }

  /** values the state machine holds (a script's writes are free text, kept as themselves). */
  values(): string[] {
    return this.sim.machine.values();
  }

  holds(value: string): boolean {
    return this.sim.machine.get(value) === value;
  }
}

export class Lockstep {
  /** limits and compat apply to nodes created after they are set (limits: to the whole cluster, at bootstrap). */
  limits: EngineLimits = { ...DEFAULT_LIMITS };
  readonly compat = new Map<string, Partial<Compat>>();
  readonly messages: MessageRecord[] = [];
  readonly reads: ScriptedRead[] = [];
  /** ticks counts rounds (tick and elect). */
  ticks = 0;
  /** nodes: every started node by name, in the order created. */
  readonly nodes = new Map<string, LockstepNode>();
  private world: Cluster | null = null;
  private readonly bySlot = new Map<number, LockstepNode>();

  /** engineFactory builds each node's engine: the real one, or a test's deliberately broken one (test/sim/buggy-engines*.ts). */
  constructor(private readonly engineFactory?: EngineFactory) {}

  static addr(name: string): string {
    return `${name}:7000`;
  }

  get cluster(): Cluster {
    if (!this.world) throw new Error('no cluster yet: bootstrap first');
    return this.world;
  }

  /** bootstrap founds the cluster: voters, then founding learners; ids 1..n in order. */
  bootstrap(names: string[], learners: string[] = []): void {
    if (this.world) throw new Error('the cluster is already founded');
    const founders = [...names, ...learners].map((name) => ({
      name,
      learner: learners.includes(name),
      compat: this.compatOf(name),
    }));
    const world = lockstepCluster(founders, {
      joinerSlotCount: JOINER_SLOT_COUNT,
      engineLimits: { ...this.limits },
      extraCheckers: [this.recorder()],
      ...(this.engineFactory ? { engineFactory: this.engineFactory } : {}),
    });
    this.world = world;
    // Spare slots get names no script uses, so a joiner may take any name.
    for (let slot = founders.length; slot < world.nodes.length; slot++) world.nameJoiner(slot, `spare-slot-${slot}`);
    world.onReadIndexResult((node, result) => this.onReadIndexResult(node, result));
    world.onAfterEvent(() => this.serveReads());
    world.start();
    for (const founder of founders) this.track(world.node(founder.name));
  }

  /** join starts a new node that dials JoinCluster at the seeds. */
  join(name: string, seeds: string[]): LockstepNode {
    const world = this.cluster;
    const slot = world.nodes.find((n) => n.state === 'unborn' && n.id.isJoiner);
    if (!slot) throw new Error(`no joiner slot left for ${name} (${JOINER_SLOT_COUNT} in all)`);
    world.nameJoiner(slot.index, name, this.compatOf(name));
    world.join(slot.index, seeds);
    return this.track(slot);
  }

  node(name: string): LockstepNode {
    const node = this.nodes.get(name);
    if (!node) throw new Error(`no node named ${name}`);
    return node;
  }

  // ---- faults ----

  /** block cuts the link from one node to another (one way). */
  block(from: string, to: string): void {
    this.cluster.partition([from], [to], true);
  }

  /** partition cuts every link between any two of the groups, both ways. */
  partition(groups: string[][]): void {
    for (let i = 0; i < groups.length; i++)
      for (let j = i + 1; j < groups.length; j++) this.cluster.partition(groups[i]!, groups[j]!);
  }

  isolate(name: string): void {
    this.cluster.isolate(name);
  }

  /** heal restores every link and forgets every drop rule. */
  heal(): void {
    this.cluster.heal();
    this.cluster.undrop();
  }

  /** drop loses `count` (-1 = all) matching calls, after letting the first `skip` through; '*' matches any node or method. */
  drop(from: string, to: string, method: string, count: number, skip = 0): void {
    this.cluster.drop({ from, to, method, remaining: count, skip });
  }

  undrop(): void {
    this.cluster.undrop();
  }

  corruptNextSnapshot(): void {
    this.cluster.corruptNextSnapshot();
  }

  /** delayNextSnapshot: the next snapshot a server ships reaches its puller `rounds` rounds late (never past its call's deadline). */
  delayNextSnapshot(rounds: number): void {
    if (!(Number.isInteger(rounds) && rounds > 0))
      throw new Error(`delay-next-snapshot wants a number of rounds > 0, got ${rounds}`);
    this.cluster.delayNextSnapshot(rounds);
  }

  corruptWal(name: string): void {
    this.cluster.corruptWal(name);
  }

  crash(name: string): void {
    this.cluster.crash(name);
  }

  restart(name: string): void {
    this.cluster.restart(name);
  }

  // ---- driving ----

  /** input steps a node's engine at once; what it sends is queued, not delivered (see deliver). */
  input(name: string, input: Input): void {
    this.cluster.stepNow(name, input);
    this.serveReads();
  }

  /** deliver runs everything due now: messages, disk syncs, and what they cause, in order. */
  deliver(): void {
    this.cluster.runDue();
  }

  /** tick runs `rounds` rounds: every live node ticks once, then everything that causes is delivered. */
  tick(rounds = 1): void {
    for (let r = 0; r < rounds; r++) {
      this.ticks++;
      this.cluster.tick(1);
    }
  }

  /** elect ticks only `name` (the others just answer) until it leads: a deterministic way to pick the leader. */
  elect(name: string, roundsMax = ROUNDS_MAX_DEFAULT): boolean {
    for (let r = 0; r < roundsMax; r++) {
      if (this.leader()?.name === name) return true;
      this.ticks++;
      this.input(name, { type: 'tick' });
      this.deliver();
    }
    return this.leader()?.name === name;
  }

  tickUntil(condition: () => boolean, roundsMax = ROUNDS_MAX_DEFAULT): boolean {
    for (let r = 0; r < roundsMax; r++) {
      if (condition()) return true;
      this.tick();
    }
    return condition();
  }

  leader(): LockstepNode | undefined {
    const leader = this.cluster.leader();
    return leader ? this.bySlot.get(leader.index) : undefined;
  }

  /** propose hands a client write to the leader (or `via`); it returns the proposalId. */
  propose(data: string, via?: string): number {
    const target = via ? this.node(via) : this.leader();
    if (!target) throw new Error('no leader to propose to');
    const proposalId = this.cluster.propose(target.name, new TextEncoder().encode(data));
    this.deliver();
    return proposalId;
  }

  /** admin sends an operator command about `memberName` to the leader (or `via`); it returns the adminId. */
  admin(op: AdminOp['op'], memberName: string, via?: string, filter: MemberFilter | null = null): number {
    const target = via ? this.node(via) : this.leader();
    if (!target) throw new Error('no leader for an admin operation');
    // A member need not be a node of ours (a join some client made up): then the roster names it.
    const memberId =
      this.nodes.get(memberName)?.status().id ||
      target.status().roster.members.find((m) => m.name === memberName)?.id ||
      0;
    const adminId = this.cluster.admin(
      (op === 'filter' ? { op, memberId, filter } : { op, memberId }) as AdminOp,
      target.name,
    );
    this.deliver();
    return adminId;
  }

  /** read starts a linearizable read at `name` (see ScriptedRead); it returns the read to watch. */
  read(name: string): ScriptedRead {
    this.node(name);
    const read: ScriptedRead = {
      node: name,
      state: 'asking',
      readId: this.cluster.readIndex(name),
      index: 0,
      refusal: '',
      askedVia: name,
      seen: [],
    };
    this.reads.push(read);
    this.deliver();
    return read;
  }

  /** inject sends a raw request to a node from a test client; onOutcome hears its final answer. */
  inject(toName: string, request: RpcRequest, onOutcome: (outcome: MessageRecord) => void): void {
    this.cluster.injectClient(toName, request, (answer) => {
      if (answer.type === 'streamChunk') return;
      onOutcome(recordOf(toName, request.method, answer));
    });
    this.deliver();
  }

  // ---- the script's view ----

  private compatOf(name: string): Compat {
    return { ...CURRENT_COMPAT, ...(this.compat.get(name) ?? {}) };
  }

  private track(sim: SimNode): LockstepNode {
    const node = new LockstepNode(sim);
    this.nodes.set(sim.name, node);
    this.bySlot.set(sim.index, node);
    return node;
  }

  /** recorder is the checker that keeps each node's effects and the messages sent. */
  private recorder(): Checker {
    return {
      name: 'lockstep-recorder',
      afterStep: (step) => {
        this.bySlot.get(step.node.index)?.effects.push(...step.effects);
      },
      beforeEffect: (node, effect, answering) => {
        if (effect.type === 'send') {
          const to = this.cluster.nodeByGrpcAddr(effect.to)?.name ?? effect.to;
          this.messages.push({
            from: node.name,
            to,
            method: effect.request.method,
            kind: 'request',
            request: effect.request,
          });
        } else if (effect.type === 'fetchSnapshot') {
          const to = this.cluster.nodeByGrpcAddr(effect.to)?.name ?? effect.to;
          const request: RpcRequest = { method: 'FetchSnapshot', body: effect.request };
          this.messages.push({ from: node.name, to, method: 'FetchSnapshot', kind: 'request', request });
        } else if ('callId' in effect && answering) {
          this.messages.push(recordOf(node.name, answering.method, effect));
        }
      },
    };
  }

  private onReadIndexResult(node: SimNode, e: Extract<Effect, { type: 'readIndexResult' }>): void {
    const read = this.reads.find((r) => r.readId === e.readId && r.state === 'asking');
    if (!read || read.askedVia !== node.name) return;
    const hinted = e.leaderHint !== '' ? this.cluster.nodeByGrpcAddr(e.leaderHint) : undefined;
    if (e.refusal === 'not-leader' && hinted && read.askedVia === read.node && hinted.name !== read.node) {
      // The driver forwards a follower's read to the leader it names (a network hop: links apply).
      const reader = this.cluster.node(read.node);
      if (
        this.cluster.network.isBlocked(reader.index, hinted.index) ||
        this.cluster.network.isBlocked(hinted.index, reader.index)
      ) {
        read.state = 'refused';
        read.refusal = 'leader unreachable';
        return;
      }
      read.askedVia = hinted.name;
      read.readId = this.cluster.readIndex(hinted.index);
      return;
    }
    if (e.refusal !== null) {
      read.state = 'refused';
      read.refusal = e.refusal;
      return;
    }
    read.state = 'waiting';
    read.index = e.index;
  }

  /** serveReads serves every waiting read whose node has applied up to its index. */
  private serveReads(): void {
    for (const read of this.reads) {
      if (read.state !== 'waiting') continue;
      const node = this.node(read.node);
      if (!node.alive || node.sim.machine.appliedSeq < read.index) continue;
      read.state = 'served';
      read.seen = node.values();
    }
  }
}

function recordOf(from: string, method: string, answer: ClientAnswer): MessageRecord {
  const record: MessageRecord = { from, to: '', method, kind: 'response' };
  if (answer.type === 'reply') record.response = answer.response;
  if (answer.type === 'replyError') {
    record.kind = 'error';
    record.status = answer.status;
  }
  if (answer.type === 'streamChunk') record.kind = 'chunk';
  return record;
}
