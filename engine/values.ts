// Values the engine can carry exactly. Terms and seqnos are uint64 on the wire but
// JavaScript numbers here: exact only up to 2^53-1, and a term must leave room for the
// next election's +1. A value past VALUE_ROOM_MAX is malformed wherever it appears: the
// gRPC edge refuses it with INVALID_ARGUMENT (transports import these helpers), and the
// engine refuses it again before it could reach the hard state (docs/protocol.md,
// "Identity and trust — engine rules").
import type { RpcRequest, RpcResponse } from './rpc.js';

/**
 * VALUE_ROOM_MAX (termRoomMax) is the largest term, seqno or count the engine accepts: one below
 * Number.MAX_SAFE_INTEGER, so that adding one is still exact.
 */
export const VALUE_ROOM_MAX = Number.MAX_SAFE_INTEGER - 1;

/** termRoomMax is VALUE_ROOM_MAX under the name the issue uses for terms. */
export const termRoomMax = VALUE_ROOM_MAX;

/** isCarriableValue: a whole number in [0, VALUE_ROOM_MAX]. */
export function isCarriableValue(value: number): boolean {
  return Number.isSafeInteger(value) && value >= 0 && value <= VALUE_ROOM_MAX;
}

/** isCarriableTerm: a term the engine can hold and still increment. */
export function isCarriableTerm(term: number): boolean {
  return isCarriableValue(term);
}

/** isCarriableSeq: a seqno the engine can hold and still increment. */
export function isCarriableSeq(seq: number): boolean {
  return isCarriableValue(seq);
}

/** canIncrementTerm: our own next term would still be carriable (an election may start). */
export function canIncrementTerm(term: number): boolean {
  return isCarriableTerm(term) && term < VALUE_ROOM_MAX;
}

/** DOUBLE_FIELD is the one proto `double` field: a measurement, not a counter; any finite value is fine. */
const DOUBLE_FIELD = 'signalThroughputEps';
/** DOUBLE_FIELDS: every proto `double` field (firstUncarriable's walk; allCarriable compares with DOUBLE_FIELD). */
const DOUBLE_FIELDS: ReadonlySet<string> = new Set([DOUBLE_FIELD]);

/**
 * firstUncarriable walks a decoded message and names the first numeric field (a term, seqno,
 * count or id) that is not carriable, or returns null. Bytes and strings are not looked at;
 * nested messages, repeated fields and maps are.
 */
function firstUncarriable(value: unknown, path: string): string | null {
  if (value === null || value === undefined || typeof value === 'string' || typeof value === 'boolean') return null;
  if (typeof value === 'number') return isCarriableValue(value) ? null : `${path} = ${value}`;
  if (value instanceof Uint8Array) return null;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const problem = firstUncarriable(value[i], `${path}[${i}]`);
      if (problem) return problem;
    }
    return null;
  }
  if (typeof value === 'object') {
    for (const [key, field] of Object.entries(value as Record<string, unknown>)) {
      if (DOUBLE_FIELDS.has(key)) {
        if (typeof field === 'number' && !Number.isFinite(field)) return `${path}.${key} = ${field}`;
        continue;
      }
      // Map keys (replication_lag's region ids) are numbers spelled as strings.
      if (/^\d+$/.test(key) && !isCarriableValue(Number(key))) return `${path} key ${key}`;
      const problem = firstUncarriable(field, path === '' ? key : `${path}.${key}`);
      if (problem) return problem;
    }
  }
  return null;
}

/**
 * allCarriable is firstUncarriable's verdict without the path: the same walk, building no text, so
 * the common case (every value fits) costs no string per field. firstUncarriable runs only after
 * it says no, to name the field.
 */
function allCarriable(value: unknown): boolean {
  if (value === null || value === undefined) return true;
  switch (typeof value) {
    case 'number':
      return isCarriableValue(value);
    case 'object':
      break;
    default:
      return true;
  }
  if (value instanceof Uint8Array) return true;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) if (!allCarriable(value[i])) return false;
    return true;
  }
  const record = value as Record<string, unknown>;
  const keys = Object.keys(record);
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i]!;
    const field = record[key];
    if (key === DOUBLE_FIELD) {
      if (typeof field === 'number' && !Number.isFinite(field)) return false;
      continue;
    }
    if (!allCarriable(field)) return false;
    if (isNumericKey(key) && !isCarriableValue(Number(key))) return false;
  }
  return true;
}

/** isNumericKey: /^\d+$/ without a regular expression (map keys are region ids spelled as strings). */
function isNumericKey(key: string): boolean {
  if (key.length === 0) return false;
  for (let i = 0; i < key.length; i++) {
    const c = key.charCodeAt(i);
    if (c < 48 || c > 57) return false;
  }
  return true;
}

/**
 * requestValueProblem names the first term/seqno/count field of a request the engine cannot
 * carry exactly with room to increment (null = every value fits). The gRPC edge answers such a
 * request INVALID_ARGUMENT; the engine does the same if one ever reaches it.
 */
export function requestValueProblem(request: RpcRequest): string | null {
  if (allCarriable(request.body)) return null;
  const problem = firstUncarriable(request.body, '');
  return problem === null ? null : `${request.method}: ${problem} is beyond ${VALUE_ROOM_MAX} (no room to increment)`;
}

/** responseValueProblem is requestValueProblem for an answer to one of our calls. */
export function responseValueProblem(response: RpcResponse): string | null {
  if (allCarriable(response.body)) return null;
  const problem = firstUncarriable(response.body, '');
  return problem === null
    ? null
    : `${response.method} response: ${problem} is beyond ${VALUE_ROOM_MAX} (no room to increment)`;
}

/** parseCarriable reads a decimal trailer value (x-svc-term); anything else is 0 (unknown). */
export function parseCarriable(text: string | undefined): number {
  if (text === undefined || !/^\d{1,16}$/.test(text)) return 0;
  const value = Number(text);
  return isCarriableValue(value) ? value : 0;
}
