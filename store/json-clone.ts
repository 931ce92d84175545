// cloneJson copies a JSON value (what a DocumentStore holds: objects, arrays, strings, numbers, booleans,
// null). Stores hand out copies so that a caller cannot change a stored value in place; for these small
// plain values a direct walk is several times cheaper than structuredClone, which every read paid for.
import type { JsonObject, JsonValue } from './document-store.js';

export function cloneJson<T extends JsonValue>(value: T): T {
  if (value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map((item) => cloneJson(item)) as T;
  const copy: JsonObject = {};
  for (const key of Object.keys(value)) {
    const item = cloneJson((value as JsonObject)[key]!);
    // '__proto__' must stay an own property (as JSON.parse makes it), not set the copy's prototype.
    if (key === '__proto__')
      Object.defineProperty(copy, key, { value: item, enumerable: true, writable: true, configurable: true });
    else copy[key] = item;
  }
  return copy as T;
}
