// Credential values at rest: AES-256-GCM with a fresh 96-bit IV per value. The associated data binds a
// ciphertext to its credential id and category, so a ciphertext copied onto another record fails to open.
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

/** credentialAssociatedData binds a credential's ciphertext to its id and category. */
export function credentialAssociatedData(record: { id: string; category: string }): string {
  return `credential:${record.id}:${record.category}`;
}

const formatVersion = 1;
const ivBytes = 12;
const tagBytes = 16;

export function sealSecret(secretKey: Buffer, plaintext: string, associatedData: string): string {
  const iv = randomBytes(ivBytes);
  const cipher = createCipheriv('aes-256-gcm', secretKey, iv, { authTagLength: tagBytes });
  cipher.setAAD(Buffer.from(associatedData, 'utf8'));
  const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return Buffer.concat([Buffer.from([formatVersion]), iv, cipher.getAuthTag(), body]).toString('base64');
}

/** openSecret throws when the key is wrong or the ciphertext or its associated data were changed. */
export function openSecret(secretKey: Buffer, sealed: string, associatedData: string): string {
  const bytes = Buffer.from(sealed, 'base64');
  if (bytes.length < 1 + ivBytes + tagBytes || bytes[0] !== formatVersion) {
    throw new Error('sealed secret has an unknown format');
  }
  const iv = bytes.subarray(1, 1 + ivBytes);
  const tag = bytes.subarray(1 + ivBytes, 1 + ivBytes + tagBytes);
  const decipher = createDecipheriv('aes-256-gcm', secretKey, iv, { authTagLength: tagBytes });
  decipher.setAAD(Buffer.from(associatedData, 'utf8'));
  decipher.setAuthTag(tag);
  return Buffer.concat([decipher.update(bytes.subarray(1 + ivBytes + tagBytes)), decipher.final()]).toString('utf8');
}
