// Every limit of the remote admin surface (svc.admin.v1) has a name and a default here.
import { MEMBER_NAME_CHARS_MAX } from '../../engine/limits.js';

/** ADMIN_CALL_DEADLINE_MS bounds a served call that arrived without a deadline (or with a longer one). */
export const ADMIN_CALL_DEADLINE_MS = 30_000;
/** ADMIN_NAME_BYTES_MAX bounds a member name in a request: the engine's name limit (names are ASCII, a byte a character). */
export const ADMIN_NAME_BYTES_MAX = MEMBER_NAME_CHARS_MAX;
/** ADMIN_MESSAGE_BYTES_MAX bounds an admin response a client accepts (a roster of 15 members is a few KiB). */
export const ADMIN_MESSAGE_BYTES_MAX = 4 * 1024 * 1024;

/**
 * BACKUP_BYTES_MAX bounds the files of one backup (Admin.Backup): a member refuses a larger state with
 * RESOURCE_EXHAUSTED before sending anything, and a client refuses a stream that claims or carries more.
 */
export const BACKUP_BYTES_MAX = 1024 * 1024 * 1024;
/** BACKUP_CHUNK_BYTES is the file data in one BackupFileChunk (well under ADMIN_MESSAGE_BYTES_MAX). */
export const BACKUP_CHUNK_BYTES = 1024 * 1024;
/** BACKUP_FILE_COUNT_MAX bounds the files one backup lists. */
export const BACKUP_FILE_COUNT_MAX = 64;
/** BACKUP_CONCURRENT_COUNT_MAX bounds the Backup calls one member serves at once: each holds an encoded copy of the state. */
export const BACKUP_CONCURRENT_COUNT_MAX = 2;
/** ADMIN_RECORDING_CHUNK_BYTES_MAX bounds the recording bytes one Recording call answers (under ADMIN_MESSAGE_BYTES_MAX). */
export const ADMIN_RECORDING_CHUNK_BYTES_MAX = 1024 * 1024;
/** ADMIN_LOGS_BYTES_MAX bounds the log lines one Logs call answers (the newest of the window; under ADMIN_MESSAGE_BYTES_MAX). */
export const ADMIN_LOGS_BYTES_MAX = 1024 * 1024;
