// Roster helpers: the kind-4 record body codec and role queries. The body is
// canonical JSON (members sorted by id) so every node encodes a roster alike.
import { MemberRole, type MemberFilter, type Roster } from './types.js';
import type { MemberInfo } from './rpc.js';
import { canonicalFilter, filterProblem } from './communities.js';

export function encodeRoster(roster: Roster): Uint8Array {
  const members = [...roster.members]
    .sort((a, b) => a.id - b.id)
    .map((m) => ({ id: m.id, name: m.name, grpcAddr: m.grpcAddr, httpAddr: m.httpAddr, role: m.role }));
  const body: Record<string, unknown> = { v: roster.membershipVersion, next: roster.nextMemberId, members };
  // The overlay fields are written only when some member is filtered, so every roster without one
  // encodes exactly as before they existed (and an older binary reads the members it knows).
  if (roster.filters && Object.keys(roster.filters).length > 0) body.filters = roster.filters;
  if (roster.refilling && roster.refilling.length > 0) body.refilling = roster.refilling;
  return new TextEncoder().encode(JSON.stringify(body));
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
    const roster: Roster = { membershipVersion: raw.v, nextMemberId: raw.next, members };
    const overlays = decodeOverlays(raw as Record<string, unknown>, members);
    if (overlays === null) return null;
    if (overlays.filters) roster.filters = overlays.filters;
    if (overlays.refilling) roster.refilling = overlays.refilling;
    return roster;
  } catch {
    return null;
  }
}

/** decodeOverlays reads the optional filters and refilling fields; null when they are malformed. */
function decodeOverlays(
  raw: Record<string, unknown>,
  members: MemberInfo[],
): { filters?: Record<number, MemberFilter>; refilling?: number[] } | null {
  const out: { filters?: Record<number, MemberFilter>; refilling?: number[] } = {};
  const ids = new Set(members.map((m) => m.id));
  if (raw.filters !== undefined) {
    if (typeof raw.filters !== 'object' || raw.filters === null) return null;
    const filters: Record<number, MemberFilter> = {};
    for (const [key, value] of Object.entries(raw.filters as Record<string, unknown>)) {
      const id = Number(key);
      const f = value as MemberFilter;
      if (!ids.has(id) || typeof f !== 'object' || f === null || filterProblem(f) !== null) return null;
      filters[id] = canonicalFilter(f);
    }
    out.filters = filters;
  }
  if (raw.refilling !== undefined) {
    if (!Array.isArray(raw.refilling) || !raw.refilling.every((id) => typeof id === 'number' && ids.has(id)))
      return null;
    out.refilling = raw.refilling as number[];
  }
  return out;
}

export function memberById(roster: Roster, id: number): MemberInfo | undefined {
  return roster.members.find((m) => m.id === id);
}

export function memberByName(roster: Roster, name: string): MemberInfo | undefined {
  return roster.members.find((m) => m.name === name);
}

/**
 * votersByMembers: each members array's voter ids, computed once (with the filters they were computed
 * under: a filtered member is never a voter, whatever its role says, as its log is not the log). A roster's
 * members are never changed in place (a new roster is decoded or built instead), and quorum counts, read
 * rounds and the simulator's checkers ask for a roster's voters many times per step; the lists are frozen,
 * so a caller that tried to change one would throw rather than corrupt the next caller's answer.
 */
const votersByMembers = new WeakMap<readonly MemberInfo[], { filters: Roster['filters']; voters: readonly number[] }>();

export function voterIds(roster: Roster): readonly number[] {
  const cached = votersByMembers.get(roster.members);
  if (cached !== undefined && cached.filters === roster.filters) return cached.voters;
  const voters = Object.freeze(
    roster.members.filter((m) => m.role === MemberRole.Voter && !roster.filters?.[m.id]).map((m) => m.id),
  );
  votersByMembers.set(roster.members, { filters: roster.filters, voters });
  return voters;
}

/** activeIds are the members a leader replicates to: voters and learners. */
export function activeIds(roster: Roster): number[] {
  return roster.members.filter((m) => m.role !== MemberRole.Removed).map((m) => m.id);
}

export function isVoter(roster: Roster, id: number): boolean {
  return memberById(roster, id)?.role === MemberRole.Voter && !roster.filters?.[id];
}

export function isRemoved(roster: Roster, id: number): boolean {
  return memberById(roster, id)?.role === MemberRole.Removed;
}

export function withMember(roster: Roster, member: MemberInfo): Roster {
  const members = roster.members
    .filter((m) => m.id !== member.id)
    .concat([member])
    .sort((a, b) => a.id - b.id);
  const next: Roster = {
    membershipVersion: roster.membershipVersion + 1,
    nextMemberId: Math.max(roster.nextMemberId, member.id + 1),
    members,
  };
  // A learner keeps its filter through other members' changes; one promoted or removed sheds it.
  const keepsOverlays = member.role === MemberRole.Learner;
  const filters = { ...(roster.filters ?? {}) };
  if (!keepsOverlays) delete filters[member.id];
  const refilling = (roster.refilling ?? []).filter((id) => keepsOverlays || id !== member.id);
  if (Object.keys(filters).length > 0) next.filters = filters;
  if (refilling.length > 0) next.refilling = refilling;
  return next;
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
