// StoreStateMachine is the replicated store's state on one node: an ordered map of JSON documents
// whose version is the seqno of the committed entry that last wrote them, driven only by committed
// entries in seqno order. Compare-and-set is decided here, at apply time, so every node reaches the
// same answer; a failed one is a committed no-op. Recent request ids are remembered (a bounded,
// insertion-ordered table that is part of the snapshot) so a write retried after a leader change
// applies once and its retry learns the first outcome.
import type { JsonObject, StoreChange, StoreWatcher } from './document-store.js';
import { EntryKind, type Entry } from '../engine/types.js';
import { decodeCommand, isCommandResult, isObject, type CommandResult, type StoreCommand } from './command.js';
import { DEDUP_ENTRY_COUNT_MAX } from './limits.js';
import { ChunkedJsonWriter } from './chunked-json.js';
import { cloneJson } from './json-clone.js';
import { SortedKeys } from './sorted-keys.js';
import { StoreWatchers } from './store-watchers.js';

export const STORE_SNAPSHOT_FILE = 'store.json';
export const SNAPSHOT_VERSION = 1;

export interface Slot {
  value: JsonObject;
  version: number;
}

export interface Remembered {
  seq: number;
  result: CommandResult;
}

/** AppliedCommand is what applying one entry did, for whoever waits on it. */
export interface AppliedCommand {
  seq: number;
  /** requestId is null for entries that carry no (readable) command. */
  requestId: string | null;
  /** result is null for entries that are not commands (term barriers, membership records). */
  result: CommandResult | null;
}

/** StoreState is a decoded snapshot file, ready to swap in. */
export interface StoreState {
  appliedSeq: number;
  slots: Map<string, Slot>;
  sortedKeys: string[];
  dedup: Map<string, Remembered>;
}

export class StateMachineError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'StateMachineError';
  }
}

export class StoreStateMachine {
  private slots = new Map<string, Slot>();
  private sortedKeys = new SortedKeys();
  private dedup = new Map<string, Remembered>();
  private applied = 0;
  /** beforeReset is the state watchers last saw before a reset, so the next restore reports the difference. */
  private beforeReset: Map<string, Slot> | null = null;
  private readonly watchers = new StoreWatchers();
  /** liveCaptures are the captures still being encoded: each keeps the pre-image of a key's first change after it. */
  private readonly liveCaptures = new Set<LiveCapture>();
  /**
   * changedSinceMark holds every key put or deleted since the last markLayer (or restore, or reset): the rows a
   * delta layer at the next snapshot must hold (store/snapshot-layers.ts). Insertion order, not sorted: sorting
   * 100k keys at capture would hold the loop tens of ms; the reader sorts when it loads.
   */
  private changedSinceMark = new Set<string>();
  /** layerEpochCount counts restores and resets: a delta is only valid over the state it was marked against. */
  private layerEpochCount = 0;

  get appliedSeq(): number {
    return this.applied;
  }

  /** layerEpoch changes at every restore and reset: a snapshot basis taken in another epoch no longer holds. */
  get layerEpoch(): number {
    return this.layerEpochCount;
  }

  /**
   * markLayer returns the keys changed since the previous mark (or restore, or reset) and starts counting
   * afresh: a snapshot captured now holds the state at appliedSeq, and the next delta holds what changes after it.
   */
  markLayer(): ReadonlySet<string> {
    const changed = this.changedSinceMark;
    this.changedSinceMark = new Set();
    return changed;
  }

  /** size is the number of documents (the heartbeat's entity_count). */
  get size(): number {
    return this.slots.size;
  }

  /** get returns a copy of the document and its version, or null. */
  get(key: string): { value: JsonObject; version: number } | null {
    const slot = this.slots.get(key);
    return slot ? { value: cloneJson(slot.value), version: slot.version } : null;
  }

  /**
   * list pages through the keys under prefix in ascending order, starting after `after`: copies, or with
   * `shared` the stored objects themselves (for a caller that only reads them, ListOptions.shared).
   */
  list(
    prefix: string,
    limit: number,
    after?: string,
    shared = false,
  ): { entries: Array<{ key: string; value: JsonObject; version: number }>; nextAfter: string | null } {
    const page = this.sortedKeys.page(prefix, limit, after);
    const entries = page.keys.map((key) => {
      const slot = this.slots.get(key)!;
      return { key, value: shared ? slot.value : cloneJson(slot.value), version: slot.version };
    });
    return { entries, nextAfter: page.nextAfter };
  }

  /** recall returns the outcome of a request id applied recently, if it is still remembered. */
  recall(requestId: string): { seq: number; result: CommandResult } | undefined {
    const remembered = this.dedup.get(requestId);
    return remembered ? { seq: remembered.seq, result: remembered.result } : undefined;
  }

  /**
   * apply runs one committed entry. Entries must come in seqno order without gaps (a gap is a
   * driver bug and throws); an entry at or below appliedSeq was already applied and is skipped.
   */
  apply(entry: Entry): AppliedCommand {
    if (entry.seq <= this.applied) return { seq: entry.seq, requestId: null, result: null };
    if (entry.seq !== this.applied + 1)
      throw new StateMachineError(`apply of seq ${entry.seq} does not follow appliedSeq ${this.applied}`);
    this.applied = entry.seq;
    if (entry.kind !== EntryKind.EventBatch) return { seq: entry.seq, requestId: null, result: null };
    const decoded = decodeCommand(entry.data);
    if (!decoded.ok)
      return { seq: entry.seq, requestId: null, result: { outcome: 'rejected', reason: decoded.reason } };
    const command = decoded.command;
    const seen = this.dedup.get(command.requestId);
    if (seen) return { seq: entry.seq, requestId: command.requestId, result: seen.result };
    const result = this.execute(entry.seq, command);
    this.remember(command.requestId, entry.seq, result);
    return { seq: entry.seq, requestId: command.requestId, result };
  }

  /** reset drops everything (a reseed); the next restore reports changes against what was dropped. */
  reset(): void {
    this.beforeReset ??= this.slots;
    // The old map is never changed again, so live captures of it need no more pre-images.
    this.liveCaptures.clear();
    this.slots = new Map();
    this.sortedKeys = new SortedKeys();
    this.dedup = new Map();
    this.applied = 0;
    this.changedSinceMark = new Set();
    this.layerEpochCount += 1;
  }

  /**
   * captureSnapshot holds the state at this applied seqno, copy-on-write: it copies the sorted key list (pointer
   * copies, a few ms at 100k keys) and the bounded request-id rows, and from then on each apply records the
   * pre-image of a key's first change (slots are replaced, never mutated, so the pre-image is the old slot) until
   * the capture is released. The rows are read at encoding time, the captured key's pre-image if it changed, else
   * its live slot. Building all [key, version, value] rows here held the loop 23-39 ms at 100k keys (quiet machine).
   */
  captureSnapshot(): SnapshotCapture {
    const keys = this.sortedKeys.all();
    const { slotAt, dedup, release } = this.startCapture();
    return {
      appliedSeq: this.applied,
      entryCount: keys.length,
      entryRows: (from, to) =>
        keys.slice(from, to).map((key): CapturedEntry => {
          const slot = slotAt(key);
          if (!slot) throw new StateMachineError(`captured key ${JSON.stringify(key)} has no slot`);
          return [key, slot.version, slot.value];
        }),
      dedup,
      release,
    };
  }

  /**
   * captureKeys holds the given keys' slots at this applied seqno, copy-on-write like captureSnapshot (no row is
   * built now): a delta layer's rows, read later. A key absent at capture reads as deleted.
   */
  captureKeys(keys: readonly string[]): KeysCapture {
    const { slotAt, dedup, release } = this.startCapture();
    return {
      appliedSeq: this.applied,
      keyCount: keys.length,
      rows: (from, to) => {
        const entries: CapturedEntry[] = [];
        const deleted: string[] = [];
        for (let at = from; at < to; at += 1) {
          const key = keys[at]!;
          const slot = slotAt(key);
          if (slot) entries.push([key, slot.version, slot.value]);
          else deleted.push(key);
        }
        return { entries, deleted };
      },
      dedup,
      release,
    };
  }

  /**
   * startCapture begins a copy-on-write capture of this map: slotAt reads a key as it was now (its pre-image if it
   * changed since, else its live slot), dedup is the request-id rows now, release ends the pre-images' keeping.
   */
  private startCapture(): {
    slotAt: (key: string) => Slot | undefined;
    dedup: CapturedDedup[];
    release: () => void;
  } {
    const live: LiveCapture = { slots: this.slots, preImages: new Map() };
    this.liveCaptures.add(live);
    return {
      slotAt: (key) => (live.preImages.has(key) ? live.preImages.get(key) : live.slots.get(key)),
      dedup: dedupRowsOf(this.dedup),
      release: () => {
        this.liveCaptures.delete(live);
      },
    };
  }

  /** liveCaptureCount is how many captures still record pre-images (for tests: each must be released). */
  get liveCaptureCount(): number {
    return this.liveCaptures.size;
  }

  /** encodeSnapshot captures the whole state as the bytes of store.json, at once. */
  encodeSnapshot(): Uint8Array {
    const capture = this.captureSnapshot();
    try {
      const rows = JSON.stringify(capture.entryRows(0, capture.entryCount)).slice(1, -1);
      return new TextEncoder().encode(snapshotJson(capture, [rows]));
    } finally {
      capture.release?.();
    }
  }

  /** restore swaps in a decoded snapshot and tells watchers what changed. */
  restore(state: StoreState): void {
    const previous = this.beforeReset ?? this.slots;
    this.beforeReset = null;
    this.liveCaptures.clear();
    this.slots = state.slots;
    this.sortedKeys = SortedKeys.fromSorted(state.sortedKeys);
    this.dedup = state.dedup;
    this.applied = state.appliedSeq;
    this.changedSinceMark = new Set();
    this.layerEpochCount += 1;
    if (this.watchers.size === 0) return;
    const keys = new Set([...previous.keys(), ...this.slots.keys()]);
    for (const key of [...keys].sort()) {
      const before = previous.get(key);
      const after = this.slots.get(key);
      if (after && (!before || before.version !== after.version))
        this.notify({ kind: 'put', key, value: after.value, version: after.version });
      else if (!after && before) this.notify({ kind: 'delete', key, version: state.appliedSeq });
    }
  }

  watch(prefix: string, watcher: StoreWatcher): () => void {
    return this.watchers.add(prefix, watcher);
  }

  private execute(seq: number, command: StoreCommand): CommandResult {
    const current = this.slots.get(command.key);
    const actualVersion = current?.version ?? 0;
    if (command.expectedVersion !== undefined && command.expectedVersion !== actualVersion)
      return { outcome: 'conflict', actualVersion };
    this.keepPreImage(command.key, current);
    if (command.op === 'put') {
      this.changedSinceMark.add(command.key);
      if (!current) this.sortedKeys.insert(command.key);
      this.slots.set(command.key, { value: command.value, version: seq });
      this.notify({ kind: 'put', key: command.key, value: command.value, version: seq });
      return { outcome: 'applied', version: seq, existed: current !== undefined };
    }
    if (!current) return { outcome: 'applied', version: seq, existed: false };
    this.changedSinceMark.add(command.key);
    this.slots.delete(command.key);
    this.sortedKeys.remove(command.key);
    this.notify({ kind: 'delete', key: command.key, version: seq });
    return { outcome: 'applied', version: seq, existed: true };
  }

  /** keepPreImage records, for each live capture of this map, the slot a key had before its first change. */
  private keepPreImage(key: string, current: Slot | undefined): void {
    for (const live of this.liveCaptures)
      if (live.slots === this.slots && !live.preImages.has(key)) live.preImages.set(key, current);
  }

  private remember(requestId: string, seq: number, result: CommandResult): void {
    this.dedup.set(requestId, { seq, result });
    // Insertion order is apply order, the same on every node, so every node evicts the same ids.
    while (this.dedup.size > DEDUP_ENTRY_COUNT_MAX) this.dedup.delete(this.dedup.keys().next().value!);
  }

  private notify(change: StoreChange): void {
    this.watchers.notify(change);
  }
}

/** LiveCapture: a captured slot map and the pre-image (undefined: absent) of each key changed since. */
interface LiveCapture {
  slots: Map<string, Slot>;
  preImages: Map<string, Slot | undefined>;
}

export type CapturedEntry = [key: string, version: number, value: JsonObject];
export type CapturedDedup = [requestId: string, seq: number, result: CommandResult];

/** KeysCapture is some keys' slots at one applied seqno (captureKeys): present ones as rows, absent ones as deleted. */
export interface KeysCapture {
  appliedSeq: number;
  keyCount: number;
  /** rows reads the keys [from, to) as they were at appliedSeq. */
  rows(from: number, to: number): { entries: CapturedEntry[]; deleted: string[] };
  dedup: CapturedDedup[];
  /** release ends the copy-on-write capture. */
  release(): void;
}

/** SnapshotCapture is the state machine at one applied seqno, ready to encode as store.json. */
export interface SnapshotCapture {
  appliedSeq: number;
  entryCount: number;
  /** entryRows reads the rows [from, to) in ascending key order, as they were at appliedSeq. */
  entryRows(from: number, to: number): CapturedEntry[];
  dedup: CapturedDedup[];
  /** release ends a copy-on-write capture (no more pre-images kept); encodeCapture calls it when done. */
  release?(): void;
}

/** captureOfRows is a capture over rows already built (a cut, tests). */
export function captureOfRows(appliedSeq: number, entries: CapturedEntry[], dedup: CapturedDedup[]): SnapshotCapture {
  return { appliedSeq, entryCount: entries.length, entryRows: (from, to) => entries.slice(from, to), dedup };
}

/** snapshotJson lays out store.json around entry chunks that are already JSON (each without brackets). */
function snapshotJson(capture: SnapshotCapture, entryChunks: string[]): string {
  const entries = entryChunks.filter((chunk) => chunk !== '').join(',');
  return `{"v":${SNAPSHOT_VERSION},"appliedSeq":${capture.appliedSeq},"entries":[${entries}],"dedup":${JSON.stringify(capture.dedup)}}`;
}

/**
 * encodeCapture encodes a capture as the bytes of store.json, `chunkEntryCount` entries (and then request-id rows)
 * at a time, each chunk turned into UTF-8 on its own, awaiting `pause` between chunks so a large state does not
 * hold the event loop for the whole encoding (ChunkedJsonWriter). The bytes are the same as encodeSnapshot's. Why
 * no string of the whole file is built: at 100k keys (a 13 MB store.json) joining the chunks, stringifying the
 * request-id rows and encoding the whole string in one go held the loop 20-45 ms in one piece, against 4-8 ms now
 * (bench/snapshot-encode.ts). The capture, copy-on-write since, takes 0.9-6.3 ms there (it was 23-39 ms on a quiet
 * machine, 29-133 ms on a busy one).
 */
export async function encodeCapture(
  capture: SnapshotCapture,
  chunkEntryCount: number,
  pause: () => Promise<void>,
): Promise<Uint8Array> {
  const writer = new ChunkedJsonWriter(pause);
  writer.text(`{"v":${SNAPSHOT_VERSION},"appliedSeq":${capture.appliedSeq},"entries":[`);
  try {
    await writer.elements(capture.entryCount, chunkEntryCount, capture.entryRows);
  } finally {
    // Every row is read: the pre-images are no longer needed.
    capture.release?.();
  }
  writer.text('],"dedup":[');
  await writer.elements(capture.dedup.length, chunkEntryCount, (from, to) => capture.dedup.slice(from, to));
  writer.text(']}');
  return writer.bytes();
}

/** decodeStoreSnapshot reads store.json; a file that does not hold a whole, ordered state is refused. */
export function decodeStoreSnapshot(
  bytes: Uint8Array,
): { ok: true; state: StoreState } | { ok: false; reason: string } {
  let raw: unknown;
  try {
    raw = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes));
  } catch (err) {
    return { ok: false, reason: `${STORE_SNAPSHOT_FILE} is not UTF-8 JSON: ${(err as Error).message}` };
  }
  if (
    !isObject(raw) ||
    raw.v !== SNAPSHOT_VERSION ||
    !Number.isSafeInteger(raw.appliedSeq) ||
    (raw.appliedSeq as number) < 0 ||
    !Array.isArray(raw.entries) ||
    !Array.isArray(raw.dedup)
  ) {
    return { ok: false, reason: `${STORE_SNAPSHOT_FILE} is not a version ${SNAPSHOT_VERSION} store snapshot` };
  }
  const slots = new Map<string, Slot>();
  const sortedKeys: string[] = [];
  for (const row of raw.entries as unknown[]) {
    if (!isEntryRow(row))
      return { ok: false, reason: `${STORE_SNAPSHOT_FILE} has an entry that is not [key, version, object]` };
    const key = row[0];
    if (sortedKeys.length > 0 && !(sortedKeys[sortedKeys.length - 1]! < key))
      return { ok: false, reason: `${STORE_SNAPSHOT_FILE} keys are not in ascending order at ${JSON.stringify(key)}` };
    sortedKeys.push(key);
    slots.set(key, { version: row[1], value: row[2] });
  }
  const dedup = decodeDedupRows(raw.dedup as unknown[], STORE_SNAPSHOT_FILE);
  if (typeof dedup === 'string') return { ok: false, reason: dedup };
  return { ok: true, state: { appliedSeq: raw.appliedSeq as number, slots, sortedKeys, dedup } };
}

/** dedupRowsOf lays out a request-id table as a snapshot's rows, in its (apply) order. */
export function dedupRowsOf(dedup: ReadonlyMap<string, Remembered>): CapturedDedup[] {
  return [...dedup].map(([requestId, r]): CapturedDedup => [requestId, r.seq, r.result]);
}

/** isEntryRow says whether a decoded row is [key, version, object]. */
export function isEntryRow(row: unknown): row is [string, number, JsonObject] {
  return Array.isArray(row) && typeof row[0] === 'string' && Number.isSafeInteger(row[1]) && isObject(row[2]);
}

/** decodeDedupRows reads a snapshot file's request-id rows, or says (naming `file`) which is not [id, seq, result]. */
export function decodeDedupRows(rows: readonly unknown[], file: string): Map<string, Remembered> | string {
  const dedup = new Map<string, Remembered>();
  for (const row of rows) {
    if (
      !Array.isArray(row) ||
      typeof row[0] !== 'string' ||
      !Number.isSafeInteger(row[1]) ||
      !isCommandResult(row[2])
    ) {
      return `${file} has a request-id row that is not [id, seq, result]`;
    }
    dedup.set(row[0], { seq: row[1] as number, result: row[2] });
  }
  return dedup;
}
