// replayTrace: several members' replayed runs as one trace file for the viewer (sim/view/), on the real
// wall-clock axis. Messages are aligned across members by what they carry, since a message has no id that
// both ends record: a `send` effect on A to member B is matched with the first unmatched `request` input
// on B that describes the same call (method, term, sequence numbers, sender), in time order; an answer
// (reply / stream chunk on B) follows its call back to A's `response` / `streamChunk` input by the call's
// ids on each side. A send whose receiver was not recorded, or that no recorded input matches, is drawn
// as undelivered.
import { describeRequest } from '../../recording/describe.js';
import type { Effect, Input } from '../../engine/types.js';
import { describeEffect, describeInput } from '../trace-format.js';
import type { RunReplay } from './replay.js';

interface OpenCall {
  messageId: number;
  /** message is its view note, written out at the end (a call that failed at the caller is marked lost). */
  message: Record<string, unknown>;
  delivered: boolean;
  key: string;
  from: number;
  to: number;
  /** the caller's requestId, so the answer finds its way back */
  requestId: number;
}

export interface ReplayTrace {
  lines: string[];
  messages: number;
  matched: number;
  wallStartMs: number;
}

export function replayTrace(runs: readonly RunReplay[], title: string): ReplayTrace {
  const names = [...new Set(runs.map((r) => r.node))].sort();
  const laneOf = new Map(names.map((name, i) => [name, i]));
  const laneById = new Map<number, number>();
  for (const run of runs) if (run.memberId > 0) laneById.set(run.memberId, laneOf.get(run.node)!);
  const wallStartMs = Math.min(...runs.map((r) => r.steps[0]?.atMs ?? r.startedAtMs));
  const usOf = (atMs: number, order: number): number => Math.round((atMs - wallStartMs) * 1000) + Math.min(order, 999);
  const tickMs = runs.find((r) => r.tickMs > 0)?.tickMs ?? 100;
  const lines: string[] = [
    JSON.stringify({
      v: 'meta',
      seed: 0,
      nodes: names,
      tickUs: tickMs * 1000,
      electionTimeoutTicks: runs.find((r) => r.electionTimeoutTicks > 0)?.electionTimeoutTicks ?? 10,
      wallStartMs,
      title,
    }),
  ];
  const events = orderedSteps(runs, laneOf, usOf, lines);
  const matcher = new MessageMatcher(laneById, lines);
  let eventNo = 0;
  for (const event of causalOrder(events, matcher)) {
    eventNo++;
    lines.push(
      JSON.stringify({
        i: eventNo,
        t: event.us,
        n: event.lane,
        in: describeInput(event.input),
        fx: event.effects.map(describeEffect),
      }),
    );
    matcher.onInput(event);
    for (const effect of event.effects) matcher.onEffect(event, effect);
  }
  lines.push(JSON.stringify({ t: events[events.length - 1]?.us ?? 0, end: 'replayed' }));
  // The view notes of messages go first: a receipt line must follow its message's note.
  const [meta, ...rest] = lines;
  return {
    lines: [meta!, ...matcher.messageLines.map((m) => JSON.stringify(m)), ...rest],
    messages: matcher.messageCount,
    matched: matcher.matched,
    wallStartMs,
  };
}

/** A step of one run, placed on the shared axis (us) and its member's lane. */
interface At {
  us: number;
  lane: number;
  run: RunReplay;
  index: number;
  input: Input;
  effects: Effect[];
}

/**
 * orderedSteps: every step of every run, in wall-clock order (ties: the run's own order). A member's later
 * run means it restarted: a crash and a restart line go into `lines` between its runs.
 */
function orderedSteps(
  runs: readonly RunReplay[],
  laneOf: ReadonlyMap<string, number>,
  usOf: (atMs: number, order: number) => number,
  lines: string[],
): At[] {
  const events: At[] = [];
  const lastStep = new Map<string, number>();
  for (const run of [...runs].sort((a, b) => a.startedAtMs - b.startedAtMs)) {
    const lane = laneOf.get(run.node)!;
    const previousEnd = lastStep.get(run.node);
    if (previousEnd !== undefined && run.steps.length > 0) {
      lines.push(JSON.stringify({ t: previousEnd, w: `crash n${lane + 1}` }));
      lines.push(JSON.stringify({ t: usOf(run.steps[0]!.atMs, 0), w: `restart n${lane + 1}` }));
    }
    let sameMs = 0;
    let lastMs = -1;
    run.steps.forEach((step, index) => {
      sameMs = step.atMs === lastMs ? sameMs + 1 : 0;
      lastMs = step.atMs;
      events.push({ us: usOf(step.atMs, sameMs), lane, run, index, input: step.input, effects: step.effects });
    });
    if (run.steps.length > 0) lastStep.set(run.node, usOf(run.steps[run.steps.length - 1]!.atMs, 999));
  }
  return events.sort((a, b) => a.us - b.us || a.lane - b.lane || a.index - b.index);
}

/**
 * causalOrder yields the events so that a call's receipt follows its send. Steps carry the wall clock in
 * whole milliseconds (taken after each step on both sides, from one system clock), so a receipt is never
 * in an earlier millisecond than its send, but within one millisecond the order across members is unknown.
 * Inside each millisecond, a request input that matches no call in flight waits (with the rest of its
 * member's steps of that millisecond, keeping each member's own order) until the other members' steps of
 * that millisecond have had their turn; what still matches nothing then goes out as undelivered.
 */
function* causalOrder(events: readonly At[], matcher: MessageMatcher): Generator<At> {
  let start = 0;
  while (start < events.length) {
    const ms = Math.floor(events[start]!.us / 1000);
    let end = start;
    while (end < events.length && Math.floor(events[end]!.us / 1000) === ms) end++;
    let waiting = events.slice(start, end);
    for (;;) {
      const blockedLanes = new Set<number>();
      const next: At[] = [];
      for (const event of waiting) {
        if (blockedLanes.has(event.lane) || (event.input.type === 'request' && !matcher.expects(event))) {
          blockedLanes.add(event.lane);
          next.push(event);
        } else yield event;
      }
      if (next.length === 0) break;
      if (next.length === waiting.length) {
        yield* next;
        break;
      }
      waiting = next;
    }
    start = end;
  }
}

/**
 * MessageMatcher pairs sends with the inputs that received them and answers with the inputs they reached,
 * fed the events in order: each message's view note goes to messageLines, each receipt to `lines`.
 */
class MessageMatcher {
  readonly messageLines: Record<string, unknown>[] = [];
  matched = 0;
  private nextMessage = 1;
  /** unmatched sends by receiver lane and call description, oldest first */
  private readonly inFlight = new Map<string, OpenCall[]>();
  /** calls a member serves, by its lane and callId */
  private readonly served = new Map<string, OpenCall>();
  /** answers on their way back, by the caller's lane and requestId */
  private readonly answers = new Map<string, number[]>();
  /** calls placed, by the caller's lane and requestId */
  private readonly placed = new Map<string, OpenCall>();

  constructor(
    private readonly laneById: ReadonlyMap<number, number>,
    private readonly lines: string[],
  ) {}

  get messageCount(): number {
    return this.nextMessage - 1;
  }

  /** expects says whether a call in flight matches this request input. */
  expects(event: At): boolean {
    if (event.input.type !== 'request') return false;
    return (this.inFlight.get(`${event.lane}|${describeRequest(event.input.request)}`)?.length ?? 0) > 0;
  }

  onInput(event: At): void {
    const input = event.input;
    if (input.type === 'request') {
      const key = `${event.lane}|${describeRequest(input.request)}`;
      const call = this.inFlight.get(key)?.shift();
      if (call) {
        this.matched++;
        call.delivered = true;
        // Within one millisecond the receipt's own offset may sit before the send's: draw it no earlier.
        this.lines.push(JSON.stringify({ v: 'r', m: call.messageId, t: Math.max(event.us, call.message.t as number) }));
        this.served.set(`${event.lane}|${input.callId}`, call);
      }
    } else if (
      input.type === 'response' ||
      input.type === 'streamChunk' ||
      input.type === 'callFailed' ||
      input.type === 'streamEnded'
    ) {
      const queue = this.answers.get(`${event.lane}|${input.requestId}`);
      const id = queue?.shift();
      if (id !== undefined) this.lines.push(JSON.stringify({ v: 'r', m: id, t: event.us }));
      // A call that failed at the caller before any recorded member took it never arrived: lost.
      const call = this.placed.get(`${event.lane}|${input.requestId}`);
      if (input.type === 'callFailed' && call && !call.delivered) {
        call.message.at = -1;
        const queued = this.inFlight.get(call.key);
        if (queued)
          this.inFlight.set(
            call.key,
            queued.filter((c) => c !== call),
          );
      }
    }
  }

  onEffect(event: At, effect: Effect): void {
    if (effect.type === 'send') this.onSend(event, effect);
    else if (effect.type === 'reply' || effect.type === 'replyError' || effect.type === 'streamChunk')
      this.onAnswer(event, effect);
  }

  private onSend(event: At, effect: Extract<Effect, { type: 'send' }>): void {
    const to = this.laneById.get(effect.toId);
    const id = this.nextMessage++;
    const message = {
      v: 'm',
      m: id,
      f: event.lane,
      to: to ?? event.lane,
      t: event.us,
      at: event.us,
      k: effect.request.method,
      a: 0,
      c: 0,
      d: describeRequest(effect.request),
    };
    this.messageLines.push(message);
    if (to === undefined) return;
    const key = `${to}|${describeRequest(effect.request)}`;
    const queue = this.inFlight.get(key) ?? [];
    const call: OpenCall = {
      messageId: id,
      message,
      delivered: false,
      key,
      from: event.lane,
      to,
      requestId: effect.requestId,
    };
    queue.push(call);
    this.inFlight.set(key, queue);
    this.placed.set(`${event.lane}|${effect.requestId}`, call);
  }

  private onAnswer(event: At, effect: Extract<Effect, { type: 'reply' | 'replyError' | 'streamChunk' }>): void {
    const call = this.served.get(`${event.lane}|${effect.callId}`);
    if (!call) return;
    const id = this.nextMessage++;
    // An answer carries its call's method, as in the simulator's traces.
    this.messageLines.push({
      v: 'm',
      m: id,
      f: event.lane,
      to: call.from,
      t: event.us,
      at: event.us,
      k: call.message.k,
      a: 1,
      c: 0,
      d: describeEffect(effect),
    });
    const key = `${call.from}|${call.requestId}`;
    const queue = this.answers.get(key) ?? [];
    queue.push(id);
    this.answers.set(key, queue);
  }
}
