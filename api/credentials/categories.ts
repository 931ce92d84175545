/** credentialCategories are the only categories a credential may have; others answer 422 INVALID_CATEGORY. */
export const credentialCategories = ['gitea', 'cloudflare', 'woodpecker'] as const;
export type CredentialCategory = (typeof credentialCategories)[number];

export function isCredentialCategory(text: string): text is CredentialCategory {
  return (credentialCategories as readonly string[]).includes(text);
}
