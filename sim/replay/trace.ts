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
  // Every step of every run, in wall-clock order (ties: the run's own order).
  type At = { us: number; lane: number; run: RunReplay; index: number; input: Input; effects: Effect[] };
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
  events.sort((a, b) => a.us - b.us || a.lane - b.lane || a.index - b.index);

  let nextMessage = 1;
  let matched = 0;
  /** unmatched sends by receiver lane and call description, oldest first */
  const inFlight = new Map<string, OpenCall[]>();
  /** calls a member serves, by its lane and callId */
  const served = new Map<string, OpenCall>();
  /** answers on their way back, by the caller's lane and requestId */
  const answers = new Map<string, number[]>();
  /** calls placed, by the caller's lane and requestId */
  const placed = new Map<string, OpenCall>();
  const messageLines: Record<string, unknown>[] = [];
  let eventNo = 0;
  for (const event of events) {
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
    const input = event.input;
    if (input.type === 'request') {
      const key = `${event.lane}|${describeRequest(input.request)}`;
      const call = inFlight.get(key)?.shift();
      if (call) {
        matched++;
        call.delivered = true;
        lines.push(JSON.stringify({ v: 'r', m: call.messageId, t: event.us }));
        served.set(`${event.lane}|${input.callId}`, call);
      }
    } else if (
      input.type === 'response' ||
      input.type === 'streamChunk' ||
      input.type === 'callFailed' ||
      input.type === 'streamEnded'
    ) {
      const queue = answers.get(`${event.lane}|${input.requestId}`);
      const id = queue?.shift();
      if (id !== undefined) lines.push(JSON.stringify({ v: 'r', m: id, t: event.us }));
      // A call that failed at the caller before any recorded member took it never arrived: lost.
      const call = placed.get(`${event.lane}|${input.requestId}`);
      if (input.type === 'callFailed' && call && !call.delivered) {
        call.message.at = -1;
        const queued = inFlight.get(call.key);
        if (queued)
          inFlight.set(
            call.key,
            queued.filter((c) => c !== call),
          );
      }
    }
    for (const effect of event.effects) {
      if (effect.type === 'send') {
        const to = laneById.get(effect.toId);
        const id = nextMessage++;
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
        messageLines.push(message);
        if (to === undefined) continue;
        const key = `${to}|${describeRequest(effect.request)}`;
        const queue = inFlight.get(key) ?? [];
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
        inFlight.set(key, queue);
        placed.set(`${event.lane}|${effect.requestId}`, call);
      } else if (effect.type === 'reply' || effect.type === 'replyError' || effect.type === 'streamChunk') {
        const call = served.get(`${event.lane}|${effect.callId}`);
        if (!call) continue;
        const id = nextMessage++;
        // An answer carries its call's method, as in the simulator's traces.
        messageLines.push({
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
        const queue = answers.get(key) ?? [];
        queue.push(id);
        answers.set(key, queue);
      }
    }
  }
  lines.push(JSON.stringify({ t: events[events.length - 1]?.us ?? 0, end: 'replayed' }));
  // The view notes of messages go first: a receipt line must follow its message's note.
  const [meta, ...rest] = lines;
  return {
    lines: [meta!, ...messageLines.map((m) => JSON.stringify(m)), ...rest],
    messages: nextMessage - 1,
    matched,
    wallStartMs,
  };
}
