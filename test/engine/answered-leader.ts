// A leader driven by hand, its followers stood in for by an answer loop: n1 of the founders n1, n2, n3 ticks
// until it leads, and every vote, heartbeat and ship it sends is answered at once as a willing, caught-up
// follower would (granted; accepted; accepted with the ship's last seq as the frontier). Tests then feed it what
// they study (a report, a refusal, a stream) by hand. Shared by the engine tests that need only the leader's side
// (stale-refusal, live-stream, restart-commit-news); test/engine/wired-engines.ts wires real followers instead.
import assert from 'node:assert/strict';
import {
  Engine,
  emptyRestoredState,
  CAPABILITY_KIND4,
  DEFAULT_LIMITS,
  type Effect,
  type EngineLimits,
} from '../../engine/index.js';
import { founderConfig } from './founders.js';

export type Send = Extract<Effect, { type: 'send' }>;

export const sends = (effects: Effect[]): Send[] => effects.filter((e): e is Send => e.type === 'send');

/** shipsTo: the ShipSegment calls to member `toId` among `effects`. */
export const shipsTo = (effects: Effect[], toId: number): Send[] =>
  sends(effects).filter((e) => e.request.method === 'ShipSegment' && e.toId === toId);

/** prevSeqOf: the seq a ShipSegment's segment follows (its id's seqno is the first seq it covers). */
export const prevSeqOf = (send: Send): number =>
  send.request.method === 'ShipSegment' ? (send.request.body.id?.seqno ?? 1) - 1 : -1;

export interface AnswerOptions {
  /** limits: n1's engine limits (DEFAULT_LIMITS when absent). */
  limits?: EngineLimits;
  /** capabilities: the bits n2 and n3 report in their heartbeat answers (CAPABILITY_KIND4 when absent). */
  capabilities?: number;
  /** answerHeartbeats: false leaves every heartbeat unanswered (n1 then has heard no follower's bits). */
  answerHeartbeats?: boolean;
  /** holds: a ShipSegment this returns true for is left unanswered (the test answers it later, or never). */
  holds?: (ship: Send) => boolean;
}

export interface AnsweredLeader {
  engine: Engine;
  /** answer answers every call among `effects`, and every call those answers cause, until none is left. */
  answer(effects: Effect[]): void;
}

/** answeredLeader: n1, leader of term 1 for n2 and n3, after two heartbeat intervals of answered calls. */
export function answeredLeader(options: AnswerOptions = {}): AnsweredLeader {
  const limits = options.limits ?? DEFAULT_LIMITS;
  const capabilities = options.capabilities ?? CAPABILITY_KIND4;
  const engine = new Engine({ ...founderConfig('n1', ['n1', 'n2', 'n3']), limits }, emptyRestoredState());
  engine.step({ type: 'start' });
  const answer = (effects: Effect[]): void => {
    const pending = sends(effects);
    while (pending.length > 0) {
      const send = pending.shift()!;
      const term = engine.status().term;
      let out: Effect[] = [];
      if (send.request.method === 'RequestVote')
        out = engine.step({
          type: 'response',
          requestId: send.requestId,
          response: { method: 'RequestVote', body: { term, granted: true, removed: false } },
        });
      else if (send.request.method === 'Heartbeat' && options.answerHeartbeats !== false)
        out = engine.step({
          type: 'response',
          requestId: send.requestId,
          response: {
            method: 'Heartbeat',
            body: { acknowledged: true, term, accepted: true, capabilities, removed: false },
          },
        });
      else if (send.request.method === 'ShipSegment') {
        if (options.holds?.(send)) continue;
        const appliedSeqno = prevSeqOf(send) + send.request.body.eventCount;
        out = engine.step({
          type: 'response',
          requestId: send.requestId,
          response: { method: 'ShipSegment', body: { accepted: true, appliedSeqno, term } },
        });
      }
      pending.push(...sends(out));
    }
  };
  for (let tick = 0; tick < 10 * limits.electionTimeoutTicks && engine.status().role !== 'leader'; tick++)
    answer(engine.step({ type: 'tick' }));
  for (let tick = 0; tick < 2 * limits.heartbeatIntervalTicks; tick++) answer(engine.step({ type: 'tick' }));
  assert.equal(engine.status().role, 'leader');
  return { engine, answer };
}

/** reportApplied: member `reporterShard` reports frontier `appliedSeqno` to n1 at n1's term. */
export function reportApplied(
  engine: Engine,
  callId: number,
  reporterShard: number,
  appliedSeqno: number,
  capabilities = CAPABILITY_KIND4,
): Effect[] {
  const body = { reporterShard, sourceShard: 1, appliedSeqno, reporterTerm: engine.status().term, capabilities };
  return engine.step({ type: 'request', callId, request: { method: 'ReportApplied', body } });
}
