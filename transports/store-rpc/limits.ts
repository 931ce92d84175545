// The Store client pool's defaults when its caller names none. A node passes its store limits
// (store/limits.ts, where these same values are the defaults; test/transports/store-rpc-limits.test.ts
// checks that they agree).

/** DEFAULT_PROPOSE_BATCH_COUNT_MAX bounds the forwarded commands coalesced into one ProposeStream request or ProposeBatch call. */
export const DEFAULT_PROPOSE_BATCH_COUNT_MAX = 256;
/** DEFAULT_STREAM_IDLE_MS: a ReadIndexStream or ProposeStream call to an address ends after this long with no request open. */
export const DEFAULT_STREAM_IDLE_MS = 30_000;
