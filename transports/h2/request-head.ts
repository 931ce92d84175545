// A request's decoded header list, checked as RFC 9113 8.3 asks of a server: pseudo-header fields first and
// only the request ones, once each; :method, :scheme and :path present; names lowercase; no connection-specific
// fields. A malformed list is a stream error (RST_STREAM PROTOCOL_ERROR); a list above the bound is left to
// the application to refuse in its own terms (gRPC: RESOURCE_EXHAUSTED).
import type { HeaderField } from './hpack.js';

export interface RequestHead {
  method: string;
  path: string;
  /** Every regular field (not pseudo), in order. */
  fields: readonly HeaderField[];
  /** The list's size by RFC 9113's measure, and whether it is above SETTINGS_MAX_HEADER_LIST_SIZE. */
  listBytes: number;
  tooLarge: boolean;
  /** Why the list is malformed, or null. */
  malformed: string | null;
}

const CONNECTION_SPECIFIC = new Set(['connection', 'proxy-connection', 'keep-alive', 'transfer-encoding', 'upgrade']);
const UPPERCASE = /[A-Z]/;
/**
 * PSEUDO_BITS: a request's pseudo-header fields, one bit each, for telling one seen twice without a Set per
 * request (any other pseudo-header is malformed at its first sight).
 */
const PSEUDO_BITS: Readonly<Record<string, number>> = { ':method': 1, ':scheme': 2, ':path': 4, ':authority': 8 };

export function decodeHeaderFields(
  fields: readonly HeaderField[],
  listBytes: number,
  listBytesMax: number,
): RequestHead {
  let method = '';
  let path = '';
  let scheme = '';
  let malformed: string | null = null;
  const regular: HeaderField[] = [];
  let seen = 0;
  for (const field of fields) {
    const [name, value] = field;
    if (name.startsWith(':')) {
      if (regular.length > 0) malformed ??= 'a pseudo-header field after a regular one';
      const bit = Object.hasOwn(PSEUDO_BITS, name) ? PSEUDO_BITS[name]! : 0;
      if (bit === 0) {
        malformed ??= `pseudo-header ${name} in a request`;
        continue;
      }
      if (seen & bit) malformed ??= `${name} twice`;
      seen |= bit;
      if (name === ':method') method = value;
      else if (name === ':path') path = value;
      else if (name === ':scheme') scheme = value;
      continue;
    }
    if (UPPERCASE.test(name)) malformed ??= 'an uppercase field name';
    if (CONNECTION_SPECIFIC.has(name)) malformed ??= `connection-specific field ${name}`;
    if (name === 'te' && value !== 'trailers') malformed ??= 'te other than trailers';
    regular.push(field);
  }
  if (method === '' || scheme === '' || path === '') malformed ??= 'a request without :method, :scheme or :path';
  return { method, path, fields: regular, listBytes, tooLarge: listBytes > listBytesMax, malformed };
}

/** headerValue is the first value of `name` in a request's regular fields. */
export function headerValue(head: RequestHead, name: string): string | undefined {
  for (const [fieldName, value] of head.fields) if (fieldName === name) return value;
  return undefined;
}
