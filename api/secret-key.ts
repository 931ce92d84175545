// parseSecretKey reads the credential key's text, apart from config.ts so a light command (`svc manifests secrets`)
// checks a key without loading the settings schema.

/**
 * parseSecretKey accepts 32 bytes written as 64 hex digits or as base64/base64url (44/43 characters).
 * It throws without echoing the input, which is a secret.
 */
export function parseSecretKey(text: string): Buffer {
  const trimmed = text.trim();
  const bytes = /^[0-9a-fA-F]{64}$/.test(trimmed)
    ? Buffer.from(trimmed, 'hex')
    : /^[A-Za-z0-9+/_-]{43}={0,1}$/.test(trimmed)
      ? Buffer.from(trimmed, 'base64')
      : Buffer.alloc(0);
  if (bytes.length !== 32) throw new Error('secret key must be 32 bytes, as 64 hex digits or base64');
  return bytes;
}
