// WiredEngines: a few real engines wired to each other in memory, for engine tests that need a follower's own
// decisions as well as the leader's (test/engine/restart-commit-news.test.ts). Every call is delivered at once
// and in order, every append is durable at once, and a call to a node that is down fails UNAVAILABLE at once —
// the simulator's lockstep preset in miniature, without its checkers. A node crashes and restarts from what its
// "disk" holds: the hard state it last saved and the log it appended (no snapshots: nothing here compacts).
import {
  Engine,
  emptyRestoredState,
  StatusCode,
  type Effect,
  type EngineConfig,
  type Entry,
  type HardState,
  type Input,
} from '../../engine/index.js';

/** Disk is what a node keeps across a crash. */
interface Disk {
  hardState: HardState | null;
  entries: Entry[];
}

/** Sent: one request a node sent, as the wire saw it (the tests count them). */
export interface Sent {
  fromId: number;
  toId: number;
  method: string;
  effect: Extract<Effect, { type: 'send' }>;
}

export class WiredEngines {
  private readonly engines = new Map<number, Engine>();
  private readonly disks = new Map<number, Disk>();
  private readonly down = new Set<number>();
  /** calls: a call served by `${toId}:${callId}` and who made it (its requestId at the caller). */
  private readonly calls = new Map<string, { fromId: number; requestId: number }>();
  private nextCallId = 1;
  private readonly queue: Array<{ id: number; input: Input }> = [];
  /** sent: every request sent since the last take (takeSent). */
  private sent: Sent[] = [];
  /** failed: calls failed since the last take (a call to a node that is down, or answered with an error). */
  private failed = 0;

  /** @param configs each founder's engine config, in id order (founder i has id i + 1). */
  constructor(private readonly configs: readonly EngineConfig[]) {
    configs.forEach((config, i) => {
      this.disks.set(i + 1, { hardState: null, entries: [] });
      this.boot(i + 1);
    });
  }

  engine(id: number): Engine {
    return this.engines.get(id)!;
  }

  /** tick: `rounds` rounds, each a tick to every node that is up (in id order), everything it causes delivered. */
  tick(rounds = 1): void {
    for (let r = 0; r < rounds; r++)
      for (const id of this.engines.keys()) if (!this.down.has(id)) this.input(id, { type: 'tick' });
  }

  /** input feeds node `id` one input and delivers everything that follows from it. */
  input(id: number, input: Input): Effect[] {
    const first = this.stepOne(id, input);
    while (this.queue.length > 0) {
      const next = this.queue.shift()!;
      if (!this.down.has(next.id)) this.stepOne(next.id, next.input);
    }
    return first;
  }

  /** crash stops node `id`: its in-memory state is gone; calls to it fail until it restarts. */
  crash(id: number): void {
    this.down.add(id);
    for (const [key, call] of [...this.calls])
      if (call.fromId === id || key.startsWith(`${id}:`)) this.calls.delete(key);
  }

  /** restart boots node `id` again from its disk. */
  restart(id: number): void {
    this.down.delete(id);
    this.boot(id);
  }

  /** savedCommitSeq: the commit seqno node `id`'s saved hard state holds (what a restart starts from). */
  savedCommitSeq(id: number): number {
    return this.disks.get(id)!.hardState?.commitSeq ?? 0;
  }

  /** takeSent hands back the requests sent since the last call (and counts failed calls from then on). */
  takeSent(): Sent[] {
    const out = this.sent;
    this.sent = [];
    this.failed = 0;
    return out;
  }

  /** failedCallCount: calls that failed since the last takeSent. */
  failedCallCount(): number {
    return this.failed;
  }

  private boot(id: number): void {
    const disk = this.disks.get(id)!;
    const config = this.configs[id - 1]!;
    const engine = disk.hardState
      ? new Engine(config, {
          hardState: disk.hardState,
          snapshot: null,
          snapshotHeader: null,
          entries: [...disk.entries],
          appliedSeq: 0,
        })
      : new Engine(config, emptyRestoredState());
    this.engines.set(id, engine);
    this.input(id, { type: 'start' });
  }

  private stepOne(id: number, input: Input): Effect[] {
    const effects = this.engine(id).step(input);
    for (const effect of effects) this.carryOut(id, effect);
    return effects;
  }

  private carryOut(id: number, effect: Effect): void {
    const disk = this.disks.get(id)!;
    switch (effect.type) {
      case 'saveHardState':
        disk.hardState = { ...effect.hardState };
        return;
      case 'append': {
        disk.entries = [...disk.entries.filter((e) => e.seq < effect.fromSeq), ...effect.entries];
        const last = effect.entries[effect.entries.length - 1];
        if (last) {
          const persisted: Input = { type: 'entriesPersisted', lastSeq: last.seq, lastTerm: last.term };
          if (effect.generation !== undefined) persisted.generation = effect.generation;
          this.queue.push({ id, input: persisted });
        }
        return;
      }
      case 'send': {
        this.sent.push({ fromId: id, toId: effect.toId, method: effect.request.method, effect });
        if (this.down.has(effect.toId) || !this.engines.has(effect.toId)) {
          const status = { code: StatusCode.UNAVAILABLE, details: 'connection refused', trailers: {} };
          this.failed++;
          this.queue.push({ id, input: { type: 'callFailed', requestId: effect.requestId, status } });
          return;
        }
        const callId = this.nextCallId++;
        this.calls.set(`${effect.toId}:${callId}`, { fromId: id, requestId: effect.requestId });
        this.queue.push({ id: effect.toId, input: { type: 'request', callId, request: effect.request, callerId: id } });
        return;
      }
      case 'reply':
      case 'replyError':
      case 'streamChunk':
      case 'streamEnd': {
        const key = `${id}:${effect.callId}`;
        const call = this.calls.get(key);
        if (!call) return;
        if (effect.type === 'reply') {
          this.calls.delete(key);
          this.queue.push({
            id: call.fromId,
            input: { type: 'response', requestId: call.requestId, response: effect.response },
          });
        } else if (effect.type === 'replyError') {
          this.calls.delete(key);
          this.failed++;
          this.queue.push({
            id: call.fromId,
            input: { type: 'callFailed', requestId: call.requestId, status: effect.status },
          });
        } else if (effect.type === 'streamChunk') {
          this.queue.push({
            id: call.fromId,
            input: { type: 'streamChunk', requestId: call.requestId, chunk: effect.chunk },
          });
        } else {
          this.calls.delete(key);
          this.queue.push({ id: call.fromId, input: { type: 'streamEnded', requestId: call.requestId } });
        }
        return;
      }
      default:
        // Applies, results, readiness, warnings: the tests read the engines' status instead. Snapshots never
        // happen here (nothing compacts at these log sizes).
        return;
    }
  }
}
