// StoreSnapshots is the store's state machine as the node's snapshot transfer sees it
// (transports/node/snapshot-transfer.ts declares that interface, SnapshotState): the state is captured at
// once, copy-on-write, and encoded later as one file, store.json, in chunks between loop turns; an installed
// artifact's store.json is read back, checked to hold the state at the artifact's seq, and swapped in.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { MemberFilter, SnapshotFilter } from '../engine/types.js';
import { cutStoreState, strayRecord } from './snapshot-cut.js';
import {
  decodeStoreSnapshot,
  encodeCapture,
  STORE_SNAPSHOT_FILE,
  type StoreState,
  type StoreStateMachine,
} from './state-machine.js';

/** ENCODE_CHUNK_ENTRY_COUNT is how many documents are encoded between yields to the event loop. */
export const ENCODE_CHUNK_ENTRY_COUNT = 2_048;

/** SnapshotArtifactAt names an artifact on disk: its directory, its name (for errors) and the seq it holds. */
export interface SnapshotArtifactAt {
  dir: string;
  name: string;
  meta: { seq: number; filter?: SnapshotFilter };
}

export class StoreSnapshots {
  constructor(private readonly stateMachine: StoreStateMachine) {}

  get appliedSeq(): number {
    return this.stateMachine.appliedSeq;
  }

  /** capture holds the state now (copy-on-write: the key list copied, captureSnapshot); encode lays it out as store.json later, pausing between chunks. */
  capture(): { encode(pause: () => Promise<void>): Promise<Array<{ path: string; bytes: Uint8Array }>> } {
    const capture = this.stateMachine.captureSnapshot();
    return {
      encode: async (pause) => [
        { path: STORE_SNAPSHOT_FILE, bytes: await encodeCapture(capture, ENCODE_CHUNK_ENTRY_COUNT, pause) },
      ],
    };
  }

  /**
   * load reads an installed artifact's state; the function it resolves with swaps it in (watchers hear the
   * difference). A filtered snapshot holding a record outside the filter it names is refused.
   */
  async load(artifact: SnapshotArtifactAt): Promise<() => void> {
    const state = await loadStoreState(artifact);
    const cut = artifact.meta.filter;
    const stray = cut ? strayRecord(state, cut.filter) : null;
    if (stray !== null)
      throw new Error(`snapshot ${artifact.name}: record ${JSON.stringify(stray)} is outside the filter it was cut by`);
    return () => this.stateMachine.restore(state);
  }

  /** cut reads a staged artifact's state and lays it out cut to `filter`'s communities (snapshot-cut.ts). */
  async cut(artifact: SnapshotArtifactAt, filter: MemberFilter): Promise<Array<{ path: string; bytes: Uint8Array }>> {
    const state = await loadStoreState(artifact);
    const pause = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));
    return [
      {
        path: STORE_SNAPSHOT_FILE,
        bytes: await encodeCapture(cutStoreState(state, filter), ENCODE_CHUNK_ENTRY_COUNT, pause),
      },
    ];
  }
}

/** loadStoreState reads an artifact's store.json and checks it holds the state at the artifact's seq. */
export async function loadStoreState(artifact: SnapshotArtifactAt): Promise<StoreState> {
  const decoded = decodeStoreSnapshot(await readFile(join(artifact.dir, STORE_SNAPSHOT_FILE)));
  if (!decoded.ok) throw new Error(`snapshot ${artifact.name}: ${decoded.reason}`);
  if (decoded.state.appliedSeq !== artifact.meta.seq) {
    throw new Error(
      `snapshot ${artifact.name}: ${STORE_SNAPSHOT_FILE} is at seq ${decoded.state.appliedSeq}, its meta says ${artifact.meta.seq}`,
    );
  }
  return decoded.state;
}
