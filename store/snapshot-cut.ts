// The store's half of a filtered snapshot (docs/protocol.md, "Filtered snapshots"): the leader cuts its
// state to a filtered member's communities, and the member refuses a cut that holds a record outside them.
// A record's community is read as storeCommunityOf reads the put that wrote it (its key, and its `tenant`
// field), and kept by the engine's one definition of "in its communities" (inCommunitiesOf).
import { inCommunities, inCommunitiesOf } from '../engine/communities.js';
import type { MemberFilter } from '../engine/types.js';
import type { JsonObject } from './document-store.js';
import {
  captureOfRows,
  dedupRowsOf,
  type CapturedDedup,
  type SnapshotCapture,
  type StoreState,
} from './state-machine.js';

/** storeCommunityOfRecord: the community of a record the state holds, as of the put that wrote it. */
export function storeCommunityOfRecord(key: string, value: JsonObject): { key: string; tenant: string } {
  return { key, tenant: typeof value.tenant === 'string' ? value.tenant : '' };
}

/**
 * cutStoreState: `state` cut to `filter`'s communities, as a capture to encode. The request-id table is left
 * out: its rows name other communities' writes, and a filtered member forwards every write to the leader.
 */
export function cutStoreState(state: StoreState, filter: MemberFilter): SnapshotCapture {
  const kept = inCommunitiesOf(state.sortedKeys, filter, (key) =>
    storeCommunityOfRecord(key, state.slots.get(key)!.value),
  );
  return captureOfKeys(state, kept, []);
}

/** wholeStoreState: all of `state`, request ids too, as a capture to encode (a layered artifact served as one file). */
export function wholeStoreState(state: StoreState): SnapshotCapture {
  return captureOfKeys(state, state.sortedKeys, dedupRowsOf(state.dedup));
}

function captureOfKeys(state: StoreState, keys: readonly string[], dedup: CapturedDedup[]): SnapshotCapture {
  return captureOfRows(
    state.appliedSeq,
    keys.map((key) => {
      const slot = state.slots.get(key)!;
      return [key, slot.version, slot.value];
    }),
    dedup,
  );
}

/** strayRecord: the key of a record of `state` outside `filter`'s communities, null when there is none. */
export function strayRecord(state: StoreState, filter: MemberFilter): string | null {
  for (const key of state.sortedKeys)
    if (!inCommunities(filter, storeCommunityOfRecord(key, state.slots.get(key)!.value))) return key;
  return null;
}
