// The ascending key array both document stores (MemoryDocumentStore, the replicated store's state
// machine) keep beside their key → slot map, so list() pages through a prefix by binary search
// instead of sorting every call.

/** KeyPage is one page of keys under a prefix; nextAfter is the last key when more follow, else null. */
export interface KeyPage {
  keys: string[];
  nextAfter: string | null;
}

/**
 * pageKeys returns up to limit keys that start with prefix, in ascending order, after `after` (an
 * `after` below the prefix starts at the prefix's first key).
 */
export function pageKeys(sortedKeys: readonly string[], prefix: string, limit: number, after?: string): KeyPage {
  const start = after !== undefined && after >= prefix ? after : undefined;
  let index = start === undefined ? lowerBound(sortedKeys, prefix) : upperBound(sortedKeys, start);
  const keys: string[] = [];
  for (; index < sortedKeys.length && keys.length < limit; index++) {
    const key = sortedKeys[index]!;
    if (!key.startsWith(prefix)) break;
    keys.push(key);
  }
  const more = index < sortedKeys.length && sortedKeys[index]!.startsWith(prefix);
  return { keys, nextAfter: more && keys.length > 0 ? keys[keys.length - 1]! : null };
}

/** insertSortedKey puts a key that is not there yet in its place. */
export function insertSortedKey(sortedKeys: string[], key: string): void {
  sortedKeys.splice(lowerBound(sortedKeys, key), 0, key);
}

/** removeSortedKey takes out a key that is there. */
export function removeSortedKey(sortedKeys: string[], key: string): void {
  sortedKeys.splice(lowerBound(sortedKeys, key), 1);
}

function lowerBound(keys: readonly string[], target: string): number {
  let low = 0;
  let high = keys.length;
  while (low < high) {
    const middle = (low + high) >>> 1;
    if (keys[middle]! < target) low = middle + 1; else high = middle;
  }
  return low;
}

function upperBound(keys: readonly string[], target: string): number {
  let low = 0;
  let high = keys.length;
  while (low < high) {
    const middle = (low + high) >>> 1;
    if (keys[middle]! <= target) low = middle + 1; else high = middle;
  }
  return low;
}
