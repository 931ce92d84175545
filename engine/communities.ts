// The community-overlay filter (docs/protocol.md, "Filtered members"; the spec's ShipSegmentRequest
// .leader_last_seq): a filtered learner holds only the event batches of its communities — keys under
// its prefixes, records of its tenants. The leader replaces every other event batch with a withheld
// placeholder (seq and term, no data) before it ships, so the member's log keeps the leader's
// numbering and terms (log matching, frontiers and reports mean what they mean for everyone) while
// the data of other communities never leaves the leader.
import {
  EntryKind,
  type Community,
  type CommunityReader,
  type Entry,
  type MemberFilter,
  type Roster,
} from './types.js';

/** FILTER_PREFIX_COUNT_MAX bounds the key prefixes of one member's filter. */
export const FILTER_PREFIX_COUNT_MAX = 64;
/** FILTER_TENANT_COUNT_MAX bounds the tenants of one member's filter. */
export const FILTER_TENANT_COUNT_MAX = 64;
/** FILTER_ITEM_CHARS_MAX bounds one prefix or tenant, in characters. */
export const FILTER_ITEM_CHARS_MAX = 256;

/** filterProblem names what is wrong with a filter an operator asked for, null when it is well formed. */
export function filterProblem(filter: MemberFilter): string | null {
  if (!Array.isArray(filter.prefixes) || !Array.isArray(filter.tenants)) return 'prefixes and tenants must be lists';
  if (filter.prefixes.length === 0 && filter.tenants.length === 0)
    return 'a filter needs at least one key prefix or tenant (to remove a filter, clear it)';
  if (filter.prefixes.length > FILTER_PREFIX_COUNT_MAX)
    return `${filter.prefixes.length} prefixes, limit ${FILTER_PREFIX_COUNT_MAX}`;
  if (filter.tenants.length > FILTER_TENANT_COUNT_MAX)
    return `${filter.tenants.length} tenants, limit ${FILTER_TENANT_COUNT_MAX}`;
  for (const item of [...filter.prefixes, ...filter.tenants]) {
    if (typeof item !== 'string' || item.length === 0 || item.length > FILTER_ITEM_CHARS_MAX)
      return `each prefix and tenant is 1-${FILTER_ITEM_CHARS_MAX} characters`;
  }
  return null;
}

/** canonicalFilter sorts and de-duplicates, so every node encodes the same roster for the same filter. */
export function canonicalFilter(filter: MemberFilter): MemberFilter {
  return { prefixes: [...new Set(filter.prefixes)].sort(), tenants: [...new Set(filter.tenants)].sort() };
}

/** filterOf: member `id`'s filter in `roster`, null when it is not filtered. */
export function filterOf(roster: Roster, id: number): MemberFilter | null {
  return roster.filters?.[id] ?? null;
}

/** isRefilling: member `id`'s filter was removed and it has not yet shown the leader a full log. */
export function isRefilling(roster: Roster, id: number): boolean {
  return roster.refilling?.includes(id) ?? false;
}

/**
 * withFilter: the next roster with member `id` filtered by `filter` (null: unfiltered, and then refilling
 * until promoted). The membership version rises by one like every roster change.
 */
export function withFilter(roster: Roster, id: number, filter: MemberFilter | null): Roster {
  const filters = { ...(roster.filters ?? {}) };
  const refilling = new Set(roster.refilling ?? []);
  if (filter === null) {
    if (filters[id] !== undefined) refilling.add(id);
    delete filters[id];
  } else {
    filters[id] = canonicalFilter(filter);
    refilling.delete(id);
  }
  return withOverlays({ ...roster, membershipVersion: roster.membershipVersion + 1 }, filters, [...refilling]);
}

/** withoutOverlaysOf: `roster` with member `id` neither filtered nor refilling (promoted or removed). */
export function withoutOverlaysOf(roster: Roster, id: number): Roster {
  const filters = { ...(roster.filters ?? {}) };
  delete filters[id];
  return withOverlays(
    roster,
    filters,
    (roster.refilling ?? []).filter((x) => x !== id),
  );
}

/** withOverlays sets the optional fields, leaving them out when empty (so an unfiltered roster encodes as before). */
function withOverlays(roster: Roster, filters: Record<number, MemberFilter>, refilling: number[]): Roster {
  const next: Roster = {
    membershipVersion: roster.membershipVersion,
    nextMemberId: roster.nextMemberId,
    members: roster.members,
  };
  if (Object.keys(filters).length > 0) next.filters = filters;
  if (refilling.length > 0) next.refilling = [...refilling].sort((a, b) => a - b);
  return next;
}

/** inCommunities: whether an event batch with this community belongs to the filter's communities. */
export function inCommunities(filter: MemberFilter, community: Community | null): boolean {
  if (community === null) return false;
  // A command that cannot say its tenant (a delete carries no record) may concern any tenant's record:
  // a tenant filter takes it, so a deleted record of its tenants does not linger (the key name travels).
  if (community.tenant === null && filter.tenants.length > 0) return true;
  if (community.tenant && filter.tenants.includes(community.tenant)) return true;
  return filter.prefixes.some((p) => community.key.startsWith(p));
}

/**
 * inCommunitiesOf: what of `items` a member with `filter` may hold — the one definition of "in its
 * communities" for its ships (filteredEntries) and for the state a filtered snapshot is cut to (the
 * drivers read each item's community the way they read an event batch's).
 */
export function inCommunitiesOf<T>(
  items: Iterable<T>,
  filter: MemberFilter,
  communityOf: (item: T) => Community | null,
): T[] {
  const kept: T[] = [];
  for (const item of items) if (inCommunities(filter, communityOf(item))) kept.push(item);
  return kept;
}

/**
 * filteredEntries: what a member with `filter` is shipped of `entries`: term barriers and membership
 * records whole (every member needs its roster and terms), event batches of its communities whole, every
 * other event batch as a withheld placeholder.
 */
export function filteredEntries(entries: Entry[], filter: MemberFilter, reader: CommunityReader | undefined): Entry[] {
  return entries.map((e) =>
    e.kind !== EntryKind.EventBatch || (reader !== undefined && inCommunities(filter, reader(e.data)))
      ? e
      : withheld(e.seq, e.term),
  );
}

/** withheld is the placeholder of the entry at (seq, term). */
export function withheld(seq: number, term: number): Entry {
  return { seq, term, kind: EntryKind.Withheld, data: new Uint8Array(0) };
}
