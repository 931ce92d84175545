export {
  AdminCallError,
  AdminClientPool,
  RETRYABLE_ADMIN_CODES,
  TRAILER_LEADER,
  TRAILER_REFUSAL_CODE,
  type AdminClientPoolOptions,
} from './admin-client.js';
export {
  ADMIN_MEMBER_METHODS,
  ADMIN_METHODS,
  AdminRefusedError,
  adminServiceDefinition,
  adminServiceImplementation,
  type AdminHost,
  type AdminServiceOptions,
} from './admin-service.js';
export {
  backupHandler,
  DEFAULT_BACKUP_LIMITS,
  type BackupCapture,
  type BackupLimits,
  type BackupServeOptions,
} from './backup-service.js';
export { adminStatusResponse, heartbeatFields, versionMajorSpread, type SeenHeartbeat } from './status-response.js';
export * from './limits.js';
