/**
 * credentialCategories are the only categories a credential may have; others answer 422 INVALID_CATEGORY. The
 * spec names gitea, cloudflare and woodpecker; `model` (an extension) holds API keys of model services that an
 * agent run talks to (an OpenAI-compatible endpoint).
 */
export const credentialCategories = ['gitea', 'cloudflare', 'woodpecker', 'model'] as const;
export type CredentialCategory = (typeof credentialCategories)[number];

export function isCredentialCategory(text: string): text is CredentialCategory {
  return (credentialCategories as readonly string[]).includes(text);
}
