// The serialized answer of a listing, kept per query for as long as the listed state is the same: a keyed GET of
// a list (GET /projects) behind its key check's barrier reads the local state at one applied seq, and the same
// seq is the same committed state on every node (store/document-store.ts `stateSeqNow`), so the same query at
// the same seq gives the same bytes. A write anywhere moves the seq and the next listing is made afresh.
import type { Response } from 'express';
import type { DocumentStore } from '../store/document-store.js';
import type { PageRequest } from './store-helpers.js';

/** pageCacheEntriesMax bounds the queries (limit and cursor) one listing keeps an answer for. */
export const pageCacheEntriesMax = 64;

interface CachedPage {
  stateSeq: number;
  /** body is the answer's JSON text as UTF-8 bytes, encoded once (res.send would encode the text per answer). */
  body: Buffer;
}

/**
 * PageCache holds one listing's serialized pages (one route: one prefix, one view, no per-request filter), by
 * the query's limit and cursor, each with the state seq it was listed at.
 */
export class PageCache {
  private readonly pages = new Map<string, CachedPage>();

  /**
   * keyOf is the cache key of a query, or null when it is not one a cache may answer (a value given twice is an
   * array: the listing refuses or reads it as it does, uncached).
   */
  keyOf(query: PageRequest): string | null {
    const { limit, cursor } = query;
    if ((limit !== undefined && typeof limit !== 'string') || (cursor !== undefined && typeof cursor !== 'string'))
      return null;
    if (limit === undefined && cursor === undefined) return '';
    return `${limit ?? ''}\u0000${cursor ?? ''}`;
  }

  /** bodyAt is the kept answer of this query when it was listed at stateSeq, else undefined. */
  bodyAt(key: string, stateSeq: number): Buffer | undefined {
    const page = this.pages.get(key);
    return page !== undefined && page.stateSeq === stateSeq ? page.body : undefined;
  }

  keep(key: string, stateSeq: number, body: Buffer): void {
    if (!this.pages.has(key) && this.pages.size >= pageCacheEntriesMax) this.pages.clear();
    this.pages.set(key, { stateSeq, body });
  }
}

/**
 * cacheableAnswer: whether res.json is Express's own, so that sending kept JSON text is what res.json would send
 * (express-openapi-validator's response validation, on in tests, replaces res.json on the response to check the
 * page: then the page is made and checked as usual).
 */
export function cacheableAnswer(res: Response): boolean {
  return !Object.hasOwn(res, 'json');
}

/** stateSeqOf is the session's state seq when it answers at once (stateSeqNow), else null. */
export function stateSeqOf(store: DocumentStore): number | null {
  return store.stateSeqNow?.() ?? null;
}
