// Every limit of the remote admin surface (svc.admin.v1) has a name and a default here.
import { MEMBER_NAME_CHARS_MAX } from '../../engine/limits.js';

/** ADMIN_CALL_DEADLINE_MS bounds a served call that arrived without a deadline (or with a longer one). */
export const ADMIN_CALL_DEADLINE_MS = 30_000;
/** ADMIN_NAME_BYTES_MAX bounds a member name in a request: the engine's name limit (names are ASCII, a byte a character). */
export const ADMIN_NAME_BYTES_MAX = MEMBER_NAME_CHARS_MAX;
/** ADMIN_MESSAGE_BYTES_MAX bounds an admin response a client accepts (a roster of 15 members is a few KiB). */
export const ADMIN_MESSAGE_BYTES_MAX = 4 * 1024 * 1024;
