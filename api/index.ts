// The API's public surface for the CLI and the lead's wiring.
export { createApp } from './app.js';
export type { ApiService, CreateAppOptions, RedisSettings } from './app.js';
export { startApiServer, startApiService } from './server.js';
export type { ApiRuntime, RunningApi, StartApiOptions } from './server.js';
export { printOpenApi, openApiDocument } from './openapi/document.js';
export { bootstrapAdminKey } from './auth/api-keys.js';
export { configFromEnv, defaultConfig } from './config.js';
export type { ApiConfig } from './config.js';
export type {
  DocumentStore,
  JsonObject,
  ListOptions,
  ListResult,
  StoreChange,
  StoreEntry,
  VersionedValue,
  WriteOptions,
} from '../store/document-store.js';
export { VersionConflictError, isVersionConflict } from '../store/document-store.js';
export { MemoryDocumentStore } from '../store/memory-store.js';
export { startAgentWorker } from './runs/agent-worker.js';
export { startLocalRedis } from './redis/local-redis.js';
