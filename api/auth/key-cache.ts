// ApiKeyCache: this process's copy of the key records it has authenticated, by key hash, so that a request
// does not read and copy two store records to learn what it learnt a moment ago. It is correct only behind a
// read barrier: the store's watch empties it on every change under keys/ and keys-by-hash/ as this node
// applies it, so once a request's barrier holds (this node has applied every write acknowledged before the
// request began), a cached record is the record the store itself would give. A revocation acknowledged on any
// node is therefore refused at once here, and a node that cannot take the barrier (cut off, no leader)
// answers 503 STORE_UNAVAILABLE rather than trusting its cache. The barrier is linearizable: its read index
// is confirmed by the leader's engine with a heartbeat round a majority accepted (engine/read-index.ts), so a
// deposed leader that still believes it leads gives none.
import type { DocumentStore } from '../../store/document-store.js';
import type { ApiKeyRecord } from '../records.js';
import { storeKeys } from '../records.js';

/** keyCacheEntriesMax bounds the cached keys; the oldest entries go first. */
export const keyCacheEntriesMax = 10_000;

export class ApiKeyCache {
  private readonly byHash = new Map<string, ApiKeyRecord>();
  /** generation counts invalidations: a lookup started before one must not fill the cache. */
  private generation = 0;
  private readonly stopWatching: Array<() => void>;

  constructor(
    store: DocumentStore,
    private readonly entriesMax = keyCacheEntriesMax,
  ) {
    // Key changes are rare (create, revoke, rotate), so any of them empties the whole cache.
    const invalidate = (): void => {
      this.generation++;
      this.byHash.clear();
    };
    this.stopWatching = [store.watch(storeKeys.apiKeys, invalidate), store.watch('keys-by-hash/', invalidate)];
  }

  /** get returns the record cached for a key hash (hex); only call it behind a read barrier. */
  get(hashHex: string): ApiKeyRecord | undefined {
    return this.byHash.get(hashHex);
  }

  /** startLookup notes the generation before a store lookup; fill only keeps the result if nothing changed since. */
  startLookup(): number {
    return this.generation;
  }

  fill(startedGeneration: number, hashHex: string, record: ApiKeyRecord): void {
    if (startedGeneration !== this.generation) return;
    this.byHash.set(hashHex, record);
    if (this.byHash.size > this.entriesMax) this.byHash.delete(this.byHash.keys().next().value!);
  }

  get size(): number {
    return this.byHash.size;
  }

  close(): void {
    for (const stop of this.stopWatching) stop();
    this.byHash.clear();
  }
}
