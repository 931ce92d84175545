// MemoryDocumentStore is a TEST DOUBLE of DocumentStore: a single-process, non-durable, sorted in-memory
// map. It exists so the API can be built and tested before the replicated store is ready; it replicates
// nothing and forgets everything on exit. Production wiring must pass the replicated store instead.
import type {
  DocumentStore,
  JsonObject,
  ListOptions,
  ListResult,
  StoreChange,
  StoreEntry,
  StoreWatcher,
  VersionedValue,
  WriteOptions,
} from './document-store.js';
import { VersionConflictError } from './document-store.js';
import { cloneJson } from './json-clone.js';
import { SortedKeys } from './sorted-keys.js';
import { StoreWatchers } from './store-watchers.js';

/** memoryStoreListLimitMax caps one list page, like a real store would, so callers must page. */
export const memoryStoreListLimitMax = 1000;
/** memoryStoreKeyBytesMax mirrors the limit a replicated store puts on keys. */
export const memoryStoreKeyBytesMax = 1024;

interface Slot {
  value: JsonObject;
  version: number;
}

export class MemoryDocumentStore implements DocumentStore {
  private readonly slots = new Map<string, Slot>();
  private readonly sortedKeys = new SortedKeys();
  private revision = 0;
  private readonly watchers = new StoreWatchers();

  async get<T extends JsonObject = JsonObject>(key: string): Promise<VersionedValue<T> | null> {
    checkKey(key);
    const slot = this.slots.get(key);
    if (!slot) return null;
    return { value: cloneJson(slot.value) as T, version: slot.version };
  }

  async list<T extends JsonObject = JsonObject>(prefix: string, options: ListOptions = {}): Promise<ListResult<T>> {
    const limit = Math.max(1, Math.min(options.limit ?? memoryStoreListLimitMax, memoryStoreListLimitMax));
    const page = this.sortedKeys.page(prefix, limit, options.after);
    const entries = page.keys.map((key): StoreEntry<T> => {
      const slot = this.slots.get(key)!;
      return { key, value: (options.shared ? slot.value : cloneJson(slot.value)) as T, version: slot.version };
    });
    return { entries, nextAfter: page.nextAfter };
  }

  async put(key: string, value: JsonObject, options: WriteOptions = {}): Promise<{ version: number }> {
    checkKey(key);
    if (value === null || typeof value !== 'object' || Array.isArray(value)) {
      throw new TypeError('store values are JSON objects');
    }
    const current = this.slots.get(key);
    this.checkExpected(key, current, options);
    // The JSON round trip both copies the value and rejects what JSON cannot hold (functions, cycles).
    const stored = JSON.parse(JSON.stringify(value)) as JsonObject;
    const version = ++this.revision;
    if (!current) this.sortedKeys.insert(key);
    this.slots.set(key, { value: stored, version });
    this.notify({ kind: 'put', key, value: stored, version });
    return { version };
  }

  async delete(key: string, options: WriteOptions = {}): Promise<{ deleted: boolean }> {
    checkKey(key);
    const current = this.slots.get(key);
    this.checkExpected(key, current, options);
    if (!current) return { deleted: false };
    this.slots.delete(key);
    this.sortedKeys.remove(key);
    this.notify({ kind: 'delete', key, version: ++this.revision });
    return { deleted: true };
  }

  watch(prefix: string, watcher: StoreWatcher): () => void {
    return this.watchers.add(prefix, watcher);
  }

  private checkExpected(key: string, current: Slot | undefined, options: WriteOptions): void {
    if (options.expectedVersion === undefined) return;
    const actual = current?.version ?? 0;
    if (actual !== options.expectedVersion) throw new VersionConflictError(key, options.expectedVersion, actual);
  }

  private notify(change: StoreChange): void {
    this.watchers.notify(change);
  }
}

function checkKey(key: string): void {
  if (typeof key !== 'string' || key.length === 0 || Buffer.byteLength(key) > memoryStoreKeyBytesMax) {
    throw new RangeError(`store keys are 1..${memoryStoreKeyBytesMax} bytes`);
  }
}
