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
  const seen = new Set<string>();
  for (const field of fields) {
    const [name, value] = field;
    if (name.startsWith(':')) {
      if (regular.length > 0) malformed ??= 'a pseudo-header field after a regular one';
      if (seen.has(name)) malformed ??= `${name} twice`;
      seen.add(name);
      if (name === ':method') method = value;
      else if (name === ':path') path = value;
      else if (name === ':scheme') scheme = value;
      else if (name !== ':authority') malformed ??= `pseudo-header ${name} in a request`;
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
