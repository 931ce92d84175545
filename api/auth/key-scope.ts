// Key scope: what a key may do (role), until when (expires_at) and from where (allowed_ips). A key acts only
// within its scope, so a key it creates, rotates or revokes must lie within that scope too: otherwise a
// short-lived, address-bound key could mint a permanent key usable from anywhere, and a stolen narrow key could
// rotate its user's broad key into a fresh secret for the thief.
import type { Role } from './auth-context.js';
import { rulesOutside } from './ip-allowlist.js';

export interface KeyScope {
  role: Role;
  /** ISO date-time, or null for a key that never expires. */
  expiresAt: string | null;
  /** address rules, or null for any address. */
  allowedIps: readonly string[] | null;
}

export interface ScopeExcess {
  path: string;
  message: string;
}

const roleRank: Record<Role, number> = { developer: 0, admin: 1 };

/** scopeExcess lists how `scope` reaches beyond `holder`; an empty list means it lies within it. */
export function scopeExcess(holder: KeyScope, scope: KeyScope): ScopeExcess[] {
  const excess: ScopeExcess[] = [];
  if (roleRank[scope.role] > roleRank[holder.role]) {
    excess.push({ path: 'role', message: `role ${scope.role} is broader than this key's role ${holder.role}` });
  }
  if (holder.expiresAt !== null) {
    if (scope.expiresAt === null) {
      excess.push({ path: 'expires_at', message: `never expires, but this key expires at ${holder.expiresAt}` });
    } else if (Date.parse(scope.expiresAt) > Date.parse(holder.expiresAt)) {
      excess.push({ path: 'expires_at', message: `expires after this key (${holder.expiresAt})` });
    }
  }
  if (holder.allowedIps !== null) {
    if (scope.allowedIps === null) {
      excess.push({ path: 'allowed_ips', message: 'allows any address, but this key has an allowlist' });
    } else {
      for (const rule of rulesOutside(scope.allowedIps, holder.allowedIps)) {
        excess.push({ path: 'allowed_ips', message: `${rule.slice(0, 64)} reaches outside this key's allowlist` });
      }
    }
  }
  return excess;
}
