// The records this API keeps in the DocumentStore, and their keys. See api/README.md ("Store layout").
import { randomBytes } from 'node:crypto';
import type { Role } from './auth/auth-context.js';

/**
 * ProjectCredential is one entry of a project's `credentials`: the stored credential (category, name) and
 * where the agent finds its value: `as: 'env'` an environment variable named target, `as: 'file'` the file
 * /run/secrets/<target>.
 * (Checked and resolved in runs/run-credentials.ts.)
 */
export interface ProjectCredential {
  [key: string]: string;
  category: string;
  name: string;
  as: 'env' | 'file';
  target: string;
}

export const storeKeys = {
  user: (id: string) => `users/${id}`,
  users: 'users/',
  apiKey: (id: string) => `keys/${id}`,
  apiKeys: 'keys/',
  apiKeyByHash: (hashHex: string) => `keys-by-hash/${hashHex}`,
  credential: (id: string) => `credentials/${id}`,
  credentials: 'credentials/',
  credentialByName: (category: string, name: string) => `credentials-by-name/${category}/${encodeURIComponent(name)}`,
  project: (id: string) => `projects/${id}`,
  projects: 'projects/',
  run: (id: string) => `runs/${id}`,
  runs: 'runs/',
} as const;

export interface UserRecord {
  [key: string]: string;
  id: string;
  name: string;
  created_at: string;
}

export interface ApiKeyRecord {
  [key: string]: string | string[] | null;
  id: string;
  name: string;
  key_prefix: string;
  /** key_hash is hex SHA-256 of the full key; the key itself is never stored. */
  key_hash: string;
  user_id: string;
  role: Role;
  created_at: string;
  expires_at: string | null;
  revoked_at: string | null;
  revoked_by: string | null;
  allowed_ips: string[] | null;
}

export interface KeyByHashRecord {
  [key: string]: string;
  key_id: string;
}

export interface CredentialRecord {
  [key: string]: string;
  id: string;
  category: string;
  name: string;
  /** ciphertext is base64 of version byte | 12-byte IV | 16-byte GCM tag | encrypted value. */
  ciphertext: string;
  created_at: string;
  updated_at: string;
}

export interface CredentialByNameRecord {
  [key: string]: string;
  credential_id: string;
}

export interface ProjectRecord {
  [key: string]: string | string[] | boolean | ProjectCredential[];
  id: string;
  name: string;
  workspace: string;
  command: string[];
  network: boolean;
  /**
   * credentials the project's runs get (runs/run-credentials.ts). Records made before them lack the field:
   * read it with projectCredentials().
   */
  credentials: ProjectCredential[];
  created_by: string;
  created_at: string;
  updated_at: string;
}

/**
 * newId makes ids that sort by creation time (a base36 millisecond clock, then 64 random bits), so store
 * listings, which are ordered by key, come back oldest first.
 */
export function newId(kind: string): string {
  return `${kind}_${Date.now().toString(36).padStart(9, '0')}${randomBytes(8).toString('hex')}`;
}

export function nowIso(): string {
  return new Date().toISOString();
}
