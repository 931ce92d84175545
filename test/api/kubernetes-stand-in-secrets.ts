// What the Kubernetes API STAND-IN (kubernetes-api-stand-in.ts) checks of v1 Secrets beyond the OpenAPI schema,
// as the real API server's validation does (pkg/apis/core/validation: ValidateSecret, ValidateSecretUpdate):
// - data keys: the config key pattern [-._a-zA-Z0-9]+, at most 253 characters, never `.`, `..` or `..`-prefixed;
// - data values: base64 (the schema's `byte` format; the real server fails to decode them: 400);
// - at most 1 MiB of data in all; stringData is folded into data on write, as the real server does;
// - once `immutable: true`, data, stringData and immutable itself never change; `type` never changes;
// and how an update is applied: JSON Patch (RFC 6902) and JSON merge patch (RFC 7386), as PATCH sends them.
import { isDeepStrictEqual } from 'node:util';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

export const secretKeyPattern = /^[-._a-zA-Z0-9]+$/;
export const secretKeyLengthMax = 253;
export const secretDataBytesMax = 1024 * 1024;
const base64Pattern = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

export interface Cause {
  reason: string;
  message: string;
  field: string;
}

/** base64Problem says where value stops being base64, as Go's decoder words it, or null. */
export function base64Problem(value: string): string | null {
  const text = value.replace(/[\r\n]/g, '');
  if (base64Pattern.test(text)) return null;
  const illegal = text.search(/[^A-Za-z0-9+/=]/);
  const padding = text.indexOf('=');
  const at =
    illegal >= 0 ? illegal : padding >= 0 && padding < text.length - 2 ? padding : text.length - (text.length % 4);
  return `illegal base64 data at input byte ${at}`;
}

function keyCauses(key: string, field: string): Cause[] {
  const invalid = (message: string) => [
    { reason: 'FieldValueInvalid', field, message: `Invalid value: ${JSON.stringify(key)}: ${message}` },
  ];
  if (key.length > secretKeyLengthMax) return invalid(`must be no more than ${secretKeyLengthMax} characters`);
  if (!secretKeyPattern.test(key))
    return invalid(
      "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name', or 'KEY_NAME', or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')",
    );
  if (key === '.') return invalid("must not be '.'");
  if (key === '..') return invalid("must not be '..'");
  if (key.startsWith('..')) return invalid("must not start with '..'");
  return [];
}

/**
 * foldSecret does what the real server does to a Secret it is given: stringData joins data (base64), winning
 * over a data key of the same name, and is dropped; the type defaults to Opaque.
 */
export function foldSecret(secret: Json): Json {
  const data: Record<string, string> = { ...(secret.data ?? {}) };
  for (const [key, value] of Object.entries(secret.stringData ?? {}))
    data[key] = Buffer.from(String(value)).toString('base64');
  const folded = { ...secret, type: secret.type ?? 'Opaque' };
  delete folded.stringData;
  if (Object.keys(data).length > 0 || secret.data !== undefined) folded.data = data;
  return folded;
}

/** secretCauses checks a folded Secret's keys and size (ValidateSecret). */
export function secretCauses(secret: Json): Cause[] {
  const causes: Cause[] = [];
  let bytes = 0;
  for (const [key, value] of Object.entries<string>(secret.data ?? {})) {
    causes.push(...keyCauses(key, `data[${key}]`));
    bytes += Buffer.from(value, 'base64').length;
  }
  if (bytes > secretDataBytesMax)
    causes.push({
      reason: 'FieldValueTooLong',
      field: 'data',
      message: `Too long: must have at most ${secretDataBytesMax} bytes`,
    });
  return causes;
}

/** secretUpdateCauses checks an update against the stored Secret (ValidateSecretUpdate). */
export function secretUpdateCauses(stored: Json, updated: Json): Cause[] {
  const causes: Cause[] = [];
  if (updated.type !== stored.type)
    causes.push({
      reason: 'FieldValueInvalid',
      field: 'type',
      message: `Invalid value: ${JSON.stringify(updated.type)}: field is immutable`,
    });
  if (stored.immutable === true) {
    const forbidden = (field: string) => ({
      reason: 'FieldValueForbidden',
      field,
      message: 'Forbidden: field is immutable when `immutable` is set',
    });
    if (updated.immutable !== true) causes.push(forbidden('immutable'));
    if (!isDeepStrictEqual(updated.data ?? {}, stored.data ?? {})) causes.push(forbidden('data'));
  }
  return causes;
}

export class PatchError extends Error {}

const pointer = (path: string): string[] => {
  if (path === '') return [];
  if (!path.startsWith('/')) throw new PatchError(`invalid JSON pointer ${JSON.stringify(path)}`);
  return path
    .slice(1)
    .split('/')
    .map((part) => part.replace(/~1/g, '/').replace(/~0/g, '~'));
};

function parentOf(document: Json, parts: string[], op: string): { parent: Json; key: string } {
  let parent = document;
  for (const part of parts.slice(0, -1)) {
    parent = Array.isArray(parent) ? parent[Number(part)] : parent?.[part];
    if (parent === undefined || parent === null || typeof parent !== 'object')
      throw new PatchError(`${op} operation does not apply: doc is missing path: /${parts.join('/')}`);
  }
  return { parent, key: parts.at(-1)! };
}

/** applyJsonPatch applies an RFC 6902 patch (add, remove, replace, test, move, copy) to a copy of document. */
export function applyJsonPatch(document: Json, operations: Json): Json {
  if (!Array.isArray(operations)) throw new PatchError('the patch is not a JSON array of operations');
  let result = structuredClone(document);
  const read = (path: string) => {
    let at = result;
    for (const part of pointer(path)) {
      at = Array.isArray(at) ? at[Number(part)] : at?.[part];
      if (at === undefined) throw new PatchError(`doc is missing path: ${path}`);
    }
    return at;
  };
  const add = (path: string, value: Json, op: string) => {
    const parts = pointer(path);
    if (parts.length === 0) {
      result = structuredClone(value);
      return;
    }
    const { parent, key } = parentOf(result, parts, op);
    if (Array.isArray(parent)) {
      const index = key === '-' ? parent.length : Number(key);
      if (!Number.isInteger(index) || index < 0 || index > parent.length)
        throw new PatchError(`${op} operation does not apply: index out of range: ${path}`);
      parent.splice(index, 0, structuredClone(value));
    } else parent[key] = structuredClone(value);
  };
  const remove = (path: string, op: string) => {
    const parts = pointer(path);
    const { parent, key } = parentOf(result, parts, op);
    if (Array.isArray(parent)) {
      const index = Number(key);
      if (!Number.isInteger(index) || index < 0 || index >= parent.length)
        throw new PatchError(`${op} operation does not apply: doc is missing path: ${path}`);
      parent.splice(index, 1);
    } else {
      if (!(key in parent)) throw new PatchError(`${op} operation does not apply: doc is missing path: ${path}`);
      delete parent[key];
    }
  };
  for (const operation of operations) {
    const { op, path, value, from } = operation ?? {};
    if (typeof path !== 'string') throw new PatchError('an operation has no path');
    if (op === 'add') add(path, value, op);
    else if (op === 'remove') remove(path, op);
    else if (op === 'replace') {
      remove(path, op);
      add(path, value, op);
    } else if (op === 'test') {
      if (!isDeepStrictEqual(read(path), value)) throw new PatchError(`testing value ${path} failed`);
    } else if (op === 'move' || op === 'copy') {
      const moved = structuredClone(read(from));
      if (op === 'move') remove(from, op);
      add(path, moved, op);
    } else throw new PatchError(`Unexpected kind: ${String(op)}`);
  }
  return result;
}

/** applyMergePatch applies an RFC 7386 merge patch: objects merge, null removes, anything else replaces. */
export function applyMergePatch(target: Json, patch: Json): Json {
  if (patch === null || typeof patch !== 'object' || Array.isArray(patch)) return structuredClone(patch);
  const result = target !== null && typeof target === 'object' && !Array.isArray(target) ? { ...target } : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete result[key];
    else result[key] = applyMergePatch(result[key], value);
  }
  return result;
}
