// RpcRouter carries calls between engines over the simulated network: the
// call table, deadlines, refusals, stream ordering, duplicate answers, snapshot
// transfer (verify, install) and status polls. The Cluster hosts it. In the lockstep
// world (sim/presets.ts) a call that cannot get through fails at once, and a script
// may drop calls by rule, corrupt the next snapshot, or call a node as a client.
import type { Effect, EngineLimits, Input, SnapshotFailureCode, SnapshotFilter } from '../engine/types.js';
import type { RpcRequest, RpcStatus, SnapshotHeader } from '../engine/rpc.js';
import { StatusCode, TRAILER_REFUSAL } from '../engine/rpc.js';
import { adoptSnapshot, snapshotMetaProblem, SNAPSHOT_NOT_NEEDED } from '../engine/snapshot-install.js';
import { readMeta, readStateText, STATE_FILE, verifyFiles, type Artifact } from './artifacts.js';
import type { DropRule } from './drop-rule.js';
import type { ClientListener } from './events.js';
import { CallTable, type CallKind, type OutboundCall } from './calls.js';
import type { CheckerSuite } from './checkers/suite.js';
import type { SimEvent } from './events.js';
import type { Coverage } from './coverage.js';
import { lateArrivalUs, slowSnapshotArrivalUs } from './late-answers.js';
import { SIM_LIMITS, msToUs } from './limits.js';
import { LOST, type Network } from './network.js';
import type { SimNode } from './node.js';
import { strayKey } from './state-machine.js';
import type { Prng } from './prng.js';
import type { Trace } from './trace.js';
import { describeInput, describeRequest } from './trace-format.js';
import { violate } from './violation.js';
import {
  carryChunk,
  carryHeader,
  carryRequest,
  carryResponse,
  shallowRequest,
  shallowResponse,
  unreachable,
} from './wire.js';

/** RouterHost is what the router needs from the world around it. */
export interface RouterHost {
  now(): number;
  readonly nodes: readonly SimNode[];
  readonly network: Network;
  readonly limits: EngineLimits;
  readonly tickMs: number;
  readonly checkers: CheckerSuite;
  push(atUs: number, event: SimEvent): void;
  step(node: SimNode, input: Input): void;
  guard<T>(node: SimNode, what: string, run: () => T): T;
  nodeByGrpcAddr(addr: string): SimNode | undefined;
  /** clusterId is this cluster's id; every call carries it on the wire, as the real peer calls do. */
  readonly clusterId: string;
  /** trace takes view notes: each network message with its fate, for the trace viewer (sim/view/). */
  readonly trace: Trace;
  /** coverage counts rare situations (sim/coverage.ts): here, a snapshot that arrives stale. */
  readonly coverage: Coverage;
}

/** ForeignCall describes a forged call a server took in (sim/foreign.ts), for the foreign-traffic checker. */
export interface ForeignCall {
  kind: string;
  cluster: string;
}

/** ClientAnswer is one answer to a script's client call. */
export type ClientAnswer = Parameters<ClientListener>[0];

export class RpcRouter {
  readonly calls = new CallTable();
  /** dropRules: a script's drop rules (Cluster.drop); consulted only in the lockstep world. */
  readonly dropRules: DropRule[] = [];
  /** corruptNextSnapshot: the next snapshot shipped has a flipped byte in state.json (a script's fault). */
  corruptNextSnapshot = false;
  /**
   * delayNextSnapshotUs: the next snapshot shipped arrives this much later than the network would bring it
   * (a script's slow transfer; 0 = none), never past its call's deadline.
   */
  delayNextSnapshotUs = 0;
  /** clientCalls: server callIds of a script's client calls, with who hears the answers. */
  private readonly clientCalls = new Map<number, ClientListener>();
  /** clientCallIds: every server callId a script's client call had (checkers tell them from members' calls). */
  readonly clientCallIds = new Set<number>();
  /** foreignCalls: server callIds of forged calls that reached an engine, by callId. */
  readonly foreignCalls = new Map<number, ForeignCall>();
  /** otherClusterRefusals counts calls refused at the edge for carrying another cluster's id. */
  otherClusterRefusals = 0;
  private wireCount = 0;
  /** messageCount numbers view-noted messages (1, 2, ...); 0 means not noted. */
  private messageCount = 0;

  constructor(
    private readonly host: RouterHost,
    private readonly prng: Prng,
    private readonly snapshotCorruptProbability: number,
    private readonly wireEvery: number,
    /** latePrng draws late answers only, so runs without them draw what they did before. */
    private readonly latePrng: Prng | null = null,
    /** lockstep: calls that cannot get through fail at once (see ClusterConfig.lockstep). */
    private readonly lockstep = false,
    /** slowPrng draws slow snapshot transfers only (sim/late-answers.ts), so runs without them draw what they did before. */
    private readonly slowPrng: Prng | null = null,
  ) {}

  call(node: SimNode, requestId: number, to: string, request: RpcRequest, kind: CallKind): void {
    if (node.openRequests.has(requestId)) {
      violate(
        'engine-contract',
        `${node.name} reused requestId ${requestId} while that call is still open`,
        node.index,
      );
    }
    const call = this.calls.open({
      caller: node.index,
      callerInc: node.incarnation,
      requestId,
      method: request.method,
      kind,
    });
    node.openRequests.set(requestId, call.key);
    const electionUs = msToUs(this.host.limits.electionTimeoutTicks * this.host.tickMs);
    const deadlineUs =
      kind === 'unary'
        ? SIM_LIMITS.callDeadlineElectionTimeouts * electionUs
        : Math.max(
            SIM_LIMITS.callDeadlineElectionTimeouts * electionUs,
            msToUs((this.host.limits.pullTimeoutTicks + SIM_LIMITS.pullDeadlineExtraTicks) * this.host.tickMs),
          );
    call.deadlineUs = this.host.now() + deadlineUs;
    call.callerTerm = node.status?.term ?? 0;
    this.host.push(call.deadlineUs, { k: 'deadline', node: node.index, inc: node.incarnation, callKey: call.key });
    const target = this.host.nodeByGrpcAddr(to);
    if (!target) {
      this.refuse(call.key, -1);
      return;
    }
    if (
      this.lockstep &&
      (this.host.network.isBlocked(node.index, target.index) || this.dropped(node, target, request.method))
    ) {
      this.refuse(call.key, target.index);
      return;
    }
    const carried = this.onWire()
      ? this.host.guard(node, `encode ${request.method}`, () => carryRequest(request))
      : shallowRequest(request);
    const atUs = this.host.network.send(node.index, target.index, this.host.now());
    const cluster = this.host.clusterId;
    const msg = this.noteMessage(node.index, target.index, atUs, request.method, false, false, request);
    if (atUs !== LOST)
      this.host.push(atUs, {
        k: 'request',
        node: target.index,
        from: node.index,
        callKey: call.key,
        request: carried,
        copy: false,
        cluster,
        foreign: '',
        afterCrashOf: undefined,
        msg,
        client: undefined,
      });
    for (const copyAtUs of this.host.network.extraCopies(node.index, target.index, this.host.now())) {
      const copyMsg = this.noteMessage(node.index, target.index, copyAtUs, request.method, false, true, request);
      this.host.push(copyAtUs, {
        k: 'request',
        node: target.index,
        from: node.index,
        callKey: call.key,
        request: carried,
        copy: true,
        cluster,
        foreign: '',
        afterCrashOf: undefined,
        msg: copyMsg,
        client: undefined,
      });
    }
  }

  /**
   * noteMessage writes a view note for one message (sim/trace.ts): who sent it to whom, when, its
   * planned arrival (-1: lost on the network), its method and whether it is an answer or a copy.
   * Returns its id for the delivery note, 0 when the trace takes no notes. `about` is the request or input it
   * carries, or a function giving its text: described only when noted (no closure per message on the hot path).
   */
  private noteMessage(
    from: number,
    to: number,
    atUs: number,
    method: string,
    answer: boolean,
    copy: boolean,
    about: RpcRequest | Input | (() => string),
  ): number {
    if (!this.host.trace.takesNotes) return 0;
    const description =
      typeof about === 'function' ? about() : 'method' in about ? describeRequest(about) : describeInput(about);
    const id = ++this.messageCount;
    const extra = (answer ? ',"a":1' : '') + (copy ? ',"c":1' : '');
    this.host.trace.note(
      `{"v":"m","m":${id},"f":${from},"to":${to},"t":${this.host.now()},"at":${atUs},"k":"${method}"${extra},"d":${JSON.stringify(description)}}`,
    );
    return id;
  }

  /** onWire says whether this message takes the full protobuf round trip (a deterministic sample). */
  private onWire(): boolean {
    if (this.wireEvery <= 0) return false;
    this.wireCount++;
    return this.wireCount % this.wireEvery === 0;
  }

  /** refuse answers a call whose target is down or unknown: the connection is refused, quickly. */
  refuse(callKey: number, _target: number): void {
    const call = this.calls.outbound.get(callKey);
    if (!call) return;
    const input: Input =
      call.kind === 'snapshot'
        ? { type: 'snapshotFailed', requestId: call.requestId, code: 'failed', reason: 'connection refused' }
        : {
            type: 'callFailed',
            requestId: call.requestId,
            status: status(StatusCode.UNAVAILABLE, 'connection refused'),
          };
    this.host.push(this.host.now() + (this.lockstep ? 0 : msToUs(SIM_LIMITS.connectRefusedDelayMs)), {
      k: 'answer',
      node: call.caller,
      inc: call.callerInc,
      netFrom: -1,
      callKey,
      input,
      final: true,
      lateFromTerm: undefined,
      msg: undefined,
    });
  }

  settle(call: OutboundCall): void {
    this.calls.outbound.delete(call.key);
    const node = this.host.nodes[call.caller]!;
    if (node.openRequests.get(call.requestId) === call.key) node.openRequests.delete(call.requestId);
  }

  /**
   * serve hands a call to the server's engine — unless it carries another cluster's id, which the
   * edge refuses first (FAILED_PRECONDITION, x-svc-refusal: other-cluster), as a real node does.
   */
  serve(node: SimNode, event: Extract<SimEvent, { k: 'request' }>): void {
    if (event.cluster !== this.host.clusterId) {
      this.otherClusterRefusals++;
      const call = this.calls.outbound.get(event.callKey);
      if (!call || event.copy) return;
      const refusal: RpcStatus = {
        code: StatusCode.FAILED_PRECONDITION,
        details: `cluster id ${event.cluster} is not ${this.host.clusterId}`,
        trailers: { [TRAILER_REFUSAL]: 'other-cluster' },
      };
      const atUs = this.planAnswer(node.index, call);
      const input: Input = { type: 'callFailed', requestId: call.requestId, status: refusal };
      const msg = this.noteMessage(node.index, call.caller, atUs, call.method, true, false, input);
      if (atUs !== LOST)
        this.host.push(atUs, {
          k: 'answer',
          node: call.caller,
          inc: call.callerInc,
          netFrom: node.index,
          callKey: call.key,
          input,
          final: true,
          lateFromTerm: undefined,
          msg,
        });
      return;
    }
    const inbound = this.calls.accept(event.callKey, node.index, node.incarnation, event.request);
    if (event.foreign !== '') this.foreignCalls.set(inbound.callId, { kind: event.foreign, cluster: event.cluster });
    if (event.client) {
      this.clientCalls.set(inbound.callId, event.client);
      this.clientCallIds.add(inbound.callId);
    }
    const pulls = event.request.method === 'StreamSegments' || event.request.method === 'FetchSnapshot';
    const callerId = pulls ? this.callerIdOf(node, event.from) : 0;
    // callerId always present (0 = none, as the engine reads an absent one): one input shape for every request.
    this.host.step(node, { type: 'request', callId: inbound.callId, request: event.request, callerId });
    inbound.served = true;
  }

  /**
   * callerIdOf: the member id the server's roster gives the calling node's name, 0 = none (a forged or
   * client call, or a name the roster does not list) — what a real node's peer gate reads from the
   * caller's certificate (transports/grpc/peer-gate.ts).
   */
  private callerIdOf(server: SimNode, from: number): number {
    const caller = from >= 0 ? this.host.nodes[from] : undefined;
    if (!caller) return 0;
    const roster = server.status?.roster;
    return roster?.members.find((m) => m.name === caller.id.name)?.id ?? 0;
  }

  /**
   * injectForeign delivers a forged call (sim/foreign.ts) from outside the cluster: no caller, so
   * nothing answers back; a plain network delay, no partition applies (the attacker is elsewhere).
   */
  injectForeign(target: SimNode, request: RpcRequest, cluster: string, kind: string): void {
    const atUs = this.host.now() + this.host.network.shortDelayUs();
    this.host.push(atUs, {
      k: 'request',
      node: target.index,
      from: -1,
      callKey: 0,
      request,
      copy: false,
      cluster,
      foreign: kind,
      afterCrashOf: undefined,
      msg: undefined,
      client: undefined,
    });
  }

  /** injectClient delivers a script's client call: no caller and no partition; `listener` hears the answers. */
  injectClient(target: SimNode, request: RpcRequest, listener: ClientListener): void {
    const atUs = this.host.now() + this.host.network.shortDelayUs();
    this.host.push(atUs, {
      k: 'request',
      node: target.index,
      from: -1,
      callKey: 0,
      request,
      copy: false,
      cluster: this.host.clusterId,
      foreign: '',
      afterCrashOf: undefined,
      msg: undefined,
      client: listener,
    });
  }

  /** dropped: a script's drop rule takes this call (each rule lets its first `skip` matches through). */
  dropped(from: SimNode, to: SimNode, method: string): boolean {
    for (const rule of this.dropRules) {
      const matches =
        (rule.from === '*' || rule.from === from.name) &&
        (rule.to === '*' || rule.to === to.name) &&
        (rule.method === '*' || rule.method === method);
      if (!matches || rule.remaining === 0) continue;
      if (rule.skip > 0) {
        rule.skip--;
        continue;
      }
      rule.remaining--;
      return true;
    }
    return false;
  }

  answer(server: SimNode, effect: Extract<Effect, { callId: number }>): void {
    const inbound = this.calls.inbound.get(effect.callId);
    if (!inbound || inbound.serverInc !== server.incarnation || inbound.server !== server.index) {
      violate(
        'engine-contract',
        `${server.name} answered (${effect.type}) call ${effect.callId}, which is not open`,
        server.index,
      );
    }
    const method = inbound.request.method;
    const wrongMethod =
      (effect.type === 'reply' && effect.response.method !== method) ||
      ((effect.type === 'streamChunk' || effect.type === 'streamEnd') && method !== 'StreamSegments') ||
      (effect.type === 'serveSnapshot' && method !== 'FetchSnapshot') ||
      (effect.type === 'reply' && (method === 'StreamSegments' || method === 'FetchSnapshot'));
    if (wrongMethod)
      violate('engine-contract', `${server.name} answered a ${method} call with ${effect.type}`, server.index);
    if (effect.type !== 'streamChunk') this.calls.inbound.delete(effect.callId);
    if (
      effect.type === 'reply' &&
      effect.response.method === 'RequestVote' &&
      inbound.request.method === 'RequestVote'
    ) {
      this.host.checkers.onVote(server, server.status!, inbound.request.body, effect.response.body);
    }
    const client = this.clientCalls.get(effect.callId);
    if (client) {
      if (effect.type !== 'streamChunk') this.clientCalls.delete(effect.callId);
      client(effect);
      return;
    }
    const call = this.calls.outbound.get(inbound.callKey);
    if (!call) return;
    if (call.kind !== 'unary') {
      if (call.owner === 0) call.owner = effect.callId;
      else if (call.owner !== effect.callId) return;
    }
    if (effect.type === 'serveSnapshot') {
      this.shipSnapshot(server, call, effect.header, effect.filter);
      return;
    }
    let input: Input;
    let final = true;
    switch (effect.type) {
      case 'reply':
        input = {
          type: 'response',
          requestId: call.requestId,
          response: this.onWire()
            ? this.host.guard(server, 'encode reply', () => carryResponse(effect.response))
            : shallowResponse(effect.response),
        };
        break;
      case 'replyError':
        input = { type: 'callFailed', requestId: call.requestId, status: copyStatus(effect.status) };
        break;
      case 'streamChunk':
        input = {
          type: 'streamChunk',
          requestId: call.requestId,
          chunk: this.onWire()
            ? this.host.guard(server, 'encode chunk', () => carryChunk(effect.chunk))
            : { ...effect.chunk },
        };
        final = false;
        break;
      case 'streamEnd':
        input = { type: 'streamEnded', requestId: call.requestId };
        break;
      default:
        return unreachable(effect);
    }
    // A live stream's chunk (pushed after the step that served the call) is a segment a script's drop rule for
    // ShipSegment from this server takes, as it takes the ShipSegment call it replaces: the stream is cut there.
    if (
      this.lockstep &&
      effect.type === 'streamChunk' &&
      inbound.served === true &&
      !call.streamLost &&
      this.dropped(server, this.host.nodes[call.caller]!, 'ShipSegment')
    ) {
      call.streamLost = true;
      this.failAtOnce(call);
      return;
    }
    const lostBefore = call.streamLost;
    const atUs = this.planAnswer(server.index, call);
    const msg = this.noteMessage(server.index, call.caller, atUs, call.method, true, false, input);
    if (atUs === LOST) {
      if (this.lockstep && !lostBefore) this.failAtOnce(call);
      return;
    }
    const lateUs = call.kind === 'unary' ? this.lateUs(call, atUs) : null;
    if (lateUs !== null) {
      this.host.push(lateUs, {
        k: 'answer',
        node: call.caller,
        inc: call.callerInc,
        netFrom: server.index,
        callKey: call.key,
        input,
        final,
        lateFromTerm: call.callerTerm,
        msg,
      });
      return;
    }
    this.host.push(atUs, {
      k: 'answer',
      node: call.caller,
      inc: call.callerInc,
      netFrom: server.index,
      callKey: call.key,
      input,
      final,
      lateFromTerm: undefined,
      msg,
    });
  }

  /** lateUs: a held-back arrival time for this unary answer (sim/late-answers.ts), or null. */
  private lateUs(call: OutboundCall, atUs: number): number | null {
    const probability = this.host.network.currentKnobs.lateAnswerProbability ?? 0;
    if (!this.latePrng || probability <= 0) return null;
    const electionUs = msToUs(this.host.limits.electionTimeoutTicks * this.host.tickMs);
    return lateArrivalUs(this.latePrng, probability, atUs, this.host.now(), call.deadlineUs, electionUs);
  }

  /**
   * planAnswer sends one answer message. A stream's fate (lost or not) is drawn at its first
   * message; later ones stay in order and are only cut by a partition, which kills the rest.
   */
  private planAnswer(server: number, call: OutboundCall): number {
    if (call.streamLost) return LOST;
    if (call.kind === 'unary') return this.host.network.send(server, call.caller, this.host.now());
    let atUs = this.host.network.send(server, call.caller, this.host.now(), call.lastArrivalUs > 0);
    if (atUs === LOST) {
      call.streamLost = true;
      return LOST;
    }
    atUs = Math.max(atUs, call.lastArrivalUs);
    call.lastArrivalUs = atUs;
    return atUs;
  }

  /**
   * shipSnapshot answers a FetchSnapshot with the artifact the header names — or, with `cut` (the caller is a
   * filtered member), that artifact cut to its communities (ArtifactStore.cutFor): its own header and files,
   * so no byte of another community is sent.
   */
  private shipSnapshot(server: SimNode, call: OutboundCall, offered: SnapshotHeader, cut?: SnapshotFilter): void {
    let header = offered;
    let files: Map<string, Uint8Array> | null = null;
    let failure = '';
    if (offered.needed) {
      const artifact = server.artifacts.forHeader(offered);
      const served = artifact && cut ? server.artifacts.cutFor(artifact, cut) : artifact;
      if (!served)
        failure = `server ${server.name} has no artifact matching the header it served (seq ${offered.snapshotSeq})`;
      else {
        if (cut) header = { ...served.header, term: offered.term, leaderRegion: offered.leaderRegion };
        files = this.maybeCorrupt(served.files);
      }
    }
    const carried = this.onWire()
      ? this.host.guard(server, 'encode snapshot header', () => carryHeader(header))
      : { ...header };
    const atUs = this.planAnswer(server.index, call);
    const msg = this.noteMessage(
      server.index,
      call.caller,
      atUs,
      call.method,
      true,
      false,
      () => `snapshot ${header.needed ? header.snapshotSeq : 'not-needed'}`,
    );
    if (atUs === LOST) {
      if (this.lockstep) this.failAtOnce(call);
      return;
    }
    const slowUs = this.slowSnapshotUs(call, atUs);
    this.host.push(slowUs ?? atUs, {
      k: 'snapshot',
      node: call.caller,
      inc: call.callerInc,
      from: server.index,
      callKey: call.key,
      header: carried,
      files,
      failure,
      msg,
    });
  }

  /**
   * slowSnapshotUs: a held-back arrival time for this snapshot answer, or null. A script's
   * delayNextSnapshotUs holds the next one by that much; the seeded runs hold one with the network's
   * slowSnapshotProbability (sim/late-answers.ts), often past the puller's pull timeout. Either way the
   * answer lands before the call's deadline, so it still counts: the puller may have moved on by then
   * (a newer fetch installed, a new leader streamed to it), and the snapshot may have gone stale.
   */
  private slowSnapshotUs(call: OutboundCall, atUs: number): number | null {
    if (this.delayNextSnapshotUs > 0) {
      const heldUs = Math.min(atUs + this.delayNextSnapshotUs, call.deadlineUs - 1);
      this.delayNextSnapshotUs = 0;
      return heldUs > atUs ? heldUs : null;
    }
    const probability = this.host.network.currentKnobs.slowSnapshotProbability ?? 0;
    if (!this.slowPrng || probability <= 0) return null;
    const electionUs = msToUs(this.host.limits.electionTimeoutTicks * this.host.tickMs);
    return slowSnapshotArrivalUs(this.slowPrng, probability, atUs, this.host.now(), call.deadlineUs, electionUs);
  }

  /** failAtOnce: in the lockstep world an answer the network cut fails its call now (the caller's deadline, without the wait). */
  private failAtOnce(call: OutboundCall): void {
    const input: Input =
      call.kind === 'snapshot'
        ? { type: 'snapshotFailed', requestId: call.requestId, code: 'failed', reason: 'deadline exceeded' }
        : {
            type: 'callFailed',
            requestId: call.requestId,
            status: status(StatusCode.DEADLINE_EXCEEDED, 'deadline exceeded'),
          };
    this.host.push(this.host.now(), {
      k: 'answer',
      node: call.caller,
      inc: call.callerInc,
      netFrom: -1,
      callKey: call.key,
      input,
      final: true,
      lateFromTerm: undefined,
      msg: undefined,
    });
  }

  private maybeCorrupt(files: Map<string, Uint8Array>): Map<string, Uint8Array> {
    const copy = new Map(files);
    if (this.corruptNextSnapshot && copy.has(STATE_FILE)) {
      this.corruptNextSnapshot = false;
      // The case of the last letter flips: still well-formed JSON, so only the BLAKE3 check can tell.
      const bytes = Uint8Array.from(copy.get(STATE_FILE)!);
      let at = bytes.length - 1;
      while (at > 0 && !(bytes[at]! >= 0x61 && bytes[at]! <= 0x7a)) at--;
      if (bytes.length > 0) bytes[at] ^= 0x20;
      copy.set(STATE_FILE, bytes);
      return copy;
    }
    if (!this.prng.chance(this.snapshotCorruptProbability)) return copy;
    const paths = [...copy.keys()];
    const path = this.prng.pick(paths);
    const bytes = Uint8Array.from(copy.get(path)!);
    if (bytes.length > 0) bytes[this.prng.int(bytes.length)] ^= 0x20;
    copy.set(path, bytes);
    return copy;
  }

  /**
   * receiveSnapshot is the puller's install: verify every file (size, BLAKE3) and meta.json, then
   * adopt it the way every driver does (engine/snapshot-install.ts): stale refused, else the state
   * machine loads it, the WAL keeps what continues it, the artifact joins the node's store.
   */
  receiveSnapshot(node: SimNode, event: Extract<SimEvent, { k: 'snapshot' }>): void {
    const call = this.calls.outbound.get(event.callKey);
    if (!call) return;
    this.settle(call);
    const requestId = call.requestId;
    const fail = (reason: string, code: SnapshotFailureCode = 'failed'): void =>
      this.host.step(node, { type: 'snapshotFailed', requestId, code, reason });
    if (event.failure) return fail(event.failure);
    if (!event.header.needed) return fail(SNAPSHOT_NOT_NEEDED, 'not-needed');
    const files = event.files!;
    const badFile = verifyFiles(event.header, files);
    if (badFile) return fail(`bad artifact: ${badFile}`);
    const meta = readMeta(files);
    if (!meta) return fail('bad artifact: meta.json unreadable');
    const metaProblem = snapshotMetaProblem(meta, event.header);
    if (metaProblem) return fail(`bad artifact: ${metaProblem}`);
    if (meta.filter) {
      // What the leader says it cut is checked here too: a key outside the filter is never installed.
      const stray = strayKey(readStateText(files) ?? '', meta.filter.filter);
      if (stray !== null) return fail(`bad artifact: key ${stray} is outside the filter it was cut by`);
    }
    if (meta.seq <= node.machine.appliedSeq) this.host.coverage.add('snapshot-arrived-stale');
    if (meta.seq < node.machine.appliedSeq) this.host.coverage.add('snapshot-arrived-behind');
    const input = adoptSnapshot(
      requestId,
      meta,
      event.header,
      node.machine.appliedSeq,
      () => {
        const stateError = node.machine.load(readStateText(files) ?? '');
        if (stateError) return `bad artifact: ${stateError}`;
        node.storage.installSnapshot(meta);
        const artifact: Artifact = { meta, header: event.header, files, origin: 'installed' };
        node.artifacts.install(artifact);
        this.host.checkers.onArtifact(node, artifact, 'installed');
        if (meta.filter) this.host.coverage.add('filtered-snapshot-installed');
        return null;
      },
      node.engine?.snapshotExpectation?.() ?? { filtered: false },
    );
    // A filtered snapshot the member no longer expects (its filter changed since it asked) is refused.
    if (input.type === 'snapshotFailed' && input.code === 'wrong-filter')
      this.host.coverage.add('filtered-snapshot-refused');
    this.host.step(node, input);
  }

  answerStatus(target: SimNode, asker: number, askerInc: number): void {
    const leaderLastSeq = target.storage.durable.lastSeq;
    const atUs = this.host.network.send(target.index, asker, this.host.now());
    if (atUs === LOST) return;
    this.host.push(atUs, {
      k: 'input',
      node: asker,
      inc: askerInc,
      input: { type: 'statusPolled', leaderLastSeq },
      netFrom: target.index,
    });
  }
}

function status(code: RpcStatus['code'], details: string): RpcStatus {
  return { code, details, trailers: {} };
}

function copyStatus(s: RpcStatus): RpcStatus {
  return { code: s.code, details: s.details, trailers: { ...s.trailers } };
}
