export type Role = 'admin' | 'developer';
export const roles: readonly Role[] = ['admin', 'developer'];

/** AuthContext is who is calling: the key that authenticated the request and the user it belongs to. */
export interface AuthContext {
  keyId: string;
  userId: string;
  role: Role;
  clientIp: string;
  /** the key's own bounds: what it creates, rotates or revokes must lie within them (key-scope.ts). */
  expiresAt: string | null;
  allowedIps: readonly string[] | null;
}
