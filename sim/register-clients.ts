// RegisterClients are the clients whose every operation is recorded for the linearizability checker
// (sim/history.ts): a few closed-loop processes, each issuing one operation at a time — a
// linearizable read, a put, or a compare-and-set on the value it last saw — then thinking, then the
// next. They work on a few keys at a time, and a key is retired (a fresh one takes its place) after
// registerKeyOpCountMax operations or registerKeyIndeterminateWriteCountMax writes of unknown outcome:
// like Jepsen's independent keys, this keeps each key's history small and its concurrency bounded,
// so the checker's search stays within its step budget. (The open-loop load writes of workload.ts go
// to other keys and are not recorded: their safety is the durability checker's.)
//
// A read runs the way a real node's driver serves it: the client asks a node (the one it believes
// leads, or any live node); that node's engine gives a read index, or a follower's refuses with a
// leader hint and the node asks that leader's engine (one hop, which a partition cuts); the read is
// served from the asked node's state machine once it has applied up to the index.
//
// Outcomes: an answer completes the operation; a write refused before it was appended ("not the
// leader", ...) is retried as the same operation at the hinted leader; a client timeout, a node
// crash under a read, or "leadership lost; outcome unknown" makes it indeterminate; a refused read
// is dropped (it did nothing).
import { inCommunities } from '../engine/communities.js';
import type { Cluster } from './cluster.js';
import type { ProposalResultCode, ReadIndexAsker } from '../engine/types.js';
import { History, type OpenOperation } from './history.js';
import type { KvInput } from './linearizability/index.js';
import { SIM_LIMITS, msToUs } from './limits.js';
import type { SimNode } from './node.js';
import type { WorkloadKnobs } from './options.js';
import type { Prng } from './prng.js';
import { encodeCommand, type KvCommand } from './state-machine.js';

/**
 * DEFINITE_REFUSALS are the engine's proposalResult codes given before anything was appended:
 * such a write never took effect. Any other refusal may have (engine/types.ts, ProposalResultCode:
 * leadership-lost's outcome is unknown).
 */
const DEFINITE_REFUSALS: ReadonlySet<ProposalResultCode> = new Set([
  'not-leader',
  'transfer-in-progress',
  'queue-full',
]);

/** REGISTER_KEY_PREFIX keeps the recorded keys apart from the load writes' k0..k15. */
const REGISTER_KEY_PREFIX = 'r';

interface RegisterKey {
  name: string;
  opCount: number;
  indeterminateWriteCount: number;
}

interface Operation {
  op: OpenOperation;
  key: RegisterKey;
  kind: 'get' | 'put' | 'cas';
  state: 'asking' | 'waiting' | 'done';
  /** reads: the node asked (served from its state machine), its incarnation, and whether it forwarded. */
  node: SimNode | null;
  incarnation: number;
  forwarded: boolean;
  /** viaPeer: forwarded to a peer because the asked node knew no leader (askerAck runs: StoreRouter's peerToAsk). */
  viaPeer: boolean;
  index: number;
  /** readId or proposalId in flight (0 = none). */
  callId: number;
  attemptCount: number;
  command: KvCommand | null;
  data: Uint8Array | null;
  onDone: () => void;
}

export interface RegisterCounts {
  readsIssued: number;
  readsServed: number;
  followerReadsServed: number;
  /** askerReadsServed: follower reads served whose forwarded request named its asker (WorkloadKnobs.askerAck). */
  askerReadsServed: number;
  writesIssued: number;
  writesAcked: number;
}

export class RegisterClients {
  readonly history = new History();
  readonly counts: RegisterCounts = {
    readsIssued: 0,
    readsServed: 0,
    followerReadsServed: 0,
    askerReadsServed: 0,
    writesIssued: 0,
    writesAcked: 0,
  };
  private readonly activeKeys: RegisterKey[] = [];
  private nextKey = 1;
  private nextValue = 1;
  private stopped = false;
  private readLeaderGuess = -1;
  private writeLeaderGuess = -1;
  /** lastSeen: per key, the value last read or written (what a cas expects). */
  private readonly lastSeen = new Map<string, string | null>();
  private readonly readsAsking = new Map<number, Operation>();
  private peerTurn = 0;
  private readonly writesAwaiting = new Map<number, Operation>();
  private waiting: Operation[] = [];

  constructor(
    private readonly cluster: Cluster,
    private readonly prng: Prng,
    private readonly knobs: WorkloadKnobs,
  ) {
    cluster.onReadIndexResult((node, r) => this.onReadIndexResult(node, r.readId, r.index, r.refusal, r.leaderHint));
    cluster.onProposalResult((node, proposalId, ok, seq, hint, code) =>
      this.onProposalResult(node, proposalId, ok, seq, hint, code),
    );
    cluster.onAfterEvent(() => {
      if (this.waiting.length > 0) this.serveWaiting();
    });
  }

  start(): void {
    for (let i = 0; i < this.knobs.registerClientCount; i++) this.thinkThenRun();
  }

  /** stop: no new operations (the liveness phase); those in flight finish or time out. */
  stop(): void {
    this.stopped = true;
  }

  private thinkThenRun(): void {
    const gapMs = -this.knobs.registerThinkMsMean * Math.log(1 - this.prng.next());
    this.cluster.schedule(this.cluster.nowUs + msToUs(gapMs), 'register client', () => this.run());
  }

  private run(): void {
    if (this.stopped) return;
    const key = this.pickKey();
    const roll = this.prng.next();
    const kind = roll < this.knobs.readFraction ? 'get' : this.prng.chance(this.knobs.casFraction) ? 'cas' : 'put';
    key.opCount++;
    const writeId = this.nextValue++;
    const value = `w${writeId}`;
    const expected = this.lastSeen.get(key.name) ?? null;
    const input: KvInput =
      kind === 'get'
        ? { kind, key: key.name }
        : kind === 'cas'
          ? { kind, key: key.name, expected, value }
          : { kind, key: key.name, value };
    const command: KvCommand | null =
      kind === 'get'
        ? null
        : kind === 'cas'
          ? { op: 'cas', key: key.name, expected, value, writeId }
          : { op: 'put', key: key.name, value, writeId };
    const operation: Operation = {
      op: this.history.invoke(input, this.cluster.nowUs),
      key,
      kind,
      state: 'asking',
      node: null,
      incarnation: 0,
      forwarded: false,
      viaPeer: false,
      index: 0,
      callId: 0,
      attemptCount: 0,
      command,
      data: command ? encodeCommand(command) : null,
      onDone: () => this.thinkThenRun(),
    };
    const timeoutMs = this.knobs.registerTimeoutMs ?? SIM_LIMITS.clientTimeoutMs;
    this.cluster.schedule(this.cluster.nowUs + msToUs(timeoutMs), 'register client timeout', () => {
      if (operation.state !== 'done') this.indeterminate(operation);
    });
    if (kind === 'get') this.startRead(operation);
    else this.attemptWrite(operation);
  }

  /** pickKey: one of the active keys, retiring any that has had its share. */
  private pickKey(): RegisterKey {
    for (let i = 0; i < this.activeKeys.length; i++) {
      const k = this.activeKeys[i]!;
      if (
        k.opCount >= SIM_LIMITS.registerKeyOpCountMax ||
        k.indeterminateWriteCount >= SIM_LIMITS.registerKeyIndeterminateWriteCountMax
      ) {
        this.activeKeys[i] = this.newKey();
      }
    }
    while (this.activeKeys.length < SIM_LIMITS.registerActiveKeyCount) this.activeKeys.push(this.newKey());
    return this.prng.pick(this.activeKeys);
  }

  private newKey(): RegisterKey {
    return { name: `${REGISTER_KEY_PREFIX}${this.nextKey++}`, opCount: 0, indeterminateWriteCount: 0 };
  }

  // ---------------------------------------------------------------- reads

  private startRead(o: Operation): void {
    const live = this.cluster.nodes.filter((n) => n.isLive);
    if (live.length === 0) return this.drop(o);
    const anyNode = this.prng.chance(this.knobs.anyNodeFraction);
    const guess = this.readLeaderGuess >= 0 ? this.cluster.nodes[this.readLeaderGuess]! : undefined;
    const node = !anyNode && guess?.isLive ? guess : this.prng.pick(live);
    this.counts.readsIssued++;
    o.node = node;
    o.incarnation = node.incarnation;
    this.askIndex(o, node);
  }

  /** askIndex asks engineNode's engine; asker: the node forwarding the read to it (its id and term as it sends). */
  private askIndex(o: Operation, engineNode: SimNode, asker?: ReadIndexAsker): void {
    o.callId = this.cluster.readIndex(engineNode.index, this.prng.uniform(0, 2), asker);
    this.readsAsking.set(o.callId, o);
  }

  private onReadIndexResult(node: SimNode, readId: number, index: number, refusal: string | null, hint: string): void {
    const o = this.readsAsking.get(readId);
    if (!o) return;
    this.readsAsking.delete(readId);
    if (o.state !== 'asking') return;
    if (!this.sameIncarnation(o)) return this.indeterminate(o);
    if (refusal === null) {
      o.index = index;
      o.state = 'waiting';
      if (!o.forwarded) this.readLeaderGuess = node.index;
      this.waiting.push(o);
      this.serveWaiting();
      return;
    }
    const leader = hint ? this.cluster.nodeByGrpcAddr(hint) : undefined;
    const asked = o.node!;
    const canForward = refusal === 'not-leader' && (!o.forwarded || (o.viaPeer && node !== asked));
    if (canForward && leader && leader !== asked && leader !== node) {
      // The asked node's driver forwards to the leader its engine (or the peer it asked) names, over the cluster
      // network: once, as StoreRouter follows one hint between pauses.
      o.viaPeer = false;
      return this.forward(o, asked, leader);
    }
    if (refusal === 'not-leader' && !leader && !o.forwarded && this.knobs.askerAck === true) {
      // Knowing no leader, StoreRouter asks a peer (peerToAsk, each in turn), which serves the read index if it
      // leads or names its leader; only in askerAck runs, so the other seeds run as before.
      const peer = this.peerToAsk(asked);
      if (peer) {
        o.viaPeer = true;
        return this.forward(o, asked, peer);
      }
    }
    this.readLeaderGuess = leader && leader !== node ? leader.index : -1;
    this.drop(o);
  }

  /** forward sends the read's index request from `asked` to `to` (dropped when the network between them is cut). */
  private forward(o: Operation, asked: SimNode, to: SimNode): void {
    const net = this.cluster.network;
    if (net.isBlocked(asked.index, to.index) || net.isBlocked(to.index, asked.index)) return this.drop(o);
    o.forwarded = true;
    // A real follower's request names it by its certificate and carries its term as it sends (askerAck).
    const status = this.knobs.askerAck === true ? asked.engine?.status() : undefined;
    this.askIndex(o, to, status ? { id: status.id, term: status.term } : undefined);
  }

  /** peerToAsk: the next live node other than `asked`, in turn (StoreRouter.peerToAsk; no PRNG draw). */
  private peerToAsk(asked: SimNode): SimNode | undefined {
    const peers = this.cluster.nodes.filter((n) => n !== asked && n.isLive);
    return peers.length === 0 ? undefined : peers[this.peerTurn++ % peers.length];
  }

  private serveWaiting(): void {
    // This runs after every event while a read waits; most events move none of them: then the pass below would
    // keep every operation, in order, so it is skipped (no new list per event).
    if (this.waiting.every((o) => this.keepsWaiting(o))) return;
    const still: Operation[] = [];
    for (const o of this.waiting) {
      if (o.state !== 'waiting') continue;
      if (!this.sameIncarnation(o)) {
        this.indeterminate(o);
        continue;
      }
      const node = o.node!;
      if (node.state !== 'up' || node.machine.appliedSeq < o.index) {
        still.push(o);
        continue;
      }
      // A filtered member serves reads of its communities only (store/replicated-store.ts localGet): any other
      // read — and every read while it refills after a filter change — is refused, never answered from its state.
      const status = node.engine?.status();
      if (status && (status.filter || status.filteredData)) {
        const filter = status.filter;
        const current = filter && JSON.stringify(status.dataFilter) === JSON.stringify(filter);
        if (!filter || !current || !inCommunities(filter, { key: o.key.name, tenant: '' })) {
          this.drop(o);
          continue;
        }
      }
      const value = node.machine.get(o.key.name) ?? null;
      this.counts.readsServed++;
      if (o.forwarded) this.counts.followerReadsServed++;
      if (o.forwarded && this.knobs.askerAck === true) this.counts.askerReadsServed++;
      this.lastSeen.set(o.key.name, value);
      this.complete(o, () => this.history.complete(o.op, { kind: 'get', value }, this.cluster.nowUs));
    }
    this.waiting = still;
  }

  /** keepsWaiting: serveWaiting would keep `o` waiting, untouched (its node still up to it, not yet applied to its index). */
  private keepsWaiting(o: Operation): boolean {
    return (
      o.state === 'waiting' &&
      this.sameIncarnation(o) &&
      (o.node!.state !== 'up' || o.node!.machine.appliedSeq < o.index)
    );
  }

  private sameIncarnation(o: Operation): boolean {
    return o.node !== null && o.node.isLive && o.node.incarnation === o.incarnation;
  }

  // ---------------------------------------------------------------- writes

  private attemptWrite(o: Operation): void {
    if (o.state === 'done') return;
    const target = this.pickWriteTarget(o);
    if (target < 0 || o.attemptCount >= SIM_LIMITS.clientAttemptCountMax) return this.drop(o);
    if (o.attemptCount === 0) this.counts.writesIssued++;
    o.attemptCount++;
    o.callId = this.cluster.propose(target, o.data!, this.prng.uniform(0, 2));
    this.writesAwaiting.set(o.callId, o);
  }

  private onProposalResult(
    node: SimNode,
    proposalId: number,
    ok: boolean,
    seq: number,
    hint: string,
    code: ProposalResultCode,
  ): void {
    const o = this.writesAwaiting.get(proposalId);
    if (!o) return;
    this.writesAwaiting.delete(proposalId);
    if (o.state === 'done') return;
    if (ok) {
      this.counts.writesAcked++;
      this.writeLeaderGuess = node.index;
      return this.settleAcknowledged(o, node, seq);
    }
    const hinted = hint ? this.cluster.nodeByGrpcAddr(hint) : undefined;
    this.writeLeaderGuess = hinted && hinted !== node ? hinted.index : -1;
    if (!DEFINITE_REFUSALS.has(code)) return this.indeterminate(o);
    const delayMs = this.prng.uniform(0, SIM_LIMITS.clientRetryDelayMsMax);
    this.cluster.schedule(this.cluster.nowUs + msToUs(delayMs), 'register client retry', () => this.attemptWrite(o));
  }

  /** settleAcknowledged: a put is done; a cas did what the acknowledging leader's machine did at its seq. */
  private settleAcknowledged(o: Operation, node: SimNode, seq: number): void {
    const command = o.command!;
    if (command.op === 'put') {
      this.lastSeen.set(command.key, command.value);
      return this.complete(o, () => this.history.complete(o.op, { kind: 'put' }, this.cluster.nowUs));
    }
    const swapped = node.machine.casOutcome(seq);
    if (swapped === undefined) return this.indeterminate(o);
    if (swapped) this.lastSeen.set(command.key, command.value);
    this.complete(o, () => this.history.complete(o.op, { kind: 'cas', swapped }, this.cluster.nowUs));
  }

  /** pickWriteTarget: the believed leader, or (first attempts, anyNodeFraction of them) any live node. */
  private pickWriteTarget(o: Operation): number {
    const anyNode = o.attemptCount === 0 && this.prng.chance(this.knobs.anyNodeFraction);
    if (!anyNode && this.writeLeaderGuess >= 0 && this.cluster.nodes[this.writeLeaderGuess]!.isLive)
      return this.writeLeaderGuess;
    const live = this.cluster.nodes.filter((n) => n.isLive);
    return live.length === 0 ? -1 : this.prng.pick(live).index;
  }

  // ---------------------------------------------------------------- outcomes

  private complete(o: Operation, record: () => void): void {
    if (o.state === 'done') return;
    record();
    this.finish(o);
  }

  /** indeterminate: the client cannot know what happened (timeout, lost connection, unknown outcome). */
  private indeterminate(o: Operation): void {
    if (o.state === 'done') return;
    this.history.indeterminate(o.op);
    if (o.kind === 'get') {
      this.readLeaderGuess = -1;
    } else {
      o.key.indeterminateWriteCount++;
      this.writeLeaderGuess = -1;
    }
    this.finish(o);
  }

  private drop(o: Operation): void {
    if (o.state === 'done') return;
    this.history.drop(o.op);
    this.finish(o);
  }

  private finish(o: Operation): void {
    o.state = 'done';
    if (o.kind === 'get') this.readsAsking.delete(o.callId);
    else this.writesAwaiting.delete(o.callId);
    o.onDone();
  }
}
