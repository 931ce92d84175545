// Leader step-down: a leader cut off from a quorum steps down within a stated bound, so a stale
// leader cannot go on acting (serving reads, taking writes it can never commit) for long.
//
// The bound, from the check-quorum rule (engine tickLeader/checkQuorum): every electionTimeoutTicks of
// its own ticks a leader asks whether each of a quorum of its roster's voters (itself included)
// answered it in that window, and steps down if not. Let q be the leader's tick count when it last
// heard from the quorum-th most recent voter (itself counts as now). Every window that starts after q
// holds answers from fewer than a quorum, and the first such window ends at most 2 election timeouts
// after q; so at tick q + 2·electionTimeoutTicks it has stepped down (q is at least the tick its voter set
// took effect: a membership change starts the count afresh). LEADER_SILENCE_TICKS_SLACK allows
// one tick for where in a tick an answer lands. "Heard" is generous: any answer in its term from that
// member (ShipSegment, Heartbeat, RequestVote) and any ReportApplied of its term from it.
//
// In network terms: once every link to a majority is cut, no answer from it arrives later than its
// call's deadline (2 election timeouts; later answers are dropped), so a cut-off leader steps down
// within 2 + 2 = 4 election timeouts of its own clock (±2% drift) — unless a request from before the
// cut is replayed late, which the simulator does on purpose and which counts as hearing from its sender.
import { voterIds } from '../../engine/roster.js';
import type { RpcResponse } from '../../engine/rpc.js';
import type { SimNode } from '../node.js';
import { violate } from '../violation.js';
import type { Checker, CheckerWorld, StepRecord } from './checker.js';

/** LEADER_SILENCE_ELECTION_TIMEOUTS: a leader that heard from no quorum for this many election timeouts of its ticks has stepped down. */
export const LEADER_SILENCE_ELECTION_TIMEOUTS = 2;
/** LEADER_SILENCE_TICKS_SLACK: one tick for where within a tick an answer lands. */
export const LEADER_SILENCE_TICKS_SLACK = 1;

interface LeaderWatch {
  incarnation: number;
  term: number;
  /** ticks: the leader's ticks since it won this term. */
  ticks: number;
  /** heard: member id -> the tick count when the leader last heard from it (absent = at the election). */
  heard: Map<number, number>;
  /** calls: requestId -> member id, for calls made as leader in this term not yet answered. */
  calls: Map<number, number>;
  silentSpell: boolean;
  /** voters and votersSinceTick: the voter set in force and the tick it took effect (the count restarts there). */
  voters: string;
  votersSinceTick: number;
}

export class LeaderStepDownChecker implements Checker {
  readonly name = 'leader-step-down';
  private readonly watches = new Map<number, LeaderWatch>();

  constructor(private readonly world: CheckerWorld) {}

  onCrash(node: SimNode): void {
    this.watches.delete(node.index);
  }

  afterStep(step: StepRecord): void {
    const { node, input, effects, before, after } = step;
    let w = this.watches.get(node.index);
    if (after.role !== 'leader') {
      if (w && before?.role === 'leader' && input.type === 'tick' && after.term === w.term)
        this.world.coverage?.add('check-quorum-step-down');
      if (w) this.watches.delete(node.index);
      return;
    }
    if (!w || w.incarnation !== node.incarnation || w.term !== after.term) {
      w = {
        incarnation: node.incarnation,
        term: after.term,
        ticks: 0,
        heard: new Map(),
        calls: new Map(),
        silentSpell: false,
        voters: '',
        votersSinceTick: 0,
      };
      this.watches.set(node.index, w);
    }
    for (const effect of effects)
      if (effect.type === 'send' && effect.toId !== 0) w.calls.set(effect.requestId, effect.toId);
    switch (input.type) {
      case 'response': {
        const from = w.calls.get(input.requestId);
        if (from === undefined) return;
        w.calls.delete(input.requestId);
        if (termOf(input.response) === w.term) w.heard.set(from, w.ticks);
        return;
      }
      case 'callFailed':
        w.calls.delete(input.requestId);
        return;
      case 'request':
        if (input.request.method === 'ReportApplied' && input.request.body.reporterTerm === w.term)
          w.heard.set(input.request.body.reporterShard, w.ticks);
        return;
      case 'tick':
        w.ticks++;
        this.checkSilence(node, w, step);
        return;
      default:
        return;
    }
  }

  private checkSilence(node: SimNode, w: LeaderWatch, step: StepRecord): void {
    const after = step.after;
    const voters = voterIds(after.roster);
    if (voters.length === 0) return;
    // A new voter set (a kind-4 record appended or truncated) is judged from when it took effect: the
    // engine's next window check uses it, whatever it heard before (seed 237: a removal left two voters).
    const voterKey = voters.join(',');
    if (voterKey !== w.voters) {
      w.voters = voterKey;
      w.votersSinceTick = w.ticks;
    }
    const times = voters.map((id) => (id === after.id ? w.ticks : (w.heard.get(id) ?? 0))).sort((a, b) => b - a);
    const quorumHeardTick = Math.max(times[Math.floor(voters.length / 2)]!, w.votersSinceTick);
    const silentTicks = w.ticks - quorumHeardTick;
    const electionTicks = node.config?.limits.electionTimeoutTicks ?? 10;
    if (silentTicks > electionTicks && !w.silentSpell) {
      w.silentSpell = true;
      this.world.coverage?.add('leader-quorum-silent');
    } else if (silentTicks <= electionTicks) {
      w.silentSpell = false;
    }
    const bound = LEADER_SILENCE_ELECTION_TIMEOUTS * electionTicks + LEADER_SILENCE_TICKS_SLACK;
    if (silentTicks > bound) {
      const heard = voters.map((id) => `${id}@${id === after.id ? 'self' : (w.heard.get(id) ?? 0)}`).join(' ');
      violate(
        this.name,
        `${node.name} is still leader of term ${after.term} ${silentTicks} of its ticks after it last heard from a quorum ` +
          `of voters (bound ${bound} = ${LEADER_SILENCE_ELECTION_TIMEOUTS} election timeouts + ${LEADER_SILENCE_TICKS_SLACK}; now tick ${w.ticks}; last heard: ${heard})`,
        node.index,
      );
    }
  }
}

function termOf(response: RpcResponse): number {
  switch (response.method) {
    case 'ShipSegment':
    case 'Heartbeat':
    case 'RequestVote':
    case 'JoinCluster':
      return response.body.term;
    case 'ReportApplied':
    case 'TimeoutNow':
      return -1;
  }
}
