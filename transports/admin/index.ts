export { AdminCallError, AdminClientPool, TRAILER_LEADER, type AdminClientPoolOptions } from './admin-client.js';
export {
  ADMIN_METHODS,
  AdminRefusedError,
  adminServiceDefinition,
  adminServiceImplementation,
  type AdminHost,
  type AdminServiceOptions,
} from './admin-service.js';
export { adminStatusResponse, heartbeatFields, versionMajorSpread, type SeenHeartbeat } from './status-response.js';
export * from './limits.js';
