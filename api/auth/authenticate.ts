// authenticate checks X-API-Key on every non-public route and sets req.auth.
// Order of checks: missing or unknown key (UNAUTHORIZED), revoked (KEY_REVOKED), expired (KEY_EXPIRED),
// client address outside the key's allowlist (IP_NOT_ALLOWED).
import type { RequestHandler } from 'express';
import type { DocumentStore } from '../../store/document-store.js';
import { ApiError } from '../errors.js';
import type { Role } from './auth-context.js';
import type { ApiKeyRecord } from '../records.js';
import { findApiKeyByHash, hashApiKeyHex, looksLikeApiKey } from './api-keys.js';
import type { ApiKeyCache } from './key-cache.js';
import { clientIp } from './client-ip.js';
import { addressInRanges } from './ip-allowlist.js';

export const apiKeyHeader = 'x-api-key';

/** catchingUp: the error a node catching up refuses a barrier with (store/errors.ts StoreCatchingUpError). */
function catchingUp(error: unknown): boolean {
  return (error as { catchingUp?: unknown } | null)?.catchingUp === true;
}

/**
 * lookupKey finds the presented key's record behind the session's read barrier: from the cache when it holds
 * the key's hash (the cache is emptied by every key change this node applies, key-cache.ts), else from the store.
 * The common case (a cached key) is one await of the session's barrier, here in the caller's async function
 * rather than behind another async function: each nested one is two more promises per keyed request
 * (bench/api-per-request.ts).
 */
async function lookupKey(
  session: DocumentStore,
  cache: ApiKeyCache | undefined,
  presented: string,
): Promise<ApiKeyRecord | null> {
  if (!looksLikeApiKey(presented)) return null;
  const hashHex = hashApiKeyHex(presented);
  if (!cache) return findByHex(session, hashHex);
  try {
    await session.barrier?.();
  } catch (error) {
    // A node catching up cannot vouch for its cache: the key is looked up at the leader instead (the store
    // forwards the reads), and the cache is left as it is.
    if (!catchingUp(error)) throw error;
    return findByHex(session, hashHex);
  }
  return cachedOrFound(session, cache, hashHex);
}

/** findByHex: the store's record for a key hash in hex (the Buffer form only on this, the uncached, path). */
function findByHex(session: DocumentStore, hashHex: string): Promise<ApiKeyRecord | null> {
  return findApiKeyByHash(session, Buffer.from(hashHex, 'hex'));
}

/** cachedOrFound: behind a barrier that held, the cached record for the key's hash (hex), else the store's (then cached). */
function cachedOrFound(
  session: DocumentStore,
  cache: ApiKeyCache,
  hashHex: string,
): ApiKeyRecord | Promise<ApiKeyRecord | null> {
  // Keyed by the full SHA-256 of the key: an entry for this hash is this key's record.
  return cache.get(hashHex) ?? findAndFill(session, cache, hashHex);
}

async function findAndFill(session: DocumentStore, cache: ApiKeyCache, hashHex: string): Promise<ApiKeyRecord | null> {
  const generation = cache.startLookup();
  const found = await findByHex(session, hashHex);
  if (found) cache.fill(generation, hashHex, found);
  return found;
}

export function authenticate(
  store: DocumentStore,
  trustedProxies: readonly string[],
  cache?: ApiKeyCache,
): RequestHandler {
  // An async function, not a .then callback: a callback would be a new closure per request (tsx renames each).
  return async function authenticateRequest(req, _res, next) {
    const header = req.headers[apiKeyHeader];
    if (typeof header !== 'string' || header.length === 0) {
      next(new ApiError('UNAUTHORIZED', 'missing API key: send it in the X-API-Key header'));
      return;
    }
    // The request's reads share one read barrier (on a follower, one question to the leader): the key's
    // lookups here, and the route's reads through req.readStore.
    const session = store.readSession?.() ?? store;
    req.readStore = session;
    try {
      // The usual request (a well-formed key, a cache, a barrier that holds) awaits only the barrier here;
      // anything else goes through lookupKey.
      let record: ApiKeyRecord | null;
      if (cache && session.barrier && looksLikeApiKey(header)) {
        const hashHex = hashApiKeyHex(header);
        let held = true;
        try {
          await session.barrier();
        } catch (error) {
          if (!catchingUp(error)) throw error;
          held = false;
        }
        const found = held ? cachedOrFound(session, cache, hashHex) : findByHex(session, hashHex);
        // A cached record is used as it is: awaiting a plain value would still cost a promise and a turn.
        record = found instanceof Promise ? await found : found;
      } else record = await lookupKey(session, cache, header);
      if (!record) throw new ApiError('UNAUTHORIZED', 'invalid API key');
      if (record.revoked_at !== null) throw new ApiError('KEY_REVOKED', 'this API key has been revoked');
      if (record.expires_at !== null && Date.parse(record.expires_at) <= Date.now()) {
        throw new ApiError('KEY_EXPIRED', 'this API key has expired');
      }
      const ip = clientIp(req, trustedProxies);
      if (record.allowed_ips !== null && !addressInRanges(ip, record.allowed_ips)) {
        throw new ApiError('IP_NOT_ALLOWED', 'this API key may not be used from this address');
      }
      req.auth = {
        keyId: record.id,
        userId: record.user_id,
        role: record.role,
        clientIp: ip,
        expiresAt: record.expires_at,
        allowedIps: record.allowed_ips,
      };
    } catch (error) {
      next(error);
      return;
    }
    next();
  };
}

export function requireRole(role: Role): RequestHandler {
  return (req, _res, next) => {
    if (req.auth?.role === role) next();
    else next(new ApiError('FORBIDDEN', `this operation needs a key with role ${role}`));
  };
}
