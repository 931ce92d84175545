// MiniCluster: a tiny, fault-free, in-order driver for engine unit tests. It is
// not the simulator (sim/): messages are delivered FIFO, disk writes are durable
// at once, snapshots are in-memory maps. Enough to pin single behaviours down.
import {
  Engine, bootstrapRoster, emptyRestoredState, DEFAULT_LIMITS, CURRENT_COMPAT,
  type Effect, type EngineConfig, type Input, type Compat, type EngineLimits, type SnapshotMeta, type Entry,
} from '../../engine/index.js';

interface Pending { to: string; input: Input }

export interface MiniNode {
  engine: Engine;
  addr: string;
  applied: Entry[];
  effects: Effect[];
  state: Map<number, Entry>;
}

export class MiniCluster {
  readonly nodes = new Map<string, MiniNode>();
  private queue: Pending[] = [];
  private calls = new Map<string, { from: string; requestId: number; stream: boolean }>();
  private nextCall = 1;
  private nextProposal = 1;
  blocked = new Set<string>();
  private artifacts = new Map<string, { meta: SnapshotMeta; applied: Entry[] }>();

  constructor(names: string[], opts: { limits?: Partial<EngineLimits>; compat?: (name: string) => Partial<Compat> } = {}) {
    const roster = bootstrapRoster(names.map((n) => ({ name: n, grpcAddr: `${n}:7000`, httpAddr: `http://${n}:8080` })));
    names.forEach((name, i) => this.add(name, { bootstrapRoster: roster, seed: i + 1, ...opts }));
  }

  add(name: string, opts: { bootstrapRoster?: EngineConfig['bootstrapRoster']; seeds?: string[]; seed?: number; limits?: Partial<EngineLimits>; compat?: (name: string) => Partial<Compat> }): MiniNode {
    const config: EngineConfig = {
      name, grpcAddr: `${name}:7000`, httpAddr: `http://${name}:8080`, bootstrapRoster: opts.bootstrapRoster ?? null,
      seeds: opts.seeds ?? [], randomSeed: opts.seed ?? 99, compat: { ...CURRENT_COMPAT, ...(opts.compat?.(name) ?? {}) },
      limits: { ...DEFAULT_LIMITS, ...(opts.limits ?? {}) },
    };
    const node: MiniNode = { engine: new Engine(config, emptyRestoredState()), addr: config.grpcAddr, applied: [], effects: [], state: new Map() };
    this.nodes.set(config.grpcAddr, node);
    return node;
  }

  node(name: string): MiniNode {
    return this.nodes.get(`${name}:7000`)!;
  }

  private linkUp(a: string, b: string): boolean {
    return !this.blocked.has(a) && !this.blocked.has(b);
  }

  input(addr: string, input: Input): void {
    const node = this.nodes.get(addr);
    if (!node) return;
    this.carryOut(node, node.engine.step(input));
  }

  private carryOut(node: MiniNode, effects: Effect[]): void {
    for (const e of effects) {
      node.effects.push(e);
      switch (e.type) {
        case 'append': {
          const last = e.entries[e.entries.length - 1];
          if (last) this.queue.push({ to: node.addr, input: { type: 'entriesPersisted', lastSeq: last.seq, lastTerm: last.term } });
          break;
        }
        case 'send': {
          if (!this.linkUp(node.addr, e.to) || !this.nodes.has(e.to)) {
            this.queue.push({ to: node.addr, input: { type: 'callFailed', requestId: e.requestId, status: { code: 14, details: 'unreachable', trailers: {} } } });
            break;
          }
          const callId = this.nextCall++;
          this.calls.set(`${e.to}#${callId}`, { from: node.addr, requestId: e.requestId, stream: e.request.method === 'StreamSegments' });
          this.queue.push({ to: e.to, input: { type: 'request', callId, request: e.request } });
          break;
        }
        case 'fetchSnapshot': {
          const leader = this.nodes.get(e.to);
          const art = leader ? this.artifacts.get(e.to) : undefined;
          if (!art || !this.linkUp(node.addr, e.to)) {
            this.queue.push({ to: node.addr, input: { type: 'snapshotFailed', requestId: e.requestId, reason: 'unavailable' } });
            break;
          }
          node.state = new Map(art.applied.map((x) => [x.seq, x]));
          node.applied = [...art.applied];
          this.queue.push({ to: node.addr, input: { type: 'snapshotInstalled', requestId: e.requestId, meta: art.meta, header: { needed: true, snapshotSeq: art.meta.seq, term: 0, leaderRegion: 0, files: [] } } });
          break;
        }
        case 'reply': case 'replyError': case 'streamChunk': case 'streamEnd': case 'serveSnapshot': {
          const call = this.calls.get(`${node.addr}#${e.callId}`);
          if (!call || !this.linkUp(node.addr, call.from)) break;
          const requestId = call.requestId;
          if (e.type === 'reply') this.queue.push({ to: call.from, input: { type: 'response', requestId, response: e.response } });
          if (e.type === 'replyError') this.queue.push({ to: call.from, input: { type: 'callFailed', requestId, status: e.status } });
          if (e.type === 'streamChunk') this.queue.push({ to: call.from, input: { type: 'streamChunk', requestId, chunk: e.chunk } });
          if (e.type === 'streamEnd') this.queue.push({ to: call.from, input: { type: 'streamEnded', requestId } });
          break;
        }
        case 'apply':
          for (const x of e.entries) { node.applied.push(x); node.state.set(x.seq, x); }
          break;
        case 'resetStateMachine':
          node.applied = []; node.state.clear();
          break;
        case 'stageSnapshot': {
          const meta = e.meta;
          this.artifacts.set(node.addr, { meta, applied: node.applied.filter((x) => x.seq <= meta.seq) });
          this.queue.push({ to: node.addr, input: { type: 'snapshotStaged', meta, header: { needed: true, snapshotSeq: meta.seq, term: 0, leaderRegion: 0, files: [] } } });
          break;
        }
        case 'pollStatus': {
          const leader = [...this.nodes.values()].find((n) => e.leaderHttpAddr.startsWith(`http://${n.addr.split(':')[0]}:`));
          if (leader) this.queue.push({ to: node.addr, input: { type: 'statusPolled', leaderLastSeq: leader.engine.status().durableSeq } });
          break;
        }
        default: break;
      }
    }
  }

  /** deliver runs queued inputs until the queue is empty (bounded). */
  deliver(maxInputs = 100_000): void {
    for (let i = 0; i < maxInputs && this.queue.length > 0; i++) {
      const p = this.queue.shift()!;
      if (this.blocked.has(p.to) && p.input.type !== 'entriesPersisted') continue;
      this.input(p.to, p.input);
    }
  }

  tick(rounds = 1): void {
    for (let r = 0; r < rounds; r++) {
      for (const addr of this.nodes.keys()) if (!this.blocked.has(addr)) this.input(addr, { type: 'tick' });
      this.deliver();
    }
  }

  leader(): MiniNode | undefined {
    const leaders = [...this.nodes.values()].filter((n) => !this.blocked.has(n.addr) && n.engine.status().role === 'leader');
    leaders.sort((a, b) => b.engine.status().term - a.engine.status().term);
    return leaders[0];
  }

  /** tickUntil ticks until the condition holds; throws after the bound. */
  tickUntil(cond: () => boolean, roundsMax = 500): void {
    for (let r = 0; r < roundsMax; r++) {
      if (cond()) return;
      this.tick();
    }
    if (!cond()) throw new Error(`condition not reached within ${roundsMax} rounds`);
  }

  propose(data: string): number {
    const leader = this.leader();
    if (!leader) throw new Error('no leader');
    const proposalId = this.nextProposal++;
    this.input(leader.addr, { type: 'propose', proposalId, data: new TextEncoder().encode(data) });
    this.deliver();
    return proposalId;
  }

  committed(proposalId: number): boolean {
    return [...this.nodes.values()].some((n) => n.effects.some((e) => e.type === 'proposalResult' && e.proposalId === proposalId && e.ok));
  }
}
