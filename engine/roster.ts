// Roster helpers: the kind-4 record body codec and role queries. The body is
// canonical JSON (members sorted by id) so every node encodes a roster alike.
import { MemberRole, type Roster } from './types.js';
import type { MemberInfo } from './rpc.js';

export function encodeRoster(roster: Roster): Uint8Array {
  const members = [...roster.members]
    .sort((a, b) => a.id - b.id)
    .map((m) => ({ id: m.id, name: m.name, grpcAddr: m.grpcAddr, httpAddr: m.httpAddr, role: m.role }));
  return new TextEncoder().encode(JSON.stringify({ v: roster.membershipVersion, next: roster.nextMemberId, members }));
}

/** decodeRoster returns null for a body that is not a roster. */
export function decodeRoster(bytes: Uint8Array): Roster | null {
  try {
    const raw = JSON.parse(new TextDecoder().decode(bytes)) as { v: unknown; next: unknown; members: unknown };
    if (typeof raw.v !== 'number' || typeof raw.next !== 'number' || !Array.isArray(raw.members)) return null;
    const members: MemberInfo[] = [];
    for (const m of raw.members as Record<string, unknown>[]) {
      if (
        typeof m.id !== 'number' ||
        typeof m.name !== 'string' ||
        typeof m.grpcAddr !== 'string' ||
        typeof m.httpAddr !== 'string' ||
        typeof m.role !== 'number'
      )
        return null;
      members.push({ id: m.id, name: m.name, grpcAddr: m.grpcAddr, httpAddr: m.httpAddr, role: m.role });
    }
    return { membershipVersion: raw.v, nextMemberId: raw.next, members };
  } catch {
    return null;
  }
}

export function memberById(roster: Roster, id: number): MemberInfo | undefined {
  return roster.members.find((m) => m.id === id);
}

export function memberByName(roster: Roster, name: string): MemberInfo | undefined {
  return roster.members.find((m) => m.name === name);
}

/**
 * votersByMembers: each members array's voter ids, computed once. A roster's members are never changed
 * in place (a new roster is decoded or built instead), and quorum counts, read rounds and the
 * simulator's checkers ask for a roster's voters many times per step; the lists are frozen, so a
 * caller that tried to change one would throw rather than corrupt the next caller's answer.
 */
const votersByMembers = new WeakMap<readonly MemberInfo[], readonly number[]>();

export function voterIds(roster: Roster): readonly number[] {
  let voters = votersByMembers.get(roster.members);
  if (voters === undefined) {
    voters = Object.freeze(roster.members.filter((m) => m.role === MemberRole.Voter).map((m) => m.id));
    votersByMembers.set(roster.members, voters);
  }
  return voters;
}

/** activeIds are the members a leader replicates to: voters and learners. */
export function activeIds(roster: Roster): number[] {
  return roster.members.filter((m) => m.role !== MemberRole.Removed).map((m) => m.id);
}

export function isVoter(roster: Roster, id: number): boolean {
  return memberById(roster, id)?.role === MemberRole.Voter;
}

export function isRemoved(roster: Roster, id: number): boolean {
  return memberById(roster, id)?.role === MemberRole.Removed;
}

export function withMember(roster: Roster, member: MemberInfo): Roster {
  const members = roster.members
    .filter((m) => m.id !== member.id)
    .concat([member])
    .sort((a, b) => a.id - b.id);
  return {
    membershipVersion: roster.membershipVersion + 1,
    nextMemberId: Math.max(roster.nextMemberId, member.id + 1),
    members,
  };
}

/** bootstrapRoster makes a founding roster: all voters, ids 1..n, version 1. */
export function bootstrapRoster(members: { name: string; grpcAddr: string; httpAddr: string }[]): Roster {
  return {
    membershipVersion: 1,
    nextMemberId: members.length + 1,
    members: members.map((m, i) => ({
      id: i + 1,
      name: m.name,
      grpcAddr: m.grpcAddr,
      httpAddr: m.httpAddr,
      role: MemberRole.Voter,
    })),
  };
}
