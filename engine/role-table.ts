// ROLE_HANDLERS: the handler set of each role (etcd's `r.step`), chosen when the role changes. Kept out of
// core.ts, which receives it from engine.ts, so that the role files can import the core's type one way.
import type { RoleHandlers } from './core.js';
import { CANDIDATE, PRECANDIDATE } from './role-candidate.js';
import { FOLLOWER } from './role-follower.js';
import { JOINER } from './role-joiner.js';
import { LEADER } from './role-leader.js';
import { REMOVED } from './role-not-leading.js';
import type { Role } from './types.js';

export const ROLE_HANDLERS: Readonly<Record<Role, RoleHandlers>> = {
  leader: LEADER,
  precandidate: PRECANDIDATE,
  candidate: CANDIDATE,
  follower: FOLLOWER,
  joiner: JOINER,
  removed: REMOVED,
};
