// Small patterns over DocumentStore shared by the routes: paging with an opaque cursor, and read-modify-write
// with compare-and-set retries.
import type { Response } from 'express';
import type { DocumentStore, JsonObject, ListOptions, ListResult } from '../store/document-store.js';
import { isVersionConflict } from '../store/document-store.js';
import { ApiError } from './errors.js';
import { pageLimitDefault, pageLimitMax } from './limits.js';
import { cacheableAnswer, stateSeqOf, type PageCache } from './page-cache.js';

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
 * PageScan is one page's walk over store batches (listPage, listPageNow): which batch to read next, and the page
 * once it is complete.
 */
class PageScan<T extends JsonObject, V> {
  readonly items: V[] = [];
  private scanned = 0;

  constructor(
    private readonly limit: number,
    private after: string | undefined,
    private readonly view: (record: T) => V,
    private readonly keep: (record: T) => boolean,
  ) {}

  /** nextOptions are the next batch's list options, or null once the page is full or the scan bound is reached. */
  nextOptions(): ListOptions | null {
    if (this.items.length >= this.limit || this.scanned >= pageScanEntriesMax) return null;
    // shared: keep and view only read the values, and the page is serialized at once (views build new objects).
    return {
      after: this.after,
      limit: Math.min(this.limit * 4, pageScanEntriesMax - this.scanned),
      shared: true,
    };
  }

  /** take reads one batch: the finished page when the listing ended in it, else null (read on, or finish). */
  take(batch: ListResult<T>): Page<V> | null {
    for (const entry of batch.entries) {
      this.scanned++;
      this.after = entry.key;
      if (this.keep(entry.value)) this.items.push(this.view(entry.value));
      if (this.items.length === this.limit) break;
    }
    if (batch.nextAfter === null && this.after === batch.entries.at(-1)?.key) return this.last();
    if (batch.entries.length === 0) return this.last();
    return null;
  }

  /** finish is the page when more may follow: its cursor resumes after the last entry scanned. */
  finish(): Page<V> {
    const after = this.after;
    return {
      items: this.items,
      next_cursor: after === undefined ? null : Buffer.from(after, 'utf8').toString('base64url'),
    };
  }

  private last(): Page<V> {
    return { items: this.items, next_cursor: null };
  }
}

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
  const now = listPageNow(store, prefix, query, view, keep);
  if (now !== null) return now;
  const { limit, after } = parsePageRequest(query, prefix);
  const scan = new PageScan(limit, after, view, keep);
  for (let options = scan.nextOptions(); options !== null; options = scan.nextOptions()) {
    const page = scan.take(await store.list<T>(prefix, options));
    if (page !== null) return page;
  }
  return scan.finish();
}

/**
 * listPageNow is listPage without waiting: the page when the store can answer every batch at once (a read
 * session behind its key check's barrier, `listNow`), else null, having read nothing that matters (a session
 * that answers a batch at once answers the next too: what it checks only moves forward).
 */
export function listPageNow<T extends JsonObject, V>(
  store: DocumentStore,
  prefix: string,
  query: PageRequest,
  view: (record: T) => V,
  keep: (record: T) => boolean = keepAll,
): Page<V> | null {
  if (store.listNow === undefined) return null;
  const { limit, after } = parsePageRequest(query, prefix);
  const scan = new PageScan(limit, after, view, keep);
  for (let options = scan.nextOptions(); options !== null; options = scan.nextOptions()) {
    const batch = store.listNow<T>(prefix, options);
    if (batch === null) return null;
    const page = scan.take(batch);
    if (page !== null) return page;
  }
  return scan.finish();
}

/**
 * sendPage answers a list request with its page: at once when the store can answer at once (listPageNow), with
 * no promise, await or microtask turn of the route's own (a keyed GET reads behind its key check's barrier, so
 * this is the usual case); else once listPage has it. A route handler returns what it returns, so Express's
 * router sees a rejection as it would an async handler's.
 */
export function sendPage<T extends JsonObject, V>(
  res: Response,
  store: DocumentStore,
  prefix: string,
  query: PageRequest,
  view: (record: T) => V,
  keep: (record: T) => boolean = keepAll,
): void | Promise<void> {
  const now = listPageNow(store, prefix, query, view, keep);
  if (now !== null) {
    res.json(now);
    return;
  }
  return sendWhenListed(res, listPage(store, prefix, query, view, keep));
}

/**
 * sendCachedPage is sendPage for a listing without a per-request filter whose answers `pages` keeps: when the
 * session answers at once at a state seq the kept answer of this query was listed at, that JSON text is sent
 * (what res.json would send of the same page: the same state, query and view give the same page); else the
 * page is listed and, when listed at once, its text kept.
 */
export function sendCachedPage<T extends JsonObject, V>(
  res: Response,
  store: DocumentStore,
  prefix: string,
  query: PageRequest,
  view: (record: T) => V,
  pages: PageCache,
): void | Promise<void> {
  const stateSeq = stateSeqOf(store);
  const key = stateSeq === null || !cacheableAnswer(res) ? null : pages.keyOf(query);
  if (key === null) return sendPage(res, store, prefix, query, view);
  const kept = pages.bodyAt(key, stateSeq!);
  if (kept !== undefined) {
    sendJsonBytes(res, kept);
    return;
  }
  const now = listPageNow(store, prefix, query, view, keepAll);
  if (now === null) return sendWhenListed(res, listPage(store, prefix, query, view, keepAll));
  const body = Buffer.from(JSON.stringify(now));
  // Listed at once, so at the seq read before (nothing ran in between): kept for that seq.
  pages.keep(key, stateSeq!, body);
  sendJsonBytes(res, body);
}

/** jsonContentType is the type res.json's answers carry: its own, with the charset res.send adds to a text. */
const jsonContentType = 'application/json; charset=utf-8';

/**
 * sendJsonBytes answers JSON text's UTF-8 bytes as Express's res.json answers the value that serializes to that
 * text. res.send sends bytes as they are (no charset added, no copy), so the type is set whole first; where a
 * type was set already (none of the routes that keep pages sets one), the text goes through res.send as res.json's
 * would, which adds the charset to that type.
 */
function sendJsonBytes(res: Response, bytes: Buffer): void {
  if (res.get('Content-Type') !== undefined) {
    res.send(bytes.toString());
    return;
  }
  res.setHeader('Content-Type', jsonContentType);
  res.send(bytes);
}

async function sendWhenListed<V>(res: Response, page: Promise<Page<V>>): Promise<void> {
  res.json(await page);
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
