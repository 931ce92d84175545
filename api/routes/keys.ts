// Key and user management. Admins manage every key; a developer sees, revokes and rotates only its own
// user's keys and may create developer keys for itself. Other users' keys answer 404, not 403, so that ids
// are not probeable. Whoever the caller, a key it creates, rotates or revokes must lie within the calling key's
// own scope (role, expiry, allowlist; key-scope.ts): otherwise 403 KEY_SCOPE_EXCEEDED. Omitted expires_at and
// allowed_ips take the calling key's own, so a narrow key's keys are as narrow by default.
import { Router } from 'express';
import type { Request } from 'express';
import type { DocumentStore } from '../../store/document-store.js';
import { ApiError } from '../errors.js';
import type { ApiKeyRecord, UserRecord } from '../records.js';
import { nowIso, storeKeys } from '../records.js';
import { listPage, updateRecord } from '../store-helpers.js';
import { createApiKey, createUser, publicKeyView } from '../auth/api-keys.js';
import type { AuthContext, Role } from '../auth/auth-context.js';
import type { KeyScope } from '../auth/key-scope.js';
import { scopeExcess } from '../auth/key-scope.js';
import { requireRole } from '../auth/authenticate.js';
import { normalizeRange } from '../auth/ip-allowlist.js';

interface NewKeyBody {
  name: string;
  role?: Role;
  user_id?: string;
  expires_at?: string | null;
  allowed_ips?: string[] | null;
}

function normalizeAllowedIps(rules: string[] | null | undefined): string[] | null {
  if (rules === undefined || rules === null) return null;
  if (rules.length === 0) {
    throw new ApiError('VALIDATION_FAILED', 'allowed_ips must not be empty; use null for any address', [
      { path: '/body/allowed_ips', message: 'must not be empty' },
    ]);
  }
  const bad = rules.filter((rule) => normalizeRange(rule) === null);
  if (bad.length > 0) {
    throw new ApiError(
      'VALIDATION_FAILED',
      'allowed_ips holds entries that are not IP addresses or CIDRs',
      bad.map((rule) => ({ path: '/body/allowed_ips', message: `not an address or CIDR: ${rule.slice(0, 64)}` })),
    );
  }
  return [...new Set(rules.map((rule) => normalizeRange(rule)!))];
}

function normalizeExpiry(text: string | null | undefined): string | null {
  if (text === undefined || text === null) return null;
  const time = Date.parse(text);
  if (!Number.isFinite(time) || time <= Date.now()) {
    throw new ApiError('VALIDATION_FAILED', 'expires_at must be a future date-time', [
      { path: '/body/expires_at', message: 'must be in the future' },
    ]);
  }
  return new Date(time).toISOString();
}

/** requireWithinScope refuses (403 KEY_SCOPE_EXCEEDED) a key scope broader than the calling key's own. */
function requireWithinScope(auth: AuthContext, scope: KeyScope, action: string): void {
  const excess = scopeExcess({ role: auth.role, expiresAt: auth.expiresAt, allowedIps: auth.allowedIps }, scope);
  if (excess.length > 0) {
    throw new ApiError(
      'KEY_SCOPE_EXCEEDED',
      `this key may not ${action} a key broader than itself`,
      excess.map((item) => ({ path: `/body/${item.path}`, message: item.message })),
    );
  }
}

function scopeOf(record: ApiKeyRecord): KeyScope {
  return { role: record.role, expiresAt: record.expires_at, allowedIps: record.allowed_ips };
}

async function visibleKey(store: DocumentStore, req: Request, id: string): Promise<ApiKeyRecord> {
  const found = await store.get<ApiKeyRecord>(storeKeys.apiKey(id));
  const auth = req.auth!;
  if (!found || (auth.role !== 'admin' && found.value.user_id !== auth.userId)) {
    throw new ApiError('NOT_FOUND', 'no such key');
  }
  return found.value;
}

export function keyRoutes(store: DocumentStore): Router {
  const router = Router();

  router.post('/keys', async (req, res) => {
    const body = req.body as NewKeyBody;
    const auth = req.auth!;
    const role = body.role ?? 'developer';
    const userId = body.user_id ?? auth.userId;
    if (auth.role !== 'admin' && userId !== auth.userId) {
      throw new ApiError('FORBIDDEN', 'developer keys may only create keys for their own user');
    }
    const expiresAt = body.expires_at === undefined ? auth.expiresAt : normalizeExpiry(body.expires_at);
    const allowedIps = body.allowed_ips === undefined ? auth.allowedIps : normalizeAllowedIps(body.allowed_ips);
    requireWithinScope(auth, { role, expiresAt, allowedIps }, 'create');
    if (!(await store.get(storeKeys.user(userId)))) throw new ApiError('NOT_FOUND', 'no such user');
    const { record, secret } = await createApiKey(store, {
      name: body.name,
      userId,
      role,
      expiresAt,
      allowedIps: allowedIps === null ? null : [...allowedIps],
    });
    res.status(201).json({ key: secret, record: publicKeyView(record) });
  });

  router.get('/keys', async (req, res) => {
    const auth = req.auth!;
    res.json(
      await listPage<ApiKeyRecord, unknown>(
        store,
        storeKeys.apiKeys,
        req.query,
        publicKeyView,
        (record) => auth.role === 'admin' || record.user_id === auth.userId,
      ),
    );
  });

  router.get('/keys/:id', async (req, res) => {
    res.json(publicKeyView(await visibleKey(store, req, req.params.id as string)));
  });

  router.post('/keys/:id/revoke', async (req, res) => {
    const id = req.params.id as string;
    // A key may always revoke itself (it lies within its own scope); a narrow key may not revoke a broader one,
    // so a stolen narrow key cannot lock its user out.
    requireWithinScope(req.auth!, scopeOf(await visibleKey(store, req, id)), 'revoke');
    const revokedBy = req.auth!.keyId;
    const record = await updateRecord<ApiKeyRecord>(store, storeKeys.apiKey(id), (current) =>
      current.revoked_at !== null ? current : { ...current, revoked_at: nowIso(), revoked_by: revokedBy },
    );
    res.json(publicKeyView(record));
  });

  router.post('/keys/:id/rotate', async (req, res) => {
    const id = req.params.id as string;
    const old = await visibleKey(store, req, id);
    // The replacement has the old key's scope: rotating is creating, so the same bound applies.
    requireWithinScope(req.auth!, scopeOf(old), 'rotate');
    if (old.revoked_at !== null) throw new ApiError('CONFLICT', 'a revoked key cannot be rotated');
    // The replacement keeps the old expiry, so an expired key would be replaced by a dead one.
    if (old.expires_at !== null && Date.parse(old.expires_at) <= Date.now()) {
      throw new ApiError('CONFLICT', 'an expired key cannot be rotated; create a new key');
    }
    const { record, secret } = await createApiKey(store, {
      name: old.name,
      userId: old.user_id,
      role: old.role,
      expiresAt: old.expires_at,
      allowedIps: old.allowed_ips,
    });
    const revokedBy = req.auth!.keyId;
    await updateRecord<ApiKeyRecord>(store, storeKeys.apiKey(id), (current) =>
      current.revoked_at !== null ? current : { ...current, revoked_at: nowIso(), revoked_by: revokedBy },
    );
    res.status(201).json({ key: secret, record: publicKeyView(record) });
  });

  router.post('/users', requireRole('admin'), async (req, res) => {
    res.status(201).json(await createUser(store, (req.body as { name: string }).name));
  });

  router.get('/users', requireRole('admin'), async (req, res) => {
    res.json(await listPage<UserRecord, UserRecord>(store, storeKeys.users, req.query, (user) => user));
  });

  return router;
}
