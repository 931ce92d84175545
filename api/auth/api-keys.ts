// API keys: "svc_" + 256 random bits in base64url. Only the SHA-256 of a key and its first
// apiKeyPrefixLength characters are stored; the full key is returned once, when it is created.
import { hash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { DocumentStore } from '../../store/document-store.js';
import { apiKeyLengthMax, apiKeyPrefixLength, apiKeyRandomBytes } from '../limits.js';
import type { ApiKeyRecord, KeyByHashRecord, UserRecord } from '../records.js';
import { newId, nowIso, storeKeys } from '../records.js';
import type { Role } from './auth-context.js';

export const apiKeyPrefix = 'svc_';
const apiKeyPattern = /^svc_[A-Za-z0-9_-]{20,250}$/;

export function generateApiKey(): string {
  return apiKeyPrefix + randomBytes(apiKeyRandomBytes).toString('base64url');
}

/**
 * hashApiKey is plain SHA-256: a key carries 256 random bits, so neither salt nor a slow hash would make a
 * stolen hash easier to keep; see api/README.md for why there is no pepper.
 */
export function hashApiKey(key: string): Buffer {
  // One-shot crypto.hash (UTF-8 for a string): about half the cost of a Hash object per keyed request.
  return hash('sha256', key, 'buffer');
}

/**
 * hashApiKeyHex is hashApiKey in hex, the form the store and the key cache are keyed by: one string per keyed
 * request rather than a Buffer and then its hex string (authenticate.ts).
 */
export function hashApiKeyHex(key: string): string {
  return hash('sha256', key, 'hex');
}

export function looksLikeApiKey(key: string): boolean {
  return key.length <= apiKeyLengthMax && apiKeyPattern.test(key);
}

export interface NewKeyFields {
  name: string;
  userId: string;
  role: Role;
  expiresAt: string | null;
  allowedIps: string[] | null;
}

/** createApiKey stores the record and its hash index; it returns the record and the one-time secret. */
export async function createApiKey(
  store: DocumentStore,
  fields: NewKeyFields,
): Promise<{ record: ApiKeyRecord; secret: string }> {
  const secret = generateApiKey();
  const hashHex = hashApiKey(secret).toString('hex');
  const record: ApiKeyRecord = {
    id: newId('key'),
    name: fields.name,
    key_prefix: secret.slice(0, apiKeyPrefixLength),
    key_hash: hashHex,
    user_id: fields.userId,
    role: fields.role,
    created_at: nowIso(),
    expires_at: fields.expiresAt,
    revoked_at: null,
    revoked_by: null,
    allowed_ips: fields.allowedIps,
  };
  // The record is written before its index so that a key is never findable without its record.
  await store.put(storeKeys.apiKey(record.id), record, { expectedVersion: 0 });
  const index: KeyByHashRecord = { key_id: record.id };
  await store.put(storeKeys.apiKeyByHash(hashHex), index, { expectedVersion: 0 });
  return { record, secret };
}

/**
 * findApiKey resolves a presented key to its record. The store lookup is by hash, which leaks nothing usable
 * through timing; the final check compares the stored and computed hashes in constant time.
 */
export async function findApiKey(store: DocumentStore, presented: string): Promise<ApiKeyRecord | null> {
  if (!looksLikeApiKey(presented)) return null;
  return findApiKeyByHash(store, hashApiKey(presented));
}

/** findApiKeyByHash is findApiKey for a key already hashed with hashApiKey. */
export async function findApiKeyByHash(store: DocumentStore, hash: Buffer): Promise<ApiKeyRecord | null> {
  const index = await store.get<KeyByHashRecord>(storeKeys.apiKeyByHash(hash.toString('hex')));
  if (!index) return null;
  const found = await store.get<ApiKeyRecord>(storeKeys.apiKey(index.value.key_id));
  if (!found) return null;
  const storedHash = Buffer.from(found.value.key_hash, 'hex');
  if (storedHash.length !== hash.length || !timingSafeEqual(storedHash, hash)) return null;
  return found.value;
}

export async function createUser(store: DocumentStore, name: string): Promise<UserRecord> {
  const user: UserRecord = { id: newId('usr'), name, created_at: nowIso() };
  await store.put(storeKeys.user(user.id), user, { expectedVersion: 0 });
  return user;
}

/**
 * bootstrapAdminKey creates an admin user named `name` and an admin key for it, for the CLI to print once.
 * It needs no running server and no existing key.
 */
export async function bootstrapAdminKey(
  store: DocumentStore,
  name: string,
): Promise<{ key: string; keyId: string; userId: string }> {
  const user = await createUser(store, name);
  const { record, secret } = await createApiKey(store, {
    name,
    userId: user.id,
    role: 'admin',
    expiresAt: null,
    allowedIps: null,
  });
  return { key: secret, keyId: record.id, userId: user.id };
}

/** publicKeyView is what the API shows of a key record: never its hash. */
export function publicKeyView(record: ApiKeyRecord): Record<string, unknown> {
  return {
    id: record.id,
    name: record.name,
    key_prefix: record.key_prefix,
    user_id: record.user_id,
    role: record.role,
    created_at: record.created_at,
    expires_at: record.expires_at,
    revoked_at: record.revoked_at,
    revoked_by: record.revoked_by,
    allowed_ips: record.allowed_ips,
  };
}
