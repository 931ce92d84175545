// Credentials a project hands to its runs: each names a stored credential (category and name) and where the
// agent finds it, an environment variable or a file under /run/secrets. They are resolved when the run starts,
// from the encrypted credential store (the replicated store; opened with the service's secret key), so a
// rotated credential reaches the next run. Values go to the sandbox through its environment and pipes only;
// what is recorded (the run's `credentials` event, the log) is names, never values.
import type { DocumentStore } from '../../store/document-store.js';
import type { CredentialByNameRecord, CredentialRecord, ProjectCredential } from '../records.js';

export type { ProjectCredential } from '../records.js';
import { storeKeys } from '../records.js';
import { credentialAssociatedData, openSecret } from '../credentials/secret-box.js';

/** An environment variable target: upper case, digits, underscore; never one the sandbox sets or the loader reads. */
export const injectableEnvNamePattern = '^[A-Z_][A-Z0-9_]{0,127}$';
export const reservedEnvNames = ['PATH', 'HOME', 'LANG', 'PWD', 'SHELL', 'USER', 'LOGNAME', 'TMPDIR'];
export const secretFileNamePattern = '^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$';

/** projectCredentials reads a project's credentials (none on a record made before they existed). */
export function projectCredentials(project: { credentials?: unknown }): ProjectCredential[] {
  return Array.isArray(project.credentials) ? (project.credentials as ProjectCredential[]) : [];
}

/** projectCredentialProblem says what is wrong with a project's credentials, or null. */
export function projectCredentialProblem(entries: readonly ProjectCredential[]): string | null {
  const targets = new Set<string>();
  for (const entry of entries) {
    const key = `${entry.as}:${entry.target}`;
    if (targets.has(key)) return `${entry.as} ${entry.target} is named twice`;
    targets.add(key);
    if (entry.as === 'env') {
      if (!new RegExp(injectableEnvNamePattern).test(entry.target))
        return `env target must match ${injectableEnvNamePattern}`;
      if (reservedEnvNames.includes(entry.target) || entry.target.startsWith('LD_'))
        return `env ${entry.target} is reserved`;
    } else if (!new RegExp(secretFileNamePattern).test(entry.target)) {
      return `file target must match ${secretFileNamePattern}`;
    }
  }
  return null;
}

export interface ResolvedCredential extends ProjectCredential {
  value: string;
}

export class CredentialResolutionError extends Error {
  constructor(
    readonly code: 'CREDENTIAL_MISSING' | 'CREDENTIALS_UNAVAILABLE',
    message: string,
  ) {
    super(message);
  }
}

/** resolveRunCredentials opens each named credential; a missing one or a missing key fails the whole run. */
export async function resolveRunCredentials(
  store: DocumentStore,
  secretKey: Buffer | undefined,
  entries: readonly ProjectCredential[],
): Promise<ResolvedCredential[]> {
  if (entries.length === 0) return [];
  if (!secretKey)
    throw new CredentialResolutionError('CREDENTIALS_UNAVAILABLE', 'the worker has no secret key to open credentials');
  const resolved: ResolvedCredential[] = [];
  for (const entry of entries) {
    const index = await store.get<CredentialByNameRecord>(storeKeys.credentialByName(entry.category, entry.name));
    const record = index ? await store.get<CredentialRecord>(storeKeys.credential(index.value.credential_id)) : null;
    if (!record || record.value.category !== entry.category || record.value.name !== entry.name) {
      throw new CredentialResolutionError('CREDENTIAL_MISSING', `no credential ${entry.category}/${entry.name}`);
    }
    let value: string;
    try {
      value = openSecret(secretKey, record.value.ciphertext, credentialAssociatedData(record.value));
    } catch {
      throw new CredentialResolutionError(
        'CREDENTIALS_UNAVAILABLE',
        `credential ${entry.category}/${entry.name} does not open with this key`,
      );
    }
    resolved.push({ category: entry.category, name: entry.name, as: entry.as, target: entry.target, value });
  }
  return resolved;
}
