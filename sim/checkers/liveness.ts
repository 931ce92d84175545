// Liveness: after the faults heal, the core must converge within a bound: one
// leader that every live member follows, every acknowledged write committed on
// every live member, and every live joiner admitted and ready (unless an older
// voter without capability bit 0 rightly blocks all membership changes).
import { CAPABILITY_KIND4, MemberRole } from '../../engine/types.js';
import { voterIds } from '../../engine/roster.js';
import type { SimNode } from '../node.js';

export interface LivenessInput {
  core: readonly SimNode[];
  maxAckedSeq: number;
  nodeByMemberId(id: number): SimNode | undefined;
}

/** livenessGap says what still keeps the core from having converged, or null when it has. */
export function livenessGap(input: LivenessInput): string | null {
  const live = input.core.filter((n) => n.state === 'up' && n.status);
  const leaders = live.filter((n) => n.status!.role === 'leader');
  if (leaders.length === 0) return 'no live leader';
  const leader = leaders.reduce((a, b) => (b.status!.term > a.status!.term ? b : a));
  const ls = leader.status!;
  const roster = ls.roster;
  const memberIds = new Set(roster.members.filter((m) => m.role !== MemberRole.Removed).map((m) => m.id));
  const gated = voterIds(roster).some((id) => {
    const node = input.nodeByMemberId(id);
    return node !== undefined && (node.id.compat.capabilities & CAPABILITY_KIND4) === 0;
  });
  for (const node of live) {
    const s = node.status!;
    // Removed members owe nothing; a joiner removed before it learned its id is known by name.
    const removed = roster.members.some(
      (m) => (m.id === s.id || m.name === node.name) && m.role === MemberRole.Removed,
    );
    if (s.removed || removed) continue;
    const isMember = s.id !== 0 && memberIds.has(s.id);
    if (!isMember) {
      if (node.id.isJoiner && !gated) return `joiner ${node.name} is not a member of leader ${leader.name}'s roster`;
      continue;
    }
    if (s.term !== ls.term || s.leaderId !== ls.id) {
      return `${node.name} is at term ${s.term} following ${s.leaderId}, leader ${leader.name} is id ${ls.id} at term ${ls.term}`;
    }
    if (s.commitSeq < input.maxAckedSeq)
      return `${node.name} has committed ${s.commitSeq} < acknowledged ${input.maxAckedSeq}`;
    if (node.id.isJoiner && !s.ready) return `joiner ${node.name} is not ready`;
  }
  return null;
}
