// Hand-made world pieces for checker tests: nodes, statuses, entries.
import { CURRENT_COMPAT } from '../../engine/limits.js';
import { MemberRole, type Compat, type EngineStatus, type Entry, type Roster } from '../../engine/types.js';
import { NodeClock } from '../../sim/clock.js';
import { SimNode } from '../../sim/node.js';
import type { CheckerWorld } from '../../sim/checkers/checker.js';

export function makeNode(index: number, compat: Compat = CURRENT_COMPAT, isJoiner = false): SimNode {
  const name = `n${index + 1}`;
  return new SimNode(
    { index, name, grpcAddr: `${name}:7000`, httpAddr: `http://${name}:8080`, compat, isJoiner },
    new NodeClock(0, 100, 0),
  );
}

export function roster(voters: number[], learners: number[] = [], removed: number[] = []): Roster {
  const member = (id: number, role: number) => ({
    id,
    name: `n${id}`,
    grpcAddr: `n${id}:7000`,
    httpAddr: `http://n${id}:8080`,
    role,
  });
  return {
    membershipVersion: 1,
    nextMemberId: 10,
    members: [
      ...voters.map((id) => member(id, MemberRole.Voter)),
      ...learners.map((id) => member(id, MemberRole.Learner)),
      ...removed.map((id) => member(id, MemberRole.Removed)),
    ].sort((a, b) => a.id - b.id),
  };
}

export function status(over: Partial<EngineStatus> = {}): EngineStatus {
  return {
    id: 1,
    name: 'n1',
    role: 'follower',
    term: 1,
    leaderId: 0,
    lastSeq: 0,
    lastTerm: 0,
    commitSeq: 0,
    appliedSeq: 0,
    durableSeq: 0,
    matchedSeq: 0,
    snapshotSeq: 0,
    ready: false,
    halted: '',
    reseed: false,
    removed: false,
    lagGaugeByShard: {},
    roster: roster([1, 2, 3]),
    versionsSeen: {},
    ...over,
  };
}

export function entry(seq: number, term: number, text = `e${seq}t${term}`, kind = 1): Entry {
  return { seq, term, kind, data: new TextEncoder().encode(text) };
}

/** world makes a CheckerWorld whose member id i is node index i-1. */
export function world(nodes: SimNode[]): CheckerWorld {
  return { nodes, nodeByMemberId: (id) => nodes[id - 1] };
}
