// Driver is the node's loop: the only place where engine effects meet I/O. Inputs (ticks, peer
// requests, call outcomes, WAL completions, snapshot outcomes, proposals) go through one serial
// queue, so the engine sees them one at a time. Each step's effects are carried out in the order
// the engine returns them (docs/architecture.md, "The engine contract"):
//
//   saveHardState  awaited: durable before any later effect of the step (a vote, a term)
//   append         handed to the WAL in order (group commit); durability comes back as entriesPersisted
//   messages       to the peer pool / the served calls' sinks / the snapshot fetcher
//   apply          to the state machine, synchronously, in order
//   the rest       snapshots, compaction, status polls, results, readiness, warnings
//
// One exception to the order: in a step that answers proposals, the ShipSegments and live-stream chunks that
// carry no entries (commit notices) are sent two loop turns later, after the answers (isCommitNotice, and
// NOTICE_HOLD_TURNS for why two); a later
// chunk or end of the same stream in that step waits with them, so a stream keeps its order. So does the
// answer to the ReportApplied that committed them (isReportAck): its reporter acts on nothing in it.
// Only the hard-state save is awaited inside a step: appends are durable asynchronously by
// contract (the engine counts only what entriesPersisted reports). An I/O failure that leaves the
// node unable to keep a promise (a hard state or WAL write) is fail-stop: no later effect or step runs.
import type { Engine } from '../../engine/engine.js';
import type {
  Effect,
  EngineLeadership,
  EngineStatus,
  Entry,
  HardState,
  Input,
  NodeStats,
  SnapshotExpectation,
  SnapshotMeta,
} from '../../engine/types.js';
import type { StepRecorder } from './recorder.js';
import { SerialQueue } from './serial-queue.js';
import { stamp } from './write-trace.js';

export type SendEffect = Extract<Effect, { type: 'send' }>;
export type AnswerEffect = Extract<
  Effect,
  { type: 'reply' | 'replyError' | 'streamChunk' | 'streamEnd' | 'serveSnapshot' }
>;
export type FetchSnapshotEffect = Extract<Effect, { type: 'fetchSnapshot' }>;
export type ObservedEffect = Extract<
  Effect,
  { type: 'proposalResult' | 'adminResult' | 'readIndexResult' | 'readiness' | 'roleChanged' | 'warning' }
>;

/** DriverPorts are the node's I/O, one port per kind of effect. */
export interface DriverPorts {
  saveHardState(hardState: HardState): Promise<void>;
  resetStateMachine(): void;
  /** appendLog truncates at fromSeq and appends; it resolves once durable (it may throw at once). */
  appendLog(fromSeq: number, entries: Entry[]): Promise<unknown>;
  send(effect: SendEffect): void;
  answer(effect: AnswerEffect): void;
  fetchSnapshot(effect: FetchSnapshotEffect): void;
  apply(entries: Entry[]): void;
  /** stageSnapshot must capture the state machine before it returns (later applies must not leak in). */
  stageSnapshot(meta: SnapshotMeta): void;
  compactLog(throughSeq: number): void;
  pollStatus(leaderHttpAddr: string): void;
  observe(effect: ObservedEffect): void;
  /** stats are the measurements heartbeats carry, read every tick. */
  stats(): NodeStats;
  /** stepped is told after every step (waiters re-check their conditions). */
  stepped(): void;
  /** fail is told once of an I/O failure the node cannot carry on from; the driver stops. */
  fail(err: Error): void;
}

/**
 * NOTICE_HOLD_TURNS: the loop turns (setImmediate hops) a step's held commit notices wait for its answers. An OK
 * unary answer leaves node:http2 in two writes a turn apart: its headers and message are flushed in the check
 * phase of the turn it was given (a native immediate), and the trailers the caller waits for are submitted from
 * a setImmediate that flush queues (http2 `sendTrailers`), so they are flushed in the next turn's check phase.
 * Sent after one hop, the notices left between the two writes, ahead of the trailers (strace of a leader:
 * headers + message, the notices and ReportApplied answers to both followers, then the trailers); after two
 * they leave behind the trailers.
 */
export const NOTICE_HOLD_TURNS = 2;

export interface DriverOptions {
  tickMs: number;
  inputQueueCountMax: number;
  /** recorder, when set, is told of every step: its input, effects and the tick count (the flight recorder). */
  recorder?: StepRecorder | null;
}

export class Driver {
  private readonly queue: SerialQueue;
  private timer: NodeJS.Timeout | null = null;
  private tickQueued = false;
  private stopped = false;
  private failed: Error | null = null;
  private cachedStatus: EngineStatus;
  /** statusStale: a step ran since cachedStatus was read (engine.status() walks the log, so it is read on demand). */
  private statusStale = false;
  /** midStep: the engine has stepped but the step's effects are not all carried out (a save is pending). */
  private midStep = false;
  private stepCount = 0;
  private tickCount = 0;
  /**
   * persistedPoint is the newest durable log end not yet told to the engine. Group commit makes
   * many appends durable at once; they become one entriesPersisted step (one ReportApplied on a
   * follower, one commit check on a leader) instead of one per append.
   */
  private persistedPoint: { lastSeq: number; lastTerm: number; generation: number } | null = null;

  constructor(
    private readonly engine: Engine,
    private readonly ports: DriverPorts,
    private readonly options: DriverOptions,
  ) {
    this.queue = new SerialQueue((err) => this.failStop(err instanceof Error ? err : new Error(String(err))));
    this.cachedStatus = engine.status();
  }

  /** start carries out the effects the engine produced while recovering, then ticks every tickMs. */
  start(): void {
    this.submit({ type: 'start' });
    this.submit({ type: 'stats', stats: this.ports.stats() });
    this.timer = setInterval(() => this.onTimer(), this.options.tickMs);
  }

  /**
   * status is the engine's status after the last finished step. While a step waits for its hard
   * state to be durable, it answers an earlier finished step's status, never the engine's state
   * ahead of the disk.
   */
  status(): EngineStatus {
    if (this.statusStale && !this.midStep) {
      this.cachedStatus = this.engine.status();
      this.statusStale = false;
    }
    return this.cachedStatus;
  }

  /** leadership is the engine's role, term, leader and membership version now (Engine.leadership: cheap). */
  leadership(): EngineLeadership {
    return this.engine.leadership();
  }

  /** matchSeqs: on a leader, each follower's matched frontier as last reported (Engine.matchSeqs). */
  matchSeqs(): Record<number, number> {
    return this.engine.matchSeqs();
  }

  get steps(): number {
    return this.stepCount;
  }

  /** ticks counts the ticks the engine has stepped: its clock. */
  get ticks(): number {
    return this.tickCount;
  }

  get queueLength(): number {
    return this.queue.length;
  }

  /** failure is the error that stopped the driver, null while it runs. */
  get failure(): Error | null {
    return this.failed;
  }

  /** overloaded is true when inputs from outside (peer requests, proposals) should be refused. */
  overloaded(): boolean {
    return this.queue.length >= this.options.inputQueueCountMax;
  }

  /**
   * submit queues one input. `before` runs inside the queue right before the step (e.g. swapping in
   * an installed snapshot exactly when the engine learns of it); an input it returns replaces `input`
   * (e.g. the snapshot turned out stale by then). After stop or failure it is dropped.
   */
  submit(input: Input, before?: () => Input | void): void {
    if (this.stopped || this.failed) return;
    this.queue.push(() => {
      if (this.stopped || this.failed) return undefined;
      const replaced = before?.();
      return this.step(replaced ?? input);
    });
  }

  /** snapshotExpectation: the snapshot the engine may install now (Engine.snapshotExpectation), read inside the queue. */
  snapshotExpectation(): SnapshotExpectation {
    return this.engine.snapshotExpectation();
  }

  /** liveStatus is the engine's status right now, for ports carrying out a step's effects. */
  liveStatus(): EngineStatus {
    return this.engine.status();
  }

  /** compactedSeq is the engine's compaction point: the last seqno its log no longer holds. */
  compactedSeq(): number {
    return this.engine.logBase().seq;
  }

  /** stop ends ticking, lets the step in progress finish and drops the inputs not yet started. */
  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    this.stopped = true;
    this.queue.clear();
    await this.queue.idle();
  }

  private onTimer(): void {
    // Ticks do not pile up behind a slow step: a tick still queued stands for the ones missed.
    if (this.tickQueued || this.stopped || this.failed) return;
    this.tickQueued = true;
    const stats = this.ports.stats();
    this.queue.push(() => {
      this.tickQueued = false;
      if (this.stopped || this.failed) return undefined;
      const tick = (): void | Promise<void> => {
        if (this.stopped || this.failed) return undefined;
        this.tickCount++;
        return this.step({ type: 'tick' });
      };
      const pending = this.step({ type: 'stats', stats });
      return pending ? pending.then(tick) : tick();
    });
  }

  private step(input: Input): void | Promise<void> {
    if (input.type === 'readIndex') stamp('readindex.stepped', 0);
    else if (input.type === 'response' && input.response.method === 'Heartbeat') stamp('heartbeat.stepped', 0);
    this.midStep = true;
    const effects = this.engine.step(input);
    this.stepCount++;
    this.options.recorder?.record(input, effects, this.tickCount);
    const first = effects[0];
    if (first?.type === 'saveHardState') {
      return this.ports.saveHardState(first.hardState).then(
        () => this.finishStep(effects, 1),
        (err: unknown) => this.failStop(new Error(`hard state save failed: ${String(err)}`)),
      );
    }
    this.finishStep(effects, 0);
    return undefined;
  }

  private finishStep(effects: Effect[], from: number): void {
    // A step that answers proposals holds its commit notices (segments with no entries) back NOTICE_HOLD_TURNS
    // loop turns: the clients' answers, which leave from the results' promise callbacks after this step, go out
    // first, trailers included.
    const answersFirst = effects.some((e) => e.type === 'proposalResult');
    let notices: Array<SendEffect | AnswerEffect> | null = null;
    const heldStreams = answersFirst ? new Set<number>() : null;
    for (let i = from; i < effects.length && !this.failed; i++) {
      const effect = effects[i]!;
      if (!answersFirst) this.carryOut(effect);
      else if (isCommitNotice(effect) || isReportAck(effect)) (notices ??= []).push(effect);
      else if (isStreamNotice(effect) || (isStreamEffect(effect) && heldStreams!.has(effect.callId))) {
        heldStreams!.add(effect.callId);
        (notices ??= []).push(effect);
      } else this.carryOut(effect);
    }
    this.midStep = false;
    this.statusStale = true;
    this.ports.stepped();
    if (notices !== null) {
      setImmediate(this.sendHeld, notices, NOTICE_HOLD_TURNS - 1);
    }
    // Last: the recorder's encoding waits behind this step's effects, held commit notices included.
    this.options.recorder?.carriedOut();
  }

  /** sendHeld carries out a step's held notices once `turnsLeft` more loop turns have passed. */
  private readonly sendHeld = (held: Array<SendEffect | AnswerEffect>, turnsLeft: number): void => {
    if (this.stopped || this.failed) return;
    if (turnsLeft > 0) {
      setImmediate(this.sendHeld, held, turnsLeft - 1);
      return;
    }
    for (const effect of held) {
      if (effect.type === 'send') this.ports.send(effect);
      else this.ports.answer(effect);
    }
  };

  private carryOut(effect: Effect): void {
    switch (effect.type) {
      case 'saveHardState':
        // The engine emits at most one, first; a second would break the barrier contract.
        this.failStop(new Error('saveHardState after the first effect of a step'));
        return;
      case 'resetStateMachine':
        this.ports.resetStateMachine();
        return;
      case 'append':
        this.append(effect.fromSeq, effect.entries, effect.generation ?? 0);
        return;
      case 'send':
        this.ports.send(effect);
        return;
      case 'reply':
        if (effect.response.method === 'Heartbeat') stamp('heartbeat.answered', 0);
        this.ports.answer(effect);
        return;
      case 'replyError':
      case 'streamChunk':
      case 'streamEnd':
      case 'serveSnapshot':
        this.ports.answer(effect);
        return;
      case 'fetchSnapshot':
        this.ports.fetchSnapshot(effect);
        return;
      case 'apply':
        this.ports.apply(effect.entries);
        stamp('apply', effect.entries[effect.entries.length - 1]?.seq ?? 0);
        return;
      case 'stageSnapshot':
        this.ports.stageSnapshot(effect.meta);
        return;
      case 'compact':
        this.ports.compactLog(effect.throughSeq);
        return;
      case 'pollStatus':
        this.ports.pollStatus(effect.leaderHttpAddr);
        return;
      case 'readIndexResult':
        stamp('readindex.answered', effect.index);
        this.ports.observe(effect);
        return;
      case 'proposalResult':
      case 'adminResult':
      case 'readiness':
      case 'roleChanged':
      case 'warning':
        this.ports.observe(effect);
        return;
      default:
        assertNever(effect);
    }
  }

  private append(fromSeq: number, entries: Entry[], generation: number): void {
    const last = entries[entries.length - 1];
    stamp('append', last?.seq ?? 0);
    let durable: Promise<unknown>;
    try {
      durable = this.ports.appendLog(fromSeq, entries);
    } catch (err) {
      this.failStop(new Error(`WAL append failed: ${String(err)}`));
      return;
    }
    durable.then(
      () => {
        if (last) this.notePersisted(last.seq, last.term, generation);
      },
      (err: unknown) => this.failStop(new Error(`WAL append failed: ${String(err)}`)),
    );
  }

  /** notePersisted queues one entriesPersisted step for the newest durable point (appends are durable in order). */
  private notePersisted(lastSeq: number, lastTerm: number, generation: number): void {
    if (this.stopped || this.failed) return;
    const queued = this.persistedPoint !== null;
    this.persistedPoint = { lastSeq, lastTerm, generation };
    if (queued) return;
    // A microtask later: the other appends of the same group commit resolve in this same job queue
    // and move persistedPoint first, so the step sees the group's end.
    queueMicrotask(() =>
      this.queue.push(() => {
        const point = this.persistedPoint;
        this.persistedPoint = null;
        if (this.stopped || this.failed || point === null) return undefined;
        stamp('persisted.stepped', point.lastSeq);
        const { lastSeq: seq, lastTerm: term, generation: gen } = point;
        return this.step(
          gen > 0
            ? { type: 'entriesPersisted', lastSeq: seq, lastTerm: term, generation: gen }
            : { type: 'entriesPersisted', lastSeq: seq, lastTerm: term },
        );
      }),
    );
  }

  private failStop(err: Error): void {
    if (this.failed) return;
    this.failed = err;
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    this.queue.clear();
    this.ports.fail(err);
  }
}

/**
 * isCommitNotice: a ShipSegment with no entries, which only tells a follower the commit seqno (or probes it). No
 * write waits for it: the writes it commits are committed already, and the follower's log is unchanged by it.
 */
function isCommitNotice(effect: Effect): effect is SendEffect {
  return effect.type === 'send' && effect.request.method === 'ShipSegment' && effect.request.body.eventCount === 0;
}

/**
 * isReportAck: the answer to a follower's ReportApplied. The reporter's engine takes nothing from it (the call
 * only has to end), so in a step that answers proposals it need not leave ahead of the clients' answers.
 */
function isReportAck(effect: Effect): effect is Extract<AnswerEffect, { type: 'reply' }> {
  return effect.type === 'reply' && effect.response.method === 'ReportApplied';
}

/** isStreamNotice: a live-stream chunk with no entries (a commit notice on a follower's open StreamSegments). */
function isStreamNotice(effect: Effect): effect is Extract<AnswerEffect, { type: 'streamChunk' }> {
  return effect.type === 'streamChunk' && effect.chunk.eventCount === 0;
}

function isStreamEffect(effect: Effect): effect is Extract<AnswerEffect, { type: 'streamChunk' | 'streamEnd' }> {
  return effect.type === 'streamChunk' || effect.type === 'streamEnd';
}

function assertNever(value: never): never {
  throw new Error(`unhandled effect ${JSON.stringify(value)}`);
}
