// ScriptedCluster: a deterministic, fault-free-unless-told driver for scripted
// scenarios (scenarios/*.txt) and engine unit tests. Messages are delivered in
// FIFO order; the script decides partitions, drops, crashes and restarts. Disk
// writes are durable at once; snapshot artifacts are real bytes with a BLAKE3
// per file computed once at staging and verified at install.
import { blake3 } from '@noble/hashes/blake3.js';
import {
  Engine, bootstrapRoster, emptyRestoredState, DEFAULT_LIMITS, CURRENT_COMPAT, EntryKind, MemberRole,
  type Effect, type EngineConfig, type Input, type Compat, type EngineLimits, type SnapshotMeta, type Entry,
  type HardState, type SnapshotHeader, type RpcRequest, type RpcStatus, type RpcResponse, type Roster, type SnapshotFailureCode,
} from '../engine/index.js';

export interface ScriptedNode {
  name: string;
  addr: string;
  engine: Engine;
  config: EngineConfig;
  alive: boolean;
  /** applied is the state machine: committed entries in order (reset by a snapshot install). */
  applied: Entry[];
  effects: Effect[];
  disk: { hardState: HardState; wal: Entry[]; artifact: Artifact | null };
}

interface Artifact {
  meta: SnapshotMeta;
  header: SnapshotHeader;
  files: Map<string, Uint8Array>;
}

/** MessageRecord is one observed RPC event, for scenario expectations. */
export interface MessageRecord {
  from: string;
  to: string;
  method: string;
  kind: 'request' | 'response' | 'error' | 'chunk';
  request?: RpcRequest;
  response?: RpcResponse;
  status?: RpcStatus;
}

interface Pending { to: string; input: Input }

interface DropRule { from: string; to: string; method: string; remaining: number; skip: number }

export interface SafetyViolation { invariant: string; detail: string }

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
  /** seen: the values applied on `node` when the read was served (its state then). */
  seen: string[];
}

export class ScriptedCluster {
  readonly nodes = new Map<string, ScriptedNode>();
  readonly messages: MessageRecord[] = [];
  readonly violations: SafetyViolation[] = [];
  ticks = 0;
  private queue: Pending[] = [];
  private calls = new Map<string, { from: string; requestId: number; method: string }>();
  private injected = new Map<number, (outcome: MessageRecord) => void>();
  private nextCall = 1;
  private nextProposal = 1;
  private nextAdmin = 1;
  private nextRead = 1;
  readonly reads: ScriptedRead[] = [];
  private nextInjected = 1_000_000;
  private blockedLinks = new Set<string>();
  private dropRules: DropRule[] = [];
  private corruptNextArtifact = false;
  private readonly leadersByTerm = new Map<number, string>();
  private readonly appliedBySeq = new Map<number, string>();
  limits: EngineLimits = { ...DEFAULT_LIMITS };
  compat = new Map<string, Partial<Compat>>();

  static addr(name: string): string {
    return `${name}:7000`;
  }

  /** bootstrap founds a cluster: voters, then (optionally) founding learners; ids 1..n in order. */
  bootstrap(names: string[], learners: string[] = []): void {
    const all = [...names, ...learners];
    const roster = bootstrapRoster(all.map((n) => ({ name: n, grpcAddr: ScriptedCluster.addr(n), httpAddr: `http://${n}:8080` })));
    roster.members = roster.members.map((m) => (learners.includes(m.name) ? { ...m, role: MemberRole.Learner } : m));
    for (const name of all) this.add(name, roster, []);
  }

  add(name: string, roster: Roster | null, seeds: string[]): ScriptedNode {
    const config: EngineConfig = {
      name, grpcAddr: ScriptedCluster.addr(name), httpAddr: `http://${name}:8080`, bootstrapRoster: roster,
      seeds: seeds.map((s) => ScriptedCluster.addr(s)), randomSeed: this.nodes.size * 7919 + 17,
      compat: { ...CURRENT_COMPAT, ...(this.compat.get(name) ?? {}) }, limits: { ...this.limits },
    };
    const restored = emptyRestoredState();
    const node: ScriptedNode = {
      name, addr: config.grpcAddr, engine: new Engine(config, restored), config, alive: true, applied: [], effects: [],
      disk: { hardState: restored.hardState, wal: [], artifact: null },
    };
    this.nodes.set(name, node);
    return node;
  }

  node(name: string): ScriptedNode {
    const n = this.nodes.get(name);
    if (!n) throw new Error(`no node named ${name}`);
    return n;
  }

  private byAddr(addr: string): ScriptedNode | undefined {
    for (const n of this.nodes.values()) if (n.addr === addr) return n;
    return undefined;
  }

  // ------------------------------------------------------------ faults

  block(from: string, to: string): void {
    this.blockedLinks.add(`${from}>${to}`);
  }

  partition(groups: string[][]): void {
    for (const g of groups) for (const h of groups) {
      if (g === h) continue;
      for (const a of g) for (const b of h) this.block(a, b);
    }
  }

  isolate(name: string): void {
    for (const other of this.nodes.keys()) if (other !== name) { this.block(name, other); this.block(other, name); }
  }

  heal(): void {
    this.blockedLinks.clear();
    this.dropRules = [];
  }

  /** drop loses `count` (-1 = all) matching requests, after letting the first `skip` through. */
  drop(from: string, to: string, method: string, count: number, skip = 0): void {
    this.dropRules.push({ from, to, method, remaining: count, skip });
  }

  undrop(): void {
    this.dropRules = [];
  }

  corruptNextSnapshot(): void {
    this.corruptNextArtifact = true;
  }

  private linkUp(from: string, to: string): boolean {
    const a = this.byAddr(from)?.name ?? from;
    const b = this.byAddr(to)?.name ?? to;
    return !this.blockedLinks.has(`${a}>${b}`);
  }

  private dropped(from: string, to: string, method: string): boolean {
    const a = this.byAddr(from)?.name ?? from;
    const b = this.byAddr(to)?.name ?? to;
    for (const r of this.dropRules) {
      if ((r.from === '*' || r.from === a) && (r.to === '*' || r.to === b) && (r.method === '*' || r.method === method) && r.remaining !== 0) {
        if (r.skip > 0) {
          r.skip--;
          continue;
        }
        r.remaining--;
        return true;
      }
    }
    return false;
  }

  crash(name: string): void {
    const n = this.node(name);
    n.alive = false;
    this.queue = this.queue.filter((p) => p.to !== n.addr);
  }

  /** corruptWal models a WAL whose recovery found damage before its tail: the node restarts with its reseed marker. */
  corruptWal(name: string): void {
    const n = this.node(name);
    n.disk.hardState = { ...n.disk.hardState, reseed: true };
  }

  restart(name: string): void {
    const n = this.node(name);
    const art = n.disk.artifact;
    const base = art?.meta.seq ?? 0;
    n.engine = new Engine(n.config, {
      hardState: { ...n.disk.hardState }, snapshot: art?.meta ?? null, snapshotHeader: art?.header ?? null,
      entries: n.disk.wal.filter((e) => e.seq > base), appliedSeq: base,
    });
    n.applied = art ? decodeState(art.files.get('state.json')!) : [];
    n.alive = true;
  }

  // ------------------------------------------------------------ driving

  input(name: string, input: Input): void {
    const node = this.node(name);
    if (!node.alive) return;
    this.carryOut(node, node.engine.step(input));
    this.check();
  }

  private carryOut(node: ScriptedNode, effects: Effect[]): void {
    for (const e of effects) {
      node.effects.push(e);
      switch (e.type) {
        case 'saveHardState': node.disk.hardState = { ...e.hardState }; break;
        case 'append': {
          node.disk.wal = node.disk.wal.filter((x) => x.seq < e.fromSeq).concat(e.entries);
          const last = e.entries[e.entries.length - 1];
          if (last) this.queue.push({ to: node.addr, input: { type: 'entriesPersisted', lastSeq: last.seq, lastTerm: last.term } });
          break;
        }
        case 'compact': node.disk.wal = node.disk.wal.filter((x) => x.seq > e.throughSeq); break;
        case 'send': this.deliverRequest(node, e.requestId, e.to, e.request); break;
        case 'fetchSnapshot': this.runFetchSnapshot(node, e.requestId, e.to, e.request); break;
        case 'reply': case 'replyError': case 'streamChunk': case 'streamEnd': case 'serveSnapshot':
          this.deliverAnswer(node, e);
          break;
        case 'apply':
          for (const x of e.entries) {
            node.applied.push(x);
            this.noteApplied(node, x);
          }
          break;
        case 'resetStateMachine': node.applied = []; break;
        case 'stageSnapshot': this.stage(node, e.meta); break;
        case 'readIndexResult': this.onReadIndexResult(e); break;
        case 'pollStatus': {
          const leader = [...this.nodes.values()].find((n) => n.config.httpAddr === e.leaderHttpAddr && n.alive);
          if (leader && this.linkUp(node.addr, leader.addr) && !this.dropped(node.addr, leader.addr, 'Status')) this.queue.push({ to: node.addr, input: { type: 'statusPolled', leaderLastSeq: leader.engine.status().durableSeq } });
          break;
        }
        default: break;
      }
    }
  }

  private deliverRequest(node: ScriptedNode, requestId: number, to: string, request: RpcRequest): void {
    const target = this.byAddr(to);
    this.messages.push({ from: node.name, to: target?.name ?? to, method: request.method, kind: 'request', request });
    if (!target || !target.alive || !this.linkUp(node.addr, to) || this.dropped(node.addr, to, request.method)) {
      this.queue.push({ to: node.addr, input: { type: 'callFailed', requestId, status: { code: 14, details: 'unreachable', trailers: {} } } });
      return;
    }
    const callId = this.nextCall++;
    this.calls.set(`${target.addr}#${callId}`, { from: node.addr, requestId, method: request.method });
    this.queue.push({ to: target.addr, input: { type: 'request', callId, request } });
  }

  /** inject sends a raw request to a node from outside (a test client) and reports the outcome. */
  inject(toName: string, request: RpcRequest, onOutcome: (outcome: MessageRecord) => void): void {
    const target = this.node(toName);
    const callId = this.nextInjected++;
    this.injected.set(callId, onOutcome);
    this.calls.set(`${target.addr}#${callId}`, { from: 'client', requestId: callId, method: request.method });
    this.input(toName, { type: 'request', callId, request });
    this.deliver();
  }

  private deliverAnswer(node: ScriptedNode, e: Extract<Effect, { callId: number }>): void {
    const call = this.calls.get(`${node.addr}#${e.callId}`);
    if (!call) return;
    const caller = call.from === 'client' ? undefined : this.byAddr(call.from);
    const record: MessageRecord = { from: node.name, to: caller?.name ?? 'client', method: call.method, kind: 'response' };
    if (e.type === 'reply') record.response = e.response;
    if (e.type === 'replyError') { record.kind = 'error'; record.status = e.status; }
    if (e.type === 'streamChunk') record.kind = 'chunk';
    this.messages.push(record);
    const settle = e.type === 'reply' || e.type === 'replyError' || e.type === 'streamEnd' || e.type === 'serveSnapshot';
    if (call.from === 'client') {
      if (settle) {
        this.injected.get(call.requestId)?.(record);
        this.calls.delete(`${node.addr}#${e.callId}`);
      }
      return;
    }
    if (settle) this.calls.delete(`${node.addr}#${e.callId}`);
    if (!caller || !this.linkUp(node.addr, call.from)) {
      if (settle && caller) this.queue.push({ to: caller.addr, input: { type: 'callFailed', requestId: call.requestId, status: { code: 4, details: 'deadline exceeded', trailers: {} } } });
      return;
    }
    const requestId = call.requestId;
    if (e.type === 'reply') this.queue.push({ to: call.from, input: { type: 'response', requestId, response: e.response } });
    if (e.type === 'replyError') this.queue.push({ to: call.from, input: { type: 'callFailed', requestId, status: e.status } });
    if (e.type === 'streamChunk') this.queue.push({ to: call.from, input: { type: 'streamChunk', requestId, chunk: e.chunk } });
    if (e.type === 'streamEnd') this.queue.push({ to: call.from, input: { type: 'streamEnded', requestId } });
  }

  private stage(node: ScriptedNode, meta: SnapshotMeta): void {
    const files = new Map<string, Uint8Array>([
      ['meta.json', new TextEncoder().encode(JSON.stringify(meta))],
      ['state.json', encodeState(node.applied.filter((x) => x.seq <= meta.seq))],
    ]);
    // The hash of each file is computed here, once, and forwarded verbatim when served.
    const header: SnapshotHeader = {
      needed: true, snapshotSeq: meta.seq, term: node.engine.status().term, leaderRegion: node.engine.status().id,
      files: [...files].map(([path, bytes]) => ({ path, size: bytes.length, blake3: blake3(bytes) })),
    };
    node.disk.artifact = { meta, header, files };
    this.queue.push({ to: node.addr, input: { type: 'snapshotStaged', meta, header } });
  }

  /** runFetchSnapshot plays both ends of FetchSnapshot: the server's engine answers, the puller verifies and installs. */
  private runFetchSnapshot(node: ScriptedNode, requestId: number, to: string, request: Extract<RpcRequest, { method: 'FetchSnapshot' }>['body']): void {
    const server = this.byAddr(to);
    this.messages.push({ from: node.name, to: server?.name ?? to, method: 'FetchSnapshot', kind: 'request', request: { method: 'FetchSnapshot', body: request } });
    const fail = (reason: string, code: SnapshotFailureCode = 'failed'): void => {
      this.queue.push({ to: node.addr, input: { type: 'snapshotFailed', requestId, code, reason } });
    };
    if (!server || !server.alive || !this.linkUp(node.addr, to) || this.dropped(node.addr, to, 'FetchSnapshot')) return fail('unreachable');
    const callId = this.nextCall++;
    const effects = server.engine.step({ type: 'request', callId, request: { method: 'FetchSnapshot', body: request } });
    let header: SnapshotHeader | null = null;
    let status: RpcStatus | null = null;
    const rest: Effect[] = [];
    for (const e of effects) {
      if (e.type === 'serveSnapshot' && e.callId === callId) header = e.header;
      else if (e.type === 'replyError' && e.callId === callId) status = e.status;
      else rest.push(e);
    }
    this.carryOut(server, rest);
    if (status) {
      this.messages.push({ from: server.name, to: node.name, method: 'FetchSnapshot', kind: 'error', status });
      this.queue.push({ to: node.addr, input: { type: 'callFailed', requestId, status } });
      return;
    }
    if (!header) return fail('no answer');
    this.messages.push({ from: server.name, to: node.name, method: 'FetchSnapshot', kind: 'chunk' });
    if (!header.needed) return fail("no snapshot needed: the leader's log still holds what we miss", 'not-needed');
    const art = server.disk.artifact;
    if (!art || art.meta.seq !== header.snapshotSeq) return fail('artifact gone');
    const received = new Map<string, Uint8Array>();
    for (const f of header.files) {
      const bytes = new Uint8Array(art.files.get(f.path)!);
      if (this.corruptNextArtifact && f.path === 'state.json') { bytes[0] ^= 0xff; this.corruptNextArtifact = false; }
      if (!equalBytes(blake3(bytes), f.blake3) || bytes.length !== f.size) return fail(`BLAKE3 mismatch on ${f.path}`);
      received.set(f.path, bytes);
    }
    const meta = JSON.parse(new TextDecoder().decode(received.get('meta.json')!)) as SnapshotMeta;
    node.applied = decodeState(received.get('state.json')!);
    node.disk.artifact = { meta, header, files: received };
    for (const x of node.applied) this.noteApplied(node, x);
    this.queue.push({ to: node.addr, input: { type: 'snapshotInstalled', requestId, meta, header } });
  }

  /** deliver runs queued inputs until the queue is empty (bounded). */
  deliver(inputsMax = 200_000): void {
    for (let i = 0; i < inputsMax && this.queue.length > 0; i++) {
      const p = this.queue.shift()!;
      const node = this.byAddr(p.to);
      if (node) this.input(node.name, p.input);
    }
  }

  tick(rounds = 1): void {
    for (let r = 0; r < rounds; r++) {
      this.ticks++;
      for (const n of this.nodes.values()) if (n.alive) this.input(n.name, { type: 'tick' });
      this.deliver();
    }
  }

  /** elect ticks only `name` (others just answer) until it leads: a deterministic way to pick the leader. */
  elect(name: string, roundsMax = 1000): boolean {
    for (let r = 0; r < roundsMax; r++) {
      if (this.leader()?.name === name) return true;
      this.ticks++;
      this.input(name, { type: 'tick' });
      this.deliver();
    }
    return this.leader()?.name === name;
  }

  tickUntil(cond: () => boolean, roundsMax = 1000): boolean {
    for (let r = 0; r < roundsMax; r++) {
      if (cond()) return true;
      this.tick();
    }
    return cond();
  }

  leader(): ScriptedNode | undefined {
    let best: ScriptedNode | undefined;
    for (const n of this.nodes.values()) {
      if (!n.alive || n.engine.status().role !== 'leader') continue;
      if (!best || n.engine.status().term > best.engine.status().term) best = n;
    }
    return best;
  }

  propose(data: string, via?: string): number {
    const target = via ? this.node(via) : this.leader();
    if (!target) throw new Error('no leader to propose to');
    const proposalId = this.nextProposal++;
    this.input(target.name, { type: 'propose', proposalId, data: new TextEncoder().encode(data) });
    this.deliver();
    return proposalId;
  }

  admin(op: 'promote' | 'remove' | 'transfer', memberName: string, via?: string): number {
    const target = via ? this.node(via) : this.leader();
    if (!target) throw new Error('no leader for an admin operation');
    // A member need not be a node of ours (a join some client made up): then the roster names it.
    const member = this.nodes.get(memberName)?.engine.status().id || target.engine.status().roster.members.find((m) => m.name === memberName)?.id || 0;
    const adminId = this.nextAdmin++;
    this.input(target.name, { type: 'admin', adminId, op: { op, memberId: member } });
    this.deliver();
    return adminId;
  }

  /** read starts a linearizable read at `name` (see ScriptedRead); it returns the read to watch. */
  read(name: string): ScriptedRead {
    const read: ScriptedRead = { node: name, state: 'asking', readId: this.nextRead++, index: 0, refusal: '', askedVia: name, seen: [] };
    this.reads.push(read);
    this.input(name, { type: 'readIndex', readId: read.readId });
    this.deliver();
    return read;
  }

  private onReadIndexResult(e: Extract<Effect, { type: 'readIndexResult' }>): void {
    const read = this.reads.find((r) => r.readId === e.readId && r.state === 'asking');
    if (!read) return;
    const hinted = e.leaderHint !== '' ? this.byAddr(e.leaderHint) : undefined;
    if (e.refusal === 'not-leader' && hinted && read.askedVia === read.node && hinted.name !== read.node) {
      // The driver forwards a follower's read to the leader it names (a network hop: links apply).
      if (!this.linkUp(this.node(read.node).addr, hinted.addr) || !this.linkUp(hinted.addr, this.node(read.node).addr)) {
        read.state = 'refused';
        read.refusal = 'leader unreachable';
        return;
      }
      read.askedVia = hinted.name;
      read.readId = this.nextRead++;
      this.queue.push({ to: hinted.addr, input: { type: 'readIndex', readId: read.readId } });
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
      if (!node.alive) continue;
      const appliedSeq = node.applied[node.applied.length - 1]?.seq ?? 0;
      if (appliedSeq < read.index) continue;
      read.state = 'served';
      read.seen = node.applied.map((x) => new TextDecoder().decode(x.data));
    }
  }

  // ------------------------------------------------------------ checks run after every input

  private noteApplied(node: ScriptedNode, e: Entry): void {
    const digest = `${e.term}/${e.kind}/${Buffer.from(e.data).toString('hex')}`;
    const seen = this.appliedBySeq.get(e.seq);
    if (seen === undefined) this.appliedBySeq.set(e.seq, digest);
    else if (seen !== digest) this.violations.push({ invariant: 'state-machine-safety', detail: `${node.name} applied ${digest} at ${e.seq}, another node applied ${seen}` });
  }

  private check(): void {
    this.serveReads();
    for (const n of this.nodes.values()) {
      if (!n.alive) continue;
      const s = n.engine.status();
      if (s.role !== 'leader') continue;
      const prev = this.leadersByTerm.get(s.term);
      if (prev === undefined) this.leadersByTerm.set(s.term, n.name);
      else if (prev !== n.name) this.violations.push({ invariant: 'election-safety', detail: `${prev} and ${n.name} both lead term ${s.term}` });
    }
  }
}

function encodeState(entries: Entry[]): Uint8Array {
  return new TextEncoder().encode(JSON.stringify(entries.map((e) => [e.seq, e.term, e.kind, Buffer.from(e.data).toString('base64')])));
}

function decodeState(bytes: Uint8Array): Entry[] {
  const rows = JSON.parse(new TextDecoder().decode(bytes)) as [number, number, number, string][];
  return rows.map(([seq, term, kind, data]) => ({ seq, term, kind, data: new Uint8Array(Buffer.from(data, 'base64')) }));
}

function equalBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

export { EntryKind };
