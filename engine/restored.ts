import type { RestoredState } from './types.js';

/** emptyRestoredState is a brand-new node's storage: nothing recovered. */
export function emptyRestoredState(): RestoredState {
  return {
    hardState: {
      term: 0,
      votedFor: 0,
      selfId: 0,
      commitSeq: 0,
      rosterBase: null,
      halted: '',
      reseed: false,
      removed: false,
    },
    snapshot: null,
    snapshotHeader: null,
    entries: [],
    appliedSeq: 0,
  };
}
