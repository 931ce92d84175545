// Small patterns over DocumentStore shared by the routes: paging with an opaque cursor, and read-modify-write
// with compare-and-set retries.
import type { DocumentStore, JsonObject } from '../store/document-store.js';
import { isVersionConflict } from '../store/document-store.js';
import { ApiError } from './errors.js';
import { pageLimitDefault, pageLimitMax } from './limits.js';

/** casRetriesMax bounds read-modify-write attempts that lose a race before answering 409 CONFLICT. */
export const casRetriesMax = 5;
/** pageScanEntriesMax bounds the store entries one filtered page may examine; the cursor resumes from there. */
export const pageScanEntriesMax = 5000;

export interface Page<T> {
  items: T[];
  next_cursor: string | null;
}

export interface PageRequest {
  limit?: unknown;
  cursor?: unknown;
}

export function parsePageRequest(query: PageRequest, prefix: string): { limit: number; after?: string } {
  const limitNumber = query.limit === undefined ? pageLimitDefault : Number(query.limit);
  if (!Number.isInteger(limitNumber) || limitNumber < 1 || limitNumber > pageLimitMax) {
    throw new ApiError('VALIDATION_FAILED', `limit must be an integer from 1 to ${pageLimitMax}`);
  }
  if (query.cursor === undefined) return { limit: limitNumber };
  const after = typeof query.cursor === 'string' ? Buffer.from(query.cursor, 'base64url').toString('utf8') : '';
  if (!after.startsWith(prefix)) throw new ApiError('VALIDATION_FAILED', 'cursor is not valid for this listing');
  return { limit: limitNumber, after };
}

/** keepAll is listPage's default filter, made once (a default arrow would be a new closure on every call). */
const keepAll = (): boolean => true;

/**
 * listPage returns up to limit records under prefix that pass keep, and a cursor for the rest. It reads the
 * store's own objects (ListOptions.shared): keep and view must not change them (a write replaces a stored
 * object, never changes it, so what was read stays as it was read).
 */
export async function listPage<T extends JsonObject, V>(
  store: DocumentStore,
  prefix: string,
  query: PageRequest,
  view: (record: T) => V,
  keep: (record: T) => boolean = keepAll,
): Promise<Page<V>> {
  const { limit, after: start } = parsePageRequest(query, prefix);
  const items: V[] = [];
  let after = start;
  let scanned = 0;
  while (items.length < limit && scanned < pageScanEntriesMax) {
    // shared: keep and view only read the values, and the page is serialized at once (views build new objects).
    const options = { after, limit: Math.min(limit * 4, pageScanEntriesMax - scanned), shared: true };
    // Behind the key check's barrier a read session answers at once (listNow); otherwise list waits for it.
    const batch = store.listNow?.<T>(prefix, options) ?? (await store.list<T>(prefix, options));
    for (const entry of batch.entries) {
      scanned++;
      after = entry.key;
      if (keep(entry.value)) items.push(view(entry.value));
      if (items.length === limit) break;
    }
    if (batch.nextAfter === null && after === batch.entries.at(-1)?.key) {
      return { items, next_cursor: null };
    }
    if (batch.entries.length === 0) return { items, next_cursor: null };
  }
  return { items, next_cursor: after === undefined ? null : Buffer.from(after, 'utf8').toString('base64url') };
}

/**
 * updateRecord applies mutate to the current value and writes it back only if nobody wrote in between,
 * retrying up to casRetriesMax times. mutate may throw an ApiError to refuse the change.
 */
export async function updateRecord<T extends JsonObject>(
  store: DocumentStore,
  key: string,
  mutate: (current: T) => T,
): Promise<T> {
  for (let attempt = 0; attempt < casRetriesMax; attempt++) {
    const current = await store.get<T>(key);
    if (!current) throw new ApiError('NOT_FOUND', 'not found');
    const next = mutate(current.value);
    try {
      await store.put(key, next, { expectedVersion: current.version });
      return next;
    } catch (error) {
      if (!isVersionConflict(error)) throw error;
    }
  }
  throw new ApiError('CONFLICT', 'the record kept changing underneath this update; retry');
}
