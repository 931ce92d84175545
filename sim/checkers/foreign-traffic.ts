// Foreign traffic (sim/foreign.ts) changes nothing: a forged call that reaches an engine may be
// answered (a refusal), reported (a warning) and may make the node ask a member it knows who
// the members are (a JoinCluster roster probe) — nothing else. No hard state (term, vote), no
// log write, no apply, no role, leader, commit, readiness or lag-gauge change. A call carrying
// another cluster's id never reaches an engine at all: the edge refuses it first.
import type { Effect, EngineStatus } from '../../engine/types.js';
import { violate } from '../violation.js';
import type { Checker, CheckerWorld, StepRecord } from './checker.js';

export class ForeignTrafficChecker implements Checker {
  readonly name = 'foreign-traffic';
  /** delivered counts forged calls that reached an engine. */
  delivered = 0;

  constructor(private readonly world: CheckerWorld) {}

  afterStep(step: StepRecord): void {
    const { input, node, effects, before, after } = step;
    if (input.type !== 'request' || !this.world.foreignCall) return;
    const forged = this.world.foreignCall(input.callId);
    if (!forged) return;
    this.delivered++;
    const what = `a forged ${input.request.method} (${forged.kind})`;
    if (this.world.clusterId !== undefined && forged.cluster !== this.world.clusterId) {
      violate(
        this.name,
        `${what} carrying cluster id ${forged.cluster} reached ${node.name}'s engine: the edge must refuse another cluster's call`,
        node.index,
      );
    }
    for (const effect of effects) {
      if (!allowed(effect, input.callId)) {
        violate(this.name, `${what} made ${node.name} ${describe(effect)}`, node.index);
      }
    }
    if (before) {
      const changed = changedFields(before, after);
      if (changed.length > 0) violate(this.name, `${what} changed ${node.name}'s ${changed.join(', ')}`, node.index);
    }
  }
}

/** allowed: answers to the forged call itself, warnings, and a roster probe (JoinCluster to a member). */
function allowed(effect: Effect, callId: number): boolean {
  switch (effect.type) {
    case 'reply':
    case 'replyError':
    case 'streamChunk':
    case 'streamEnd':
    case 'serveSnapshot':
      return effect.callId === callId;
    case 'warning':
      return true;
    case 'send':
      return effect.request.method === 'JoinCluster';
    default:
      return false;
  }
}

function describe(effect: Effect): string {
  switch (effect.type) {
    case 'saveHardState':
      return `save hard state (term ${effect.hardState.term}, vote ${effect.hardState.votedFor})`;
    case 'append':
      return `append ${effect.entries.length} entries from seq ${effect.fromSeq}`;
    case 'send':
      return `send ${effect.request.method} to ${effect.to}`;
    case 'readiness':
      return `turn ${effect.ready ? 'ready' : 'unready'} (${effect.reason})`;
    case 'roleChanged':
      return `become ${effect.role} at term ${effect.term}`;
    default:
      return `emit ${effect.type}`;
  }
}

/** changedFields lists the status fields a forged call must never move. */
function changedFields(before: EngineStatus, after: EngineStatus): string[] {
  const out: string[] = [];
  const fields = [
    'term',
    'leaderId',
    'role',
    'lastSeq',
    'lastTerm',
    'commitSeq',
    'appliedSeq',
    'durableSeq',
    'matchedSeq',
    'ready',
    'reseed',
    'removed',
    'halted',
  ] as const;
  for (const f of fields) if (before[f] !== after[f]) out.push(`${f} (${String(before[f])} -> ${String(after[f])})`);
  if (JSON.stringify(before.lagGaugeByShard) !== JSON.stringify(after.lagGaugeByShard)) out.push('lag gauge');
  if (JSON.stringify(before.versionsSeen) !== JSON.stringify(after.versionsSeen)) out.push('versions seen');
  if (before.roster.membershipVersion !== after.roster.membershipVersion) out.push('roster');
  return out;
}
