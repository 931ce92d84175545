// authenticate checks X-API-Key on every non-public route and sets req.auth.
// Order of checks: missing or unknown key (UNAUTHORIZED), revoked (KEY_REVOKED), expired (KEY_EXPIRED),
// client address outside the key's allowlist (IP_NOT_ALLOWED).
import type { RequestHandler } from 'express';
import type { DocumentStore } from '../store/document-store.js';
import { ApiError } from '../errors.js';
import type { Role } from './auth-context.js';
import { findApiKey } from './api-keys.js';
import { clientIp } from './client-ip.js';
import { addressInRanges } from './ip-allowlist.js';

export const apiKeyHeader = 'x-api-key';

export function authenticate(store: DocumentStore, trustedProxies: readonly string[]): RequestHandler {
  return (req, _res, next) => {
    const header = req.headers[apiKeyHeader];
    if (typeof header !== 'string' || header.length === 0) {
      next(new ApiError('UNAUTHORIZED', 'missing API key: send it in the X-API-Key header'));
      return;
    }
    // The key's two lookups share one read barrier (on a follower, one question to the leader).
    findApiKey(store.readSession?.() ?? store, header).then((record) => {
      if (!record) throw new ApiError('UNAUTHORIZED', 'invalid API key');
      if (record.revoked_at !== null) throw new ApiError('KEY_REVOKED', 'this API key has been revoked');
      if (record.expires_at !== null && Date.parse(record.expires_at) <= Date.now()) {
        throw new ApiError('KEY_EXPIRED', 'this API key has expired');
      }
      const ip = clientIp(req, trustedProxies);
      if (record.allowed_ips !== null && !addressInRanges(ip, record.allowed_ips)) {
        throw new ApiError('IP_NOT_ALLOWED', 'this API key may not be used from this address');
      }
      req.auth = { keyId: record.id, userId: record.user_id, role: record.role, clientIp: ip };
      next();
    }).catch(next);
  };
}

export function requireRole(role: Role): RequestHandler {
  return (req, _res, next) => {
    if (req.auth?.role === role) next();
    else next(new ApiError('FORBIDDEN', `this operation needs a key with role ${role}`));
  };
}
