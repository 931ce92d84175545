// Infrastructure credentials by category. Values are sealed with AES-256-GCM before they reach the store
// and only ever leave the API masked. Any key may list them; only admins may write them.
import { Router } from 'express';
import type { DocumentStore } from '../../store/document-store.js';
import { isVersionConflict } from '../../store/document-store.js';
import { ApiError } from '../errors.js';
import type { CredentialByNameRecord, CredentialRecord } from '../records.js';
import { newId, nowIso, storeKeys } from '../records.js';
import { listPage, updateRecord } from '../store-helpers.js';
import { requireRole } from '../auth/authenticate.js';
import { credentialCategories, isCredentialCategory } from '../credentials/categories.js';
import { maskSecret } from '../credentials/mask.js';
import { credentialAssociatedData as associatedData, openSecret, sealSecret } from '../credentials/secret-box.js';

function checkCategory(category: string): void {
  if (!isCredentialCategory(category)) {
    throw new ApiError('INVALID_CATEGORY', `category must be one of ${credentialCategories.join(', ')}`, {
      allowed: credentialCategories,
    });
  }
}

export function credentialRoutes(store: DocumentStore, secretKey: Buffer | undefined): Router {
  const router = Router();

  const requireSecretKey = (): Buffer => {
    if (!secretKey) throw new ApiError('CREDENTIALS_UNAVAILABLE', 'the server has no secret key configured');
    return secretKey;
  };
  const view = (record: CredentialRecord) => ({
    id: record.id,
    category: record.category,
    name: record.name,
    masked_value: maskSecret(openSecret(requireSecretKey(), record.ciphertext, associatedData(record))),
    created_at: record.created_at,
    updated_at: record.updated_at,
  });

  router.get('/credentials', async (req, res) => {
    requireSecretKey();
    const category = req.query.category;
    if (category !== undefined) checkCategory(String(category));
    res.json(
      await listPage<CredentialRecord, ReturnType<typeof view>>(
        store,
        storeKeys.credentials,
        req.query,
        view,
        (record) => category === undefined || record.category === category,
      ),
    );
  });

  router.post('/credentials', requireRole('admin'), async (req, res) => {
    const key = requireSecretKey();
    const body = req.body as { category: string; name: string; value: string };
    checkCategory(body.category);
    const now = nowIso();
    const id = newId('crd');
    const record: CredentialRecord = {
      id,
      category: body.category,
      name: body.name,
      ciphertext: sealSecret(key, body.value, associatedData({ id, category: body.category })),
      created_at: now,
      updated_at: now,
    };
    // The name index is claimed first with compare-and-set, so two concurrent creates cannot both win.
    const index: CredentialByNameRecord = { credential_id: id };
    try {
      await store.put(storeKeys.credentialByName(body.category, body.name), index, { expectedVersion: 0 });
    } catch (error) {
      if (isVersionConflict(error)) {
        throw new ApiError('CONFLICT', 'a credential with this category and name exists; update it instead');
      }
      throw error;
    }
    try {
      await store.put(storeKeys.credential(id), record, { expectedVersion: 0 });
    } catch (error) {
      await store.delete(storeKeys.credentialByName(body.category, body.name), {}).catch(() => undefined);
      throw error;
    }
    res.status(201).json(view(record));
  });

  router.patch('/credentials/:id', requireRole('admin'), async (req, res) => {
    const key = requireSecretKey();
    const value = (req.body as { value: string }).value;
    const record = await updateRecord<CredentialRecord>(
      store,
      storeKeys.credential(req.params.id as string),
      (current) => ({
        ...current,
        ciphertext: sealSecret(key, value, associatedData(current)),
        updated_at: nowIso(),
      }),
    );
    res.json(view(record));
  });

  router.delete('/credentials/:id', requireRole('admin'), async (req, res) => {
    const found = await store.get<CredentialRecord>(storeKeys.credential(req.params.id as string));
    if (!found) throw new ApiError('NOT_FOUND', 'no such credential');
    await store.delete(storeKeys.credential(found.value.id), { expectedVersion: found.version });
    await store.delete(storeKeys.credentialByName(found.value.category, found.value.name));
    res.status(204).end();
  });

  return router;
}
