// ReplicatedStore is the DocumentStore the HTTP API runs on in a cluster. Every write becomes a
// command in the replicated log (through the leader, wherever it is called) and resolves only after
// THIS node has applied it, so the caller reads its own write here at once. Every read first takes
// the leader's commit seqno (read index) and waits until this node has applied that far, so it sees
// every write acknowledged anywhere before the read began.
//
// A node that is catching up (restarted, or fallen behind) holds no caller for it longer than catchUpWaitMs
// (limits.ts): a get whose read index it has not applied by then is read at the leader instead (and every get
// until it has applied that index), a list is refused with StoreCatchingUpError (nothing written; retry here
// later or at another member), and a write the leader committed is answered with the leader's outcome without
// its local apply. Its seq is kept (unappliedWriteSeq) so every read here that starts
// after that answer waits for it: a caller still reads its own write here, or is refused, never answered stale.
import { randomUUID } from 'node:crypto';
import {
  VersionConflictError,
  type DocumentStore,
  type JsonObject,
  type ListOptions,
  type ListResult,
  type StoreEntry,
  type StoreWatcher,
  type VersionedValue,
  type WriteOptions,
} from './document-store.js';
import { encodeCommand, type CommandResult, type StoreCommand } from './command.js';
import type { StoreHost } from './host.js';
import { OutsideCommunitiesError } from './errors.js';
import type { MemberFilter } from '../engine/types.js';
import { storeLimits, type StoreLimits } from './limits.js';
import { StoreCatchingUpError, StoreUnavailableError } from './errors.js';
import { ReadIndexBatch, type ReadIndexBatchStats } from './read-index-batch.js';

/** TIMER_EARLY_MS: how much earlier than its deadline (by Date.now()) a timer may fire and still be the deadline. */
const TIMER_EARLY_MS = 10;

export class ReplicatedStore implements DocumentStore {
  readonly limits: StoreLimits;
  /** readIndexes shares one read-index call among concurrent reads (read-index-batch.ts). */
  private readonly readIndexes: ReadIndexBatch;
  /**
   * unappliedWriteSeq: the highest seq of a write this store answered before applying it here (a committed
   * write whose local apply took longer than catchUpWaitMs). Every read barrier waits for it too.
   */
  private unappliedWriteSeq = 0;
  /** behindUntilSeq: the read index this node last refused a read for (catching up); see forwardsReads. */
  private behindUntilSeq = 0;

  constructor(
    private readonly host: StoreHost,
    limits: Partial<StoreLimits> = {},
  ) {
    this.limits = storeLimits(limits);
    // On the leader, calls may overlap: its engine batches them (read-index-batch.ts). Each call carries a loop
    // turn's readers, gathered already: the leader's engine is asked at once (engine-reads.ts). A follower's
    // calls overlap up to readIndexCallsInFlightMax (default 1: none), so that a turn's readers need not wait
    // for an earlier turn's call to come back before theirs is asked.
    const inFlightMax = this.limits.readIndexCallsInFlightMax;
    this.readIndexes = new ReadIndexBatch(
      (deadlineAt) => this.host.readIndex(deadlineAt, true),
      (inFlight) => inFlight < inFlightMax || (this.host.readsLocally?.() ?? false),
    );
  }

  /** readIndexStats: read-index calls made and readers served so far (how well reads share calls). */
  get readIndexStats(): ReadIndexBatchStats {
    return this.readIndexes.stats;
  }

  async get<T extends JsonObject = JsonObject>(key: string): Promise<VersionedValue<T> | null> {
    this.checkKey(key);
    const deadlineAt = Date.now() + this.limits.readTimeoutMs;
    if (this.forwardsReads()) return this.getAtLeader<T>(key, deadlineAt);
    try {
      await this.readBarrier();
    } catch (err) {
      if (err instanceof StoreCatchingUpError && this.forwardsReads()) return this.getAtLeader<T>(key, deadlineAt);
      throw err;
    }
    return this.localGet<T>(key);
  }

  /**
   * forwardsReads: this node was refused a read for catching up, and has not yet applied that read's index;
   * until it has, its gets go to the leader at once rather than each waiting catchUpWaitMs first.
   */
  forwardsReads(): boolean {
    if (!this.host.getAtLeader || this.host.stateMachine.appliedSeq >= this.behindUntilSeq) return false;
    return !(this.host.readsLocally?.() ?? false);
  }

  /** getAtLeader reads key at the leader (a catching-up member's get), linearizably there. */
  getAtLeader<T extends JsonObject = JsonObject>(key: string, deadlineAt: number): Promise<VersionedValue<T> | null> {
    return this.host.getAtLeader!(key, deadlineAt) as Promise<VersionedValue<T> | null>;
  }

  async list<T extends JsonObject = JsonObject>(prefix: string, options: ListOptions = {}): Promise<ListResult<T>> {
    if (typeof prefix !== 'string') throw new TypeError('list prefix must be a string');
    await this.readBarrier();
    return this.localList<T>(prefix, options);
  }

  async put(key: string, value: JsonObject, options: WriteOptions = {}): Promise<{ version: number }> {
    this.checkKey(key);
    if (value === null || typeof value !== 'object' || Array.isArray(value))
      throw new TypeError('store values are JSON objects');
    // Encoding (write) is the copy: the log, every node's apply and this node's state get the bytes, never
    // the caller's object, and what JSON cannot hold is refused before it reaches the log.
    const result = await this.write({ op: 'put', key, value, ...this.expected(options), requestId: randomUUID() });
    if (result.outcome === 'conflict')
      throw new VersionConflictError(key, options.expectedVersion!, result.actualVersion);
    return { version: result.version };
  }

  async delete(key: string, options: WriteOptions = {}): Promise<{ deleted: boolean }> {
    this.checkKey(key);
    const result = await this.write({ op: 'delete', key, ...this.expected(options), requestId: randomUUID() });
    if (result.outcome === 'conflict')
      throw new VersionConflictError(key, options.expectedVersion!, result.actualVersion);
    return { deleted: result.existed };
  }

  /**
   * readSession: reads through the view share one read index, taken at its first read (a follower then asks
   * the leader once per request, not once per read). Local state only moves forward and writes resolve after
   * the local apply, so every read still sees what was acknowledged before the session began, and its own writes.
   */
  readSession(): DocumentStore {
    return new ReadSession(this);
  }

  /** takeReadIndex: a read index taken after this call began (shared with concurrent readers), by deadlineAt. */
  takeReadIndex(deadlineAt: number): Promise<number> {
    return this.readIndexes.readIndex(deadlineAt);
  }

  /** waitApplied resolves once this node has applied seq. */
  waitApplied(seq: number, deadlineAt: number): Promise<void> {
    return this.host.waitApplied(seq, deadlineAt);
  }

  /**
   * localGet reads this node's state with no barrier (only behind one), for a key checkKey passed. A filtered
   * member (docs/protocol.md, "Filtered members") answers only for its communities: a key under one of its
   * prefixes, or a record of one of its tenants; anything else it refuses (OutsideCommunitiesError), since it
   * cannot tell a key it does not hold from an absent one.
   */
  localGet<T extends JsonObject = JsonObject>(key: string): VersionedValue<T> | null {
    const found = this.host.stateMachine.get(key) as VersionedValue<T> | null;
    const overlay = this.overlayNow();
    if (overlay === null || overlay.prefixes.some((p) => key.startsWith(p))) return found;
    const tenant = found?.value.tenant;
    if (typeof tenant === 'string' && overlay.tenants.includes(tenant)) return found;
    throw new OutsideCommunitiesError(
      `key ${JSON.stringify(key)} is outside this filtered member's communities; read it at an unfiltered member`,
    );
  }

  /** overlayNow: the communities this node's state holds (null: all); refused outright while it refills. */
  private overlayNow(): MemberFilter | null {
    const overlay = this.host.overlay?.() ?? null;
    if (overlay === 'refilling')
      throw new OutsideCommunitiesError(
        'this member is taking the log again after its filter changed; read at another member',
      );
    return overlay;
  }

  /** checkListable: a filtered member lists (and watches) only a prefix inside one of its key prefixes. */
  private checkListable(prefix: string): void {
    const overlay = this.overlayNow();
    if (overlay !== null && !overlay.prefixes.some((p) => prefix.startsWith(p)))
      throw new OutsideCommunitiesError(
        `prefix ${JSON.stringify(prefix)} is not inside this filtered member's key prefixes; list it at an unfiltered member`,
      );
  }

  /** appliedSeqNow is the seq of this node's local state (what localList reads now). */
  appliedSeqNow(): number {
    return this.host.stateMachine.appliedSeq;
  }

  /** localList lists this node's state with no barrier: only behind one. */
  localList<T extends JsonObject = JsonObject>(prefix: string, options: ListOptions): ListResult<T> {
    this.checkListable(prefix);
    const limit = Math.max(1, Math.min(options.limit ?? this.limits.listLimitMax, this.limits.listLimitMax));
    const page = this.host.stateMachine.list(prefix, limit, options.after, options.shared ?? false);
    return { entries: page.entries as StoreEntry<T>[], nextAfter: page.nextAfter };
  }

  /** watch hears every change under prefix as this node applies it (so, after the write is committed). */
  watch(prefix: string, watcher: StoreWatcher): () => void {
    this.checkListable(prefix);
    return this.host.stateMachine.watch(prefix, watcher);
  }

  private async write(command: StoreCommand): Promise<Extract<CommandResult, { outcome: 'applied' | 'conflict' }>> {
    // Encoded once, here: these bytes go to the leader and into the log as they are.
    const bytes = encodeCommand(command);
    if (bytes.length > this.limits.commandBytesMax)
      throw new RangeError(
        `the write encodes to ${bytes.length} bytes, above commandBytesMax (${this.limits.commandBytesMax})`,
      );
    const deadlineAt = Date.now() + this.limits.writeTimeoutMs;
    const { seq, result } = await this.host.commit({ requestId: command.requestId, bytes }, deadlineAt);
    // Committed: the outcome is the leader's. Waiting for the local apply keeps a caller's next read here cheap,
    // but a catching-up node answers without it (reads here wait for it instead: unappliedWriteSeq).
    if (!(await this.appliedWithin(seq, deadlineAt))) this.unappliedWriteSeq = Math.max(this.unappliedWriteSeq, seq);
    if (result.outcome === 'rejected') throw new TypeError(`the store refused the write: ${result.reason}`);
    return result;
  }

  private async readBarrier(): Promise<void> {
    const deadlineAt = Date.now() + this.limits.readTimeoutMs;
    const index = await this.readIndexes.readIndex(deadlineAt);
    await this.caughtUpTo(index, deadlineAt);
  }

  /** caughtUpNow: this node has applied readIndex and every write it answered unapplied (caughtUpTo would not wait). */
  caughtUpNow(readIndex: number): boolean {
    return this.host.stateMachine.appliedSeq >= Math.max(readIndex, this.unappliedWriteSeq);
  }

  /**
   * caughtUpTo resolves once this node has applied the read index and every write it answered unapplied before
   * now; a node that does not get there within catchUpWaitMs refuses with StoreCatchingUpError.
   */
  async caughtUpTo(readIndex: number, deadlineAt: number): Promise<void> {
    if (this.caughtUpNow(readIndex)) return;
    const seq = Math.max(readIndex, this.unappliedWriteSeq);
    if (await this.appliedWithin(seq, deadlineAt)) return;
    const applied = this.host.stateMachine.appliedSeq;
    this.behindUntilSeq = Math.max(this.behindUntilSeq, seq);
    throw new StoreCatchingUpError(
      `this node is catching up (applied ${applied} of ${seq}); retry, or ask another member`,
      applied,
      seq,
    );
  }

  /**
   * appliedWithin waits for this node to apply seq, up to catchUpWaitMs (and deadlineAt): true once applied,
   * false when the wait ran out; any other failure (the node stopped, too many waiting) is thrown.
   */
  private async appliedWithin(seq: number, deadlineAt: number): Promise<boolean> {
    const stateMachine = this.host.stateMachine;
    if (stateMachine.appliedSeq >= seq) return true;
    const waitUntil = Math.min(deadlineAt, Date.now() + this.limits.catchUpWaitMs);
    try {
      await this.host.waitApplied(seq, waitUntil);
      return true;
    } catch (err) {
      if (stateMachine.appliedSeq >= seq) return true;
      // The waiter's own timeout fires at waitUntil (a timer may fire a millisecond or so early by Date.now()); a
      // rejection well before it is another failure.
      if (err instanceof StoreUnavailableError && Date.now() + TIMER_EARLY_MS >= waitUntil) return false;
      throw err;
    }
  }

  private expected(options: WriteOptions): { expectedVersion?: number } {
    if (options.expectedVersion === undefined) return {};
    if (!Number.isSafeInteger(options.expectedVersion) || options.expectedVersion < 0)
      throw new RangeError('expectedVersion must be a non-negative integer');
    return { expectedVersion: options.expectedVersion };
  }

  /** checkKey refuses a key the store cannot hold (before any barrier or write). */
  checkKey(key: string): void {
    if (typeof key !== 'string' || key.length === 0 || Buffer.byteLength(key) > this.limits.keyBytesMax) {
      throw new RangeError(`store keys are 1..${this.limits.keyBytesMax} bytes`);
    }
  }
}

/**
 * ReadSession is one request's view (ReplicatedStore.readSession): its reads share one read index. A class, not
 * closures, because one is made per keyed request.
 */
class ReadSession implements DocumentStore {
  /** index is the session's read index, asked at its first read; a failed one is dropped so the next read tries afresh. */
  private index: Promise<number> | null = null;
  /**
   * passedSeq is the read index a barrier of this session has passed at (0: none yet). A later read needs no wait
   * while caughtUpNow(passedSeq) holds (local state only moves forward): it is the check a barrier at the same
   * index would make, done without the barrier's promises (a keyed request reads behind its key check's barrier).
   */
  private passedSeq = 0;

  constructor(private readonly store: ReplicatedStore) {}

  private passed(): boolean {
    return this.passedSeq > 0 && this.store.caughtUpNow(this.passedSeq);
  }

  async barrier(): Promise<void> {
    if (this.passed()) return;
    const deadlineAt = Date.now() + this.store.limits.readTimeoutMs;
    this.index ??= this.store.takeReadIndex(deadlineAt);
    const index = this.index;
    let seq: number;
    try {
      seq = await index;
    } catch (err) {
      if (this.index === index) this.index = null;
      throw err;
    }
    if (!this.store.caughtUpNow(seq)) await this.store.caughtUpTo(seq, deadlineAt);
    this.passedSeq = Math.max(this.passedSeq, seq);
  }

  async get<T extends JsonObject = JsonObject>(key: string): Promise<VersionedValue<T> | null> {
    this.store.checkKey(key);
    // A node catching up reads keys at the leader (ReplicatedStore.get), each linearizable there.
    if (this.store.forwardsReads()) return this.store.getAtLeader<T>(key, Date.now() + this.store.limits.readTimeoutMs);
    if (!this.passed()) {
      try {
        await this.barrier();
      } catch (err) {
        if (err instanceof StoreCatchingUpError && this.store.forwardsReads())
          return this.store.getAtLeader<T>(key, Date.now() + this.store.limits.readTimeoutMs);
        throw err;
      }
    }
    return this.store.localGet<T>(key);
  }

  async list<T extends JsonObject = JsonObject>(prefix: string, options: ListOptions = {}): Promise<ListResult<T>> {
    if (typeof prefix !== 'string') throw new TypeError('list prefix must be a string');
    if (!this.passed()) await this.barrier();
    return this.store.localList<T>(prefix, options);
  }

  listNow<T extends JsonObject = JsonObject>(prefix: string, options: ListOptions = {}): ListResult<T> | null {
    if (typeof prefix !== 'string' || !this.passed()) return null;
    return this.store.localList<T>(prefix, options);
  }

  stateSeqNow(): number | null {
    return this.passed() ? this.store.appliedSeqNow() : null;
  }

  put(key: string, value: JsonObject, options?: WriteOptions): Promise<{ version: number }> {
    return this.store.put(key, value, options);
  }

  delete(key: string, options?: WriteOptions): Promise<{ deleted: boolean }> {
    return this.store.delete(key, options);
  }

  watch(prefix: string, watcher: StoreWatcher): () => void {
    return this.store.watch(prefix, watcher);
  }
}
