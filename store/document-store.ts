// DocumentStore is the only thing the API knows about persistence: an ordered key/value store of JSON
// objects with per-key versions, compare-and-set and change notifications. The in-memory double
// (memory-store.ts) and the replicated store both implement it, so routes never change when one is swapped
// for the other.

export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };
export type JsonObject = { [key: string]: JsonValue };

export interface VersionedValue<T extends JsonObject = JsonObject> {
  value: T;
  /** version is positive and grows with every write to the store; 0 is never a stored version. */
  version: number;
}

export interface StoreEntry<T extends JsonObject = JsonObject> extends VersionedValue<T> {
  key: string;
}

export interface ListOptions {
  /** limit caps the entries returned; a store may cap it lower (see listLimitMax of the implementation). */
  limit?: number;
  /** after starts the listing at the first key strictly greater than this one (an exclusive cursor). */
  after?: string;
  /**
   * shared: the caller only reads the values and never changes them, so the store may hand out its own
   * objects instead of copies (a write replaces a stored object, never changes it). Default false: copies.
   */
  shared?: boolean;
}

export interface ListResult<T extends JsonObject = JsonObject> {
  entries: StoreEntry<T>[];
  /** nextAfter is the cursor for the next page, or null when this page reached the end of the prefix. */
  nextAfter: string | null;
}

export interface WriteOptions {
  /**
   * expectedVersion makes the write a compare-and-set: 0 means the key must not exist, any other value must
   * equal the key's current version. A mismatch rejects with VersionConflictError and changes nothing.
   */
  expectedVersion?: number;
}

export type StoreChange =
  { kind: 'put'; key: string; value: JsonObject; version: number } | { kind: 'delete'; key: string; version: number };

export type StoreWatcher = (change: StoreChange) => void;

export interface DocumentStore {
  get<T extends JsonObject = JsonObject>(key: string): Promise<VersionedValue<T> | null>;
  /** list returns the entries whose key starts with prefix, in ascending key order (UTF-16 code units). */
  list<T extends JsonObject = JsonObject>(prefix: string, options?: ListOptions): Promise<ListResult<T>>;
  /** put resolves once the write is committed, with the key's new version. */
  put(key: string, value: JsonObject, options?: WriteOptions): Promise<{ version: number }>;
  /** delete resolves with deleted=false when the key did not exist (and no expectedVersion was given). */
  delete(key: string, options?: WriteOptions): Promise<{ deleted: boolean }>;
  /** watch calls watcher after every committed change under prefix; the returned function unsubscribes. */
  watch(prefix: string, watcher: StoreWatcher): () => void;
  /**
   * readSession, when a store has it, returns a view for the reads of one request: they share one read
   * barrier, taken at the session's first read, so each sees every write acknowledged before the SESSION
   * began (not before each read), and the request's own writes. A store without it needs no barrier.
   */
  readSession?(): DocumentStore;
  /**
   * barrier, on a read session, takes the session's barrier without reading: once it resolves, this node's
   * local state (and so what its watchers have heard) holds every write acknowledged before the session began.
   * A cache kept current by watch may then answer for the store (auth/key-cache.ts).
   */
  barrier?(): Promise<void>;
  /**
   * listNow, on a read session whose barrier has passed and still holds (this node has applied its index and
   * every write it answered), is list answered at once; null when list would have to wait or refuse. A caller
   * that lists often (a page of a keyed GET) skips list's promise and turn when the answer is ready.
   */
  listNow?<T extends JsonObject = JsonObject>(prefix: string, options?: ListOptions): ListResult<T> | null;
  /**
   * stateSeqNow, on a read session, is the applied seq of the local state listNow would read now (the same
   * seq is the same committed state on every node), or null when listNow would not answer at once. A caller may
   * keep what it derived from a listing at one seq and reuse it while the seq is unchanged (api/page-cache.ts).
   */
  stateSeqNow?(): number | null;
}

/** VersionConflictError is the typed failure of a compare-and-set whose expectedVersion did not hold. */
export class VersionConflictError extends Error {
  readonly code = 'VERSION_CONFLICT';
  constructor(
    readonly key: string,
    readonly expectedVersion: number,
    /** actualVersion is 0 when the key does not exist. */
    readonly actualVersion: number,
  ) {
    super(`version conflict on ${key}: expected ${expectedVersion}, found ${actualVersion}`);
    this.name = 'VersionConflictError';
  }
}

/**
 * isVersionConflict checks the class, or else the error's code: a store built from another copy of this
 * module (a second module instance under some loaders) throws an equal error of another class.
 */
export function isVersionConflict(error: unknown): error is VersionConflictError {
  return (
    error instanceof VersionConflictError ||
    (error instanceof Error &&
      error.name === 'VersionConflictError' &&
      (error as { code?: unknown }).code === 'VERSION_CONFLICT')
  );
}
