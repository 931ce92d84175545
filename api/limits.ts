// Every limit of the HTTP API, with its default, in one place.

/** requestBodyBytesMax caps a JSON request body; larger bodies get 413 PAYLOAD_TOO_LARGE. */
export const requestBodyBytesMax = 256 * 1024;
/** requestIdLengthMax bounds an echoed X-Request-Id; longer or odd ones are replaced by a generated id. */
export const requestIdLengthMax = 128;
/** rateLimitPerSecondDefault applies when neither config nor SVC_RATE_LIMIT_RPS sets a rate. */
export const rateLimitPerSecondDefault = 50;
/** rateLimitWindowMs is the sliding window the per-key rate is counted over. */
export const rateLimitWindowMs = 1000;
/** pageLimitDefault and pageLimitMax bound list endpoints (`?limit=`). */
export const pageLimitDefault = 50;
export const pageLimitMax = 200;
/** nameLengthMax bounds names of keys, users, projects and credentials. */
export const nameLengthMax = 128;
/** credentialValueLengthMax bounds one secret value (before encryption). */
export const credentialValueLengthMax = 16 * 1024;
/** allowedIpCountMax bounds one key's IP allowlist. */
export const allowedIpCountMax = 64;
/** workspacePathLengthMax bounds a project's workspace directory. */
export const workspacePathLengthMax = 1024;
/** commandArgCountMax and commandArgLengthMax bound a project's agent command argv. */
export const commandArgCountMax = 64;
export const commandArgLengthMax = 4096;
/** promptLengthMax bounds the prompt of one agent command run. */
export const promptLengthMax = 64 * 1024;
/** queueStatsTimeoutMs bounds how long /work/stats waits for Redis before answering 503. */
export const queueStatsTimeoutMs = 2000;
/** apiKeyRandomBytes is the entropy of an issued key (256 bits). */
export const apiKeyRandomBytes = 32;
/** apiKeyPrefixLength is how many leading characters of a key are stored and shown as key_prefix. */
export const apiKeyPrefixLength = 12;
/** apiKeyLengthMax rejects absurd X-API-Key headers before hashing them. */
export const apiKeyLengthMax = 256;
