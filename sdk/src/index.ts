// The SDK's public surface. Operations are methods of SvcClient (generated from sdk/openapi.json); their
// request and response types are re-exported from the generated code.
export { SvcClient } from './client.js';
export type { SvcClientOptions } from './client.js';
export { SvcError, SvcApiError, SvcConnectionError, SvcStreamError, authErrorCodes, isAuthError } from './errors.js';
export type { ApiErrorCode, AuthErrorCode, ConnectionErrorCode, StreamErrorCode } from './errors.js';
export type {
  ChannelEvent,
  RunCompleteData,
  RunCredentialsData,
  RunEvent,
  RunFinalStatus,
  RunNoticeData,
  RunOutputData,
  RunQueuedData,
  RunSandbox,
  RunStartedData,
} from './run-events.js';
export type { ReconnectInfo, StreamOptions } from './event-stream.js';
export { SseParser } from './sse-parser.js';
export type { SseEvent, SseLimits } from './sse-parser.js';
export * as limits from './limits.js';
export type {
  ApiKey,
  IssuedApiKey,
  NewApiKey,
  User,
  NewUser,
  Credential,
  NewCredential,
  CredentialUpdate,
  Project,
  NewProject,
  ProjectUpdate,
  QueueStats,
  WorkStats,
  CommandRequest,
  CommandAccepted,
  Run,
  Role,
  Error as ApiErrorBody,
  Album,
  NewAlbum,
  AlbumAnchor,
  Shot,
  ShotDirection,
  NewShotDirection,
  AnchorRequest,
  ShotRequest,
  AnchorAccepted,
  ShotAccepted,
  ShotsAccepted,
  ShotsDeleted,
  AlbumTemplate,
  AlbumTemplates,
} from './gen/types.gen.js';
