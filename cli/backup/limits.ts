// Every limit of the backup file and the backup and restore commands has a name and a default here (the
// stream's own, BACKUP_BYTES_MAX and the rest, are the admin service's: transports/admin/limits.ts).
import { DEFAULT_STORAGE_LIMITS } from '../../transports/storage/limits.js';

/** BACKUP_MANIFEST_BYTES_MAX bounds a backup file's manifest (a roster of 15 members and a few files is a few KiB). */
export const BACKUP_MANIFEST_BYTES_MAX = 1024 * 1024;
/** BACKUP_PATH_BYTES_MAX bounds a file path in a backup: the snapshot artifact's own bound, since restore stages them there. */
export const BACKUP_PATH_BYTES_MAX = DEFAULT_STORAGE_LIMITS.snapshotPathBytesMax;
/** BACKUP_TEXT_BYTES_MAX bounds the manifest's free-text fields (createdAt, buildVersion, servedBy). */
export const BACKUP_TEXT_BYTES_MAX = 256;
/** BACKUP_READ_BUFFER_BYTES is one read while verifying a backup file. */
export const BACKUP_READ_BUFFER_BYTES = 1024 * 1024;
/** BACKUP_TIMEOUT_MS_DEFAULT bounds `svc backup` (barrier, capture, transfer, retries) unless --timeout-ms says otherwise. */
export const BACKUP_TIMEOUT_MS_DEFAULT = 300_000;
/** BACKUP_KEEP_MAX bounds `svc backup --keep N`. */
export const BACKUP_KEEP_MAX = 10_000;
/** RESTORE_IGNORED_ENTRIES may be in a data directory `svc restore` calls empty (a fresh ext4 volume has lost+found). */
export const RESTORE_IGNORED_ENTRIES: ReadonlySet<string> = new Set(['lost+found']);
