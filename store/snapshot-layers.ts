// A store snapshot on disk is a stack of layers: `store.json`, the whole state at some seq (the format every
// artifact has always had), then zero or more delta files `store-delta-<seq>.json`, each holding only what
// changed since the layer below: the rows of keys put since (their value and version at its seq), the keys
// deleted since, and the whole request-id table at its seq. A node stages a delta by writing just that file and
// hard-linking the layers below from its previous artifact (store/snapshot-files.ts decides when instead to
// write everything again), so a staging costs what was written since the last one, not the store's size.
//
// Reading a stack checks that it chains (each delta's baseSeq is the seq of the layer below, the top's seq is
// the artifact's), that every delta row was written inside its layer's range, and that no key is both put and
// deleted in one layer; anything else is refused, as a bad store.json always was.
import type { JsonObject } from './document-store.js';
import { isObject } from './command.js';
import { ChunkedJsonWriter } from './chunked-json.js';
import {
  decodeDedupRows,
  isEntryRow,
  SNAPSHOT_VERSION,
  STORE_SNAPSHOT_FILE,
  type CapturedEntry,
  type KeysCapture,
  type Remembered,
  type Slot,
  type StoreState,
} from './state-machine.js';

const DELTA_FILE = /^store-delta-(\d{1,16})\.json$/;

/** deltaFileName names the delta layer at `seq`. */
export function deltaFileName(seq: number): string {
  return `store-delta-${seq}.json`;
}

/** deltaSeqOf reads the seq from a delta layer's file name, or null when the name is not one. */
export function deltaSeqOf(path: string): number | null {
  const match = DELTA_FILE.exec(path);
  return match ? Number(match[1]) : null;
}

/** isStoreLayerFile says whether a path is one of a store snapshot's layers. */
export function isStoreLayerFile(path: string): boolean {
  return path === STORE_SNAPSHOT_FILE || deltaSeqOf(path) !== null;
}

/**
 * encodeDelta lays out a delta layer over the layer at `baseSeq`: `chunkEntryCount` captured keys at a time,
 * pausing between chunks; the capture is released once every row is read.
 */
export async function encodeDelta(
  capture: KeysCapture,
  baseSeq: number,
  chunkEntryCount: number,
  pause: () => Promise<void>,
): Promise<Uint8Array> {
  const writer = new ChunkedJsonWriter(pause);
  const deleted: string[] = [];
  writer.text(
    `{"v":${SNAPSHOT_VERSION},"kind":"delta","baseSeq":${baseSeq},"appliedSeq":${capture.appliedSeq},"entries":[`,
  );
  try {
    await writer.elements(capture.keyCount, chunkEntryCount, (from, to) => {
      const rows = capture.rows(from, to);
      for (const key of rows.deleted) deleted.push(key);
      return rows.entries;
    });
  } finally {
    capture.release();
  }
  writer.text('],"deleted":[');
  await writer.elements(deleted.length, chunkEntryCount, (from, to) => deleted.slice(from, to));
  writer.text('],"dedup":[');
  await writer.elements(capture.dedup.length, chunkEntryCount, (from, to) => capture.dedup.slice(from, to));
  writer.text(']}');
  return writer.bytes();
}

/** StoreDelta is a decoded delta layer. */
export interface StoreDelta {
  baseSeq: number;
  appliedSeq: number;
  entries: CapturedEntry[];
  deleted: string[];
  dedup: Map<string, Remembered>;
}

/** decodeStoreDelta reads a delta layer; one that is not whole and consistent in itself is refused. */
export function decodeStoreDelta(
  bytes: Uint8Array,
  file: string,
): { ok: true; delta: StoreDelta } | { ok: false; reason: string } {
  let raw: unknown;
  try {
    raw = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes));
  } catch (err) {
    return { ok: false, reason: `${file} is not UTF-8 JSON: ${(err as Error).message}` };
  }
  if (
    !isObject(raw) ||
    raw.v !== SNAPSHOT_VERSION ||
    raw.kind !== 'delta' ||
    !Number.isSafeInteger(raw.baseSeq) ||
    !Number.isSafeInteger(raw.appliedSeq) ||
    (raw.baseSeq as number) < 0 ||
    (raw.appliedSeq as number) <= (raw.baseSeq as number) ||
    !Array.isArray(raw.entries) ||
    !Array.isArray(raw.deleted) ||
    !Array.isArray(raw.dedup)
  ) {
    return { ok: false, reason: `${file} is not a version ${SNAPSHOT_VERSION} store delta` };
  }
  const baseSeq = raw.baseSeq as number;
  const appliedSeq = raw.appliedSeq as number;
  const seen = new Set<string>();
  const entries: CapturedEntry[] = [];
  for (const row of raw.entries as unknown[]) {
    if (!isEntryRow(row)) return { ok: false, reason: `${file} has an entry that is not [key, version, object]` };
    if (row[1] <= baseSeq || row[1] > appliedSeq)
      return {
        ok: false,
        reason: `${file}: ${JSON.stringify(row[0])} has version ${row[1]}, outside the layer's (${baseSeq}, ${appliedSeq}]`,
      };
    if (seen.has(row[0])) return { ok: false, reason: `${file} lists ${JSON.stringify(row[0])} twice` };
    seen.add(row[0]);
    entries.push(row);
  }
  const deleted: string[] = [];
  for (const key of raw.deleted as unknown[]) {
    if (typeof key !== 'string') return { ok: false, reason: `${file} has a deleted key that is not a string` };
    if (seen.has(key)) return { ok: false, reason: `${file} lists ${JSON.stringify(key)} twice` };
    seen.add(key);
    deleted.push(key);
  }
  const dedup = decodeDedupRows(raw.dedup as unknown[], file);
  if (typeof dedup === 'string') return { ok: false, reason: dedup };
  return { ok: true, delta: { baseSeq, appliedSeq, entries, deleted, dedup } };
}

/**
 * stackLayers applies deltas, in order, over a whole state; the result is the state at the last delta's seq.
 * Each delta must start where the layer below ends. The base's state is taken over (not copied).
 */
export function stackLayers(base: StoreState, deltas: readonly StoreDelta[]): StoreState | string {
  if (deltas.length === 0) return base;
  const slots: Map<string, Slot> = base.slots;
  // Keys that were not in the base's sorted list: sorted once at the end and merged in (each layer's keys are
  // in change order, not sorted).
  const added = new Set<string>();
  let seq = base.appliedSeq;
  for (const delta of deltas) {
    if (delta.baseSeq !== seq)
      return `the delta layer at seq ${delta.appliedSeq} starts at seq ${delta.baseSeq}, the layer below ends at ${seq}`;
    for (const [key, version, value] of delta.entries) {
      if (!slots.has(key)) added.add(key);
      slots.set(key, { version, value: value as JsonObject });
    }
    for (const key of delta.deleted) {
      slots.delete(key);
      added.delete(key);
    }
    seq = delta.appliedSeq;
  }
  const sortedKeys = mergeSortedUnique(
    base.sortedKeys.filter((key) => slots.has(key)),
    [...added].sort(),
  );
  return { appliedSeq: seq, slots, sortedKeys, dedup: deltas[deltas.length - 1]!.dedup };
}

/** mergeSortedUnique merges two ascending lists into one, a key in both once. */
function mergeSortedUnique(left: readonly string[], right: readonly string[]): string[] {
  const out: string[] = [];
  let i = 0;
  let j = 0;
  while (i < left.length && j < right.length) {
    const a = left[i]!;
    const b = right[j]!;
    if (a < b) {
      out.push(a);
      i += 1;
    } else if (b < a) {
      out.push(b);
      j += 1;
    } else {
      out.push(a);
      i += 1;
      j += 1;
    }
  }
  while (i < left.length) out.push(left[i++]!);
  while (j < right.length) out.push(right[j++]!);
  return out;
}
