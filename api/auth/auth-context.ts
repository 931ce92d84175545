export type Role = 'admin' | 'developer';
export const roles: readonly Role[] = ['admin', 'developer'];

/** AuthContext is who is calling: the key that authenticated the request and the user it belongs to. */
export interface AuthContext {
  keyId: string;
  userId: string;
  role: Role;
  clientIp: string;
}
