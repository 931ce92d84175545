// Every limit of the remote admin surface (svc.admin.v1) has a name and a default here.

/** ADMIN_CALL_DEADLINE_MS bounds a served call that arrived without a deadline (or with a longer one). */
export const ADMIN_CALL_DEADLINE_MS = 30_000;
/** ADMIN_NAME_BYTES_MAX bounds a member name in a request (member names are 1-253 characters). */
export const ADMIN_NAME_BYTES_MAX = 253;
/** ADMIN_MESSAGE_BYTES_MAX bounds an admin response a client accepts (a roster of 15 members is a few KiB). */
export const ADMIN_MESSAGE_BYTES_MAX = 4 * 1024 * 1024;
/** ADMIN_RECORDING_CHUNK_BYTES_MAX bounds the recording bytes one Recording call answers (under ADMIN_MESSAGE_BYTES_MAX). */
export const ADMIN_RECORDING_CHUNK_BYTES_MAX = 1024 * 1024;
