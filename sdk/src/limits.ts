// Every limit and default of the SDK, in one place. Client options override the defaults per client.

/** requestTimeoutMsDefault bounds one API call (not an event stream, which has streamIdleTimeoutMsDefault). */
export const requestTimeoutMsDefault = 30_000;
/**
 * retryAttemptsMaxDefault is how many times a call is sent again after a 503 that carries Retry-After (a node
 * catching up says so when it wrote nothing); 0 turns it off. Every attempt stays within requestTimeoutMs.
 */
export const retryAttemptsMaxDefault = 3;
/** retryAfterMsMax: a Retry-After longer than this is not waited for; the 503 is thrown to the caller instead. */
export const retryAfterMsMax = 5_000;
/** streamIdleTimeoutMsDefault drops a silent event stream and reconnects: the server sends a keep-alive comment
 * every 15 s while a run is quiet, so three missed ones mean the connection is dead. */
export const streamIdleTimeoutMsDefault = 45_000;
/** reconnectAttemptsMaxDefault is how many reconnects in a row may fail to deliver an event before giving up. */
export const reconnectAttemptsMaxDefault = 5;
/** reconnectDelayMsDefault is the first wait before a reconnect; it doubles per failed attempt. */
export const reconnectDelayMsDefault = 250;
/** reconnectDelayMsMax caps the doubling, and a server's `retry:` field. */
export const reconnectDelayMsMax = 10_000;
/** sseLineLengthMax bounds one line of an event stream (the server sends output in 16 KiB chunks, JSON-escaped). */
export const sseLineLengthMax = 1024 * 1024;
/** sseEventDataLengthMax bounds the data of one event across its data lines. */
export const sseEventDataLengthMax = 4 * 1024 * 1024;
/** errorBodyLengthMax bounds how much of a non-JSON error body is quoted in an error message. */
export const errorBodyLengthMax = 512;

/** apiKeyEnvName and serverUrlEnvName name the environment variables the client options default to. */
export const apiKeyEnvName = 'SVC_API_KEY';
export const serverUrlEnvName = 'SVC_URL';
